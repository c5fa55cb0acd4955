package gitops

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

const (
	// stderrCap bounds the stderr kept in a GitError (hook output can be
	// long; the start says what failed).
	stderrCap = 8 << 10

	// workTreeTimeout bounds a command that rewrites the work tree or the
	// index once it has started; see call.uninterruptible.
	workTreeTimeout = 15 * time.Minute

	// killDelay is how long a cancelled git gets to exit after SIGTERM
	// before it is killed.
	killDelay = 10 * time.Second
)

// inheritedDrop are variables of the calling process that would point git
// at another repository, index or object store, or change how pathspecs
// are read. Repo.Dir alone decides which repository is used.
var inheritedDrop = map[string]bool{
	"GIT_DIR":                          true,
	"GIT_WORK_TREE":                    true,
	"GIT_INDEX_FILE":                   true,
	"GIT_OBJECT_DIRECTORY":             true,
	"GIT_ALTERNATE_OBJECT_DIRECTORIES": true,
	"GIT_COMMON_DIR":                   true,
	"GIT_NAMESPACE":                    true,
	"GIT_PREFIX":                       true,
	"GIT_QUARANTINE_PATH":              true,
	"GIT_CEILING_DIRECTORIES":          true,
	"GIT_DISCOVERY_ACROSS_FILESYSTEM":  true,
	"GIT_LITERAL_PATHSPECS":            true,
	"GIT_GLOB_PATHSPECS":               true,
	"GIT_NOGLOB_PATHSPECS":             true,
	"GIT_ICASE_PATHSPECS":              true,
	"GIT_EXTERNAL_DIFF":                true,
	"GIT_DIFF_OPTS":                    true,
}

// call is one git command.
type call struct {
	args  []string
	stdin []byte
	env   []string // added after the Repo's environment

	// hooks runs the repository's hooks. Every other command runs with
	// core.hooksPath pointing nowhere: Orbit's bookkeeping (switches,
	// resets, capture commits) must not run, or be failed by, a user's
	// post-checkout or reference-transaction hook.
	hooks bool

	// readOnly passes --no-optional-locks, so that a query never takes
	// the index lock from under a user's concurrent git.
	readOnly bool

	// uninterruptible commands rewrite the work tree or the index. Killed
	// half-way they would leave a work tree that is neither the old state
	// nor the new, so once started they run to completion (bounded by
	// workTreeTimeout) even if ctx is cancelled; ctx is checked before.
	uninterruptible bool
}

// run runs git in the top level of the work tree and returns its stdout.
// A non-zero exit is a *GitError. A call that runs the repository's hooks
// is refused (ErrHooksChanged) when they live in the work tree and differ
// there from HEAD.
func (r *Repo) run(ctx context.Context, c call) ([]byte, error) {
	if c.hooks {
		if err := r.checkHooks(ctx); err != nil {
			return nil, err
		}
	}
	return runGit(ctx, r.Dir, r.env, c)
}

// checkHooks returns ErrHooksChanged when the hooks git would run (after
// core.hooksPath) are in the work tree and a file there is added, changed
// or removed against HEAD, staged or not. Hooks in the git directory (the
// default) or outside the work tree are the user's: an agent cannot write
// them (its sandbox mounts the git directory read-only).
func (r *Repo) checkHooks(ctx context.Context) error {
	out, err := runGit(ctx, r.Dir, r.env, call{args: []string{"rev-parse", "--path-format=absolute", "--git-path", "hooks"}, hooks: true, readOnly: true})
	if err != nil {
		return fmt.Errorf("finding the repository's hooks: %w", err)
	}
	top, err := filepath.EvalSymlinks(r.Dir)
	if err != nil {
		return err
	}
	hooks := strings.TrimSpace(string(out))
	if resolved, err := filepath.EvalSymlinks(hooks); err == nil {
		hooks = resolved
	}
	rel, err := filepath.Rel(top, hooks)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return nil
	}
	if rel == "." || rel == ".git" || strings.HasPrefix(rel, ".git"+string(filepath.Separator)) {
		return nil
	}
	out, err = runGit(ctx, r.Dir, r.env, call{args: []string{"status", "--porcelain", "--untracked-files=all", "--", rel}, readOnly: true})
	if err != nil {
		return fmt.Errorf("looking for changes to the hooks in %s: %w", rel, err)
	}
	if changed := lines(out); len(changed) > 0 {
		return fmt.Errorf("%w: core.hooksPath is %s, in the work tree, and the change touches it (%s); Orbit does not run hooks the change it commits wrote: commit it yourself after reviewing them", ErrHooksChanged, rel, strings.TrimSpace(changed[0]))
	}
	return nil
}

func runGit(ctx context.Context, dir string, extraEnv []string, c call) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, &GitError{Args: c.args, ExitCode: -1, Err: err}
	}
	if c.uninterruptible {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), workTreeTimeout)
		defer cancel()
	}

	global := []string{
		"--no-pager",
		"-c", "core.quotePath=false",
		"-c", "core.pager=cat",
		"-c", "color.ui=false",
		"-c", "advice.detachedHead=false",
		// A command in core.fsmonitor is run by any status, add or
		// commit, and .git/config is the workspace's, which an agent
		// may have written: Orbit's git asks no monitor.
		"-c", "core.fsmonitor=false",
	}
	if !c.hooks {
		global = append(global, "-c", "core.hooksPath="+os.DevNull)
	}
	if c.readOnly {
		global = append(global, "--no-optional-locks")
	}

	cmd := exec.CommandContext(ctx, "git", append(global, c.args...)...)
	cmd.Dir = dir
	cmd.Env = gitEnv(extraEnv, c.env)
	// SIGTERM lets git remove its lock files (index.lock, ref locks) on the
	// way out; a SIGKILL would leave them behind and block every later git.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	// The same when the engine dies, killed or not: git must not run on as
	// an orphan beside the next engine's work on the same repository.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	cmd.WaitDelay = killDelay
	if c.stdin != nil {
		cmd.Stdin = bytes.NewReader(c.stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr

	err := cmd.Run()
	if err == nil {
		return stdout.Bytes(), nil
	}
	ge := &GitError{Args: c.args, ExitCode: -1, Stderr: capStderr(stderr.String())}
	var exitErr *exec.ExitError
	switch {
	case ctx.Err() != nil:
		ge.Err = ctx.Err()
	case errors.As(err, &exitErr) && exitErr.ExitCode() >= 0:
		ge.ExitCode = exitErr.ExitCode()
	default:
		ge.Err = err
	}
	return stdout.Bytes(), ge
}

// gitEnv is the process environment without the variables git must not
// inherit, then the fixed settings, then the Repo's and the call's extras
// (later entries win).
func gitEnv(extra ...[]string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if !inheritedDrop[k] {
			env = append(env, kv)
		}
	}
	env = append(env,
		"GIT_TERMINAL_PROMPT=0",
		"GIT_PAGER=cat",
		"GIT_EDITOR=:",
		"LC_ALL=C",
		"LANGUAGE=C",
	)
	for _, e := range extra {
		env = append(env, e...)
	}
	return env
}

// lookupEnv returns the value the last entry for key in env gives it.
func lookupEnv(env []string, key string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			v = val
		}
	}
	return v
}

func capStderr(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > stderrCap {
		s = strings.ToValidUTF8(s[:stderrCap], "") + " […]"
	}
	return s
}

// lines splits newline-terminated output into its non-empty lines.
func lines(out []byte) []string {
	var res []string
	for _, l := range strings.Split(string(out), "\n") {
		if l != "" {
			res = append(res, l)
		}
	}
	return res
}

// nulFields splits NUL-terminated output into its fields.
func nulFields(out []byte) []string {
	var res []string
	for _, f := range strings.Split(string(out), "\x00") {
		if f != "" {
			res = append(res, f)
		}
	}
	return res
}
