package gitops

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// minGit is the oldest git this package is written against
// (--pathspec-from-file for add and rm).
var minGit = [2]int{2, 26}

// openTimeout bounds Open, which takes no context.
const openTimeout = 30 * time.Second

// Repo is a git work tree, driven through the git command line.
//
// A Repo holds no state besides its directory and options, and its methods
// may be called from several goroutines; but the operations that change the
// work tree (CreateSnapshot, Rewind, CommitSuccess) must not run
// concurrently on one work tree: git's own locks would make one of them
// fail half-way. The caller serialises them.
type Repo struct {
	// Dir is the top level of the work tree, as git reports it (absolute,
	// symbolic links resolved). It is read-only: change it and the Repo
	// works on another directory than the one Open checked.
	Dir string

	env []string

	// stateFiles are where git keeps the files of inProgress, in that
	// order, and excludeFile is the repository's info/exclude: located
	// once by Open, as absolute paths.
	stateFiles  []string
	excludeFile string

	// crash, when set (by tests only), is called at the named points of
	// Rewind and CommitSuccess; a non-nil return ends the operation there
	// as a crash would.
	crash func(point string) error
}

// Option configures a Repo.
type Option func(*Repo)

// WithEnv adds environment variables ("KEY=value") to every git command of
// the Repo, after the process environment (later entries win). Tests use it
// to isolate git from the machine's configuration
// (GIT_CONFIG_GLOBAL, GIT_CONFIG_NOSYSTEM, identities).
func WithEnv(kv ...string) Option {
	return func(r *Repo) { r.env = append(r.env, kv...) }
}

// Open returns the work tree that dir is in. Repo.Dir is its top level.
//
// It fails with ErrNotARepo when dir is not inside a work tree, and when the
// installed git is older than 2.26.
func Open(dir string, opts ...Option) (*Repo, error) {
	r := &Repo{}
	for _, o := range opts {
		o(r)
	}
	ctx, cancel := context.WithTimeout(context.Background(), openTimeout)
	defer cancel()

	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", dir, err)
	}
	if fi, err := os.Stat(abs); err != nil {
		return nil, fmt.Errorf("opening %s: %w", dir, err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("opening %s: %w: not a directory", dir, ErrNotARepo)
	}

	if err := checkVersion(ctx, abs, r.env); err != nil {
		return nil, err
	}

	args := []string{"rev-parse", "--is-inside-work-tree", "--show-toplevel"}
	for _, f := range append(inProgress[:len(inProgress):len(inProgress)], "info/exclude") {
		args = append(args, "--git-path", f)
	}
	out, err := runGit(ctx, abs, r.env, call{args: args, readOnly: true})
	if err != nil {
		if code := exitCode(err); code > 0 {
			return nil, fmt.Errorf("opening %s: %w: %w", dir, ErrNotARepo, err)
		}
		return nil, fmt.Errorf("opening %s: %w", dir, err)
	}
	ls := lines(out)
	if len(ls) != 3+len(inProgress) || ls[0] != "true" || !filepath.IsAbs(ls[1]) {
		return nil, fmt.Errorf("opening %s: %w", dir, ErrNotARepo)
	}
	r.Dir = filepath.Clean(ls[1])
	// --git-path answers relative to the directory git ran in, as the
	// system names it (symbolic links resolved).
	cwd, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", dir, err)
	}
	for _, p := range ls[2:] {
		if !filepath.IsAbs(p) {
			p = filepath.Join(cwd, p)
		}
		r.stateFiles = append(r.stateFiles, filepath.Clean(p))
	}
	r.stateFiles, r.excludeFile = r.stateFiles[:len(inProgress)], r.stateFiles[len(inProgress)]
	return r, nil
}

// checkVersion fails unless git is at least minGit.
func checkVersion(ctx context.Context, dir string, env []string) error {
	out, err := runGit(ctx, dir, env, call{args: []string{"version"}, readOnly: true})
	if err != nil {
		return fmt.Errorf("running git: %w", err)
	}
	return supported(strings.TrimSpace(string(out)))
}

// supported fails unless v, what git version printed, is at least minGit.
func supported(v string) error {
	// "git version 2.39.5", "git version 2.39.3 (Apple Git-146)",
	// "git version 2.45.1.windows.1".
	fields := strings.Fields(strings.TrimPrefix(v, "git version "))
	if len(fields) > 0 {
		parts := strings.SplitN(fields[0], ".", 3)
		if len(parts) >= 2 {
			major, err1 := strconv.Atoi(parts[0])
			minor, err2 := strconv.Atoi(parts[1])
			if err1 == nil && err2 == nil {
				if major > minGit[0] || major == minGit[0] && minor >= minGit[1] {
					return nil
				}
				return fmt.Errorf("%s is too old: git %d.%d or later is required", v, minGit[0], minGit[1])
			}
		}
	}
	return fmt.Errorf("cannot read the git version from %q", v)
}

// checkpoint lets a test stop an operation at a named point, as a crash
// would. It does nothing in production.
func (r *Repo) checkpoint(point string) error {
	if r.crash == nil {
		return nil
	}
	return r.crash(point)
}
