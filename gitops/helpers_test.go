package gitops_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/orbitrun/orbit/gitops"
)

// testEnv isolates git from the machine: no global or system
// configuration, a fixed identity.
func testEnv() []string {
	return []string{
		"GIT_CONFIG_GLOBAL=" + os.DevNull,
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=Test Author",
		"GIT_AUTHOR_EMAIL=author@example.invalid",
		"GIT_COMMITTER_NAME=Test Committer",
		"GIT_COMMITTER_EMAIL=committer@example.invalid",
		"GIT_TERMINAL_PROMPT=0",
		"LC_ALL=C",
	}
}

// processEnv is the test process's environment without git's variables,
// so that nothing the machine sets can leak into a test repository.
func processEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GIT_") && !strings.HasPrefix(kv, "EMAIL=") {
			env = append(env, kv)
		}
	}
	return env
}

// fixture is a real repository in a temp dir: branch main with a.txt,
// b.txt, c.txt, dir/d.txt and a .gitignore ignoring *.log, in two commits.
type fixture struct {
	t    *testing.T
	dir  string
	repo *gitops.Repo
	ctx  context.Context
}

func newFixture(t *testing.T, opts ...gitops.Option) *fixture {
	t.Helper()
	dir := t.TempDir()
	f := &fixture{t: t, dir: dir, ctx: context.Background()}
	f.git("init", "--quiet", "--initial-branch=main")
	f.write(".gitignore", "*.log\n")
	f.write("a.txt", "alpha\n")
	f.write("b.txt", "bravo\n")
	f.git("add", "--all")
	f.git("commit", "--quiet", "-m", "first")
	f.write("c.txt", "charlie\n")
	f.write("dir/d.txt", "delta\n")
	f.git("add", "--all")
	f.git("commit", "--quiet", "-m", "second")
	f.repo = f.open(opts...)
	f.dir = f.repo.Dir
	// Whatever a test did, the repository must be sound and no git lock
	// may be left behind.
	t.Cleanup(func() {
		if out, code := f.gitCode("fsck", "--no-progress", "--no-dangling"); code != 0 {
			t.Errorf("git fsck: %s", out)
		}
		if _, err := os.Stat(filepath.Join(f.dir, ".git", "index.lock")); err == nil {
			t.Errorf("index.lock left behind")
		}
	})
	return f
}

// open returns a new Repo of the fixture, as a restarted process would.
func (f *fixture) open(opts ...gitops.Option) *gitops.Repo {
	f.t.Helper()
	r, err := gitops.Open(f.dir, append([]gitops.Option{gitops.WithEnv(testEnv()...)}, opts...)...)
	if err != nil {
		f.t.Fatalf("Open: %v", err)
	}
	return r
}

// gitCode runs git in the fixture and returns its combined output and
// exit code.
func (f *fixture) gitCode(args ...string) (string, int) {
	f.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = f.dir
	cmd.Env = append(processEnv(), testEnv()...)
	out, err := cmd.CombinedOutput()
	var exitErr *exec.ExitError
	switch {
	case errors.As(err, &exitErr):
		return string(out), exitErr.ExitCode()
	case err != nil:
		f.t.Fatalf("git %v: %v", args, err)
	}
	return string(out), 0
}

// git runs git in the fixture, fails the test if it fails, and returns its
// trimmed output.
func (f *fixture) git(args ...string) string {
	f.t.Helper()
	out, code := f.gitCode(args...)
	if code != 0 {
		f.t.Fatalf("git %v: exit %d: %s", args, code, out)
	}
	return strings.TrimSpace(out)
}

func (f *fixture) write(p, content string) {
	f.t.Helper()
	path := filepath.Join(f.dir, filepath.FromSlash(p))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) remove(p string) {
	f.t.Helper()
	if err := os.Remove(filepath.Join(f.dir, filepath.FromSlash(p))); err != nil {
		f.t.Fatal(err)
	}
}

// read returns a file's content, or "<missing>".
func (f *fixture) read(p string) string {
	f.t.Helper()
	data, err := os.ReadFile(filepath.Join(f.dir, filepath.FromSlash(p)))
	if errors.Is(err, os.ErrNotExist) {
		return "<missing>"
	}
	if err != nil {
		f.t.Fatal(err)
	}
	return string(data)
}

func (f *fixture) sha(rev string) string {
	f.t.Helper()
	return f.git("rev-parse", "--verify", rev+"^{commit}")
}

func (f *fixture) branch() string {
	f.t.Helper()
	return f.git("symbolic-ref", "--short", "HEAD")
}

func (f *fixture) branchExists(b string) bool {
	f.t.Helper()
	_, code := f.gitCode("show-ref", "--verify", "--quiet", "refs/heads/"+b)
	return code == 0
}

// status is git status --porcelain with every untracked file, one entry a
// line (ignored files are not shown).
func (f *fixture) status() string {
	f.t.Helper()
	return f.git("status", "--porcelain=v1", "--untracked-files=all")
}

// file returns a file's content in a commit, or "<missing>".
func (f *fixture) file(rev, p string) string {
	f.t.Helper()
	out, code := f.gitCode("cat-file", "-p", rev+":"+p)
	if code != 0 {
		return "<missing>"
	}
	return out
}

// everCommitted reports whether any commit of any ref, or of the reflogs,
// ever held path p.
func (f *fixture) everCommitted(p string) bool {
	f.t.Helper()
	out := f.git("log", "--all", "--reflog", "--name-only", "--format=")
	for _, l := range strings.Split(out, "\n") {
		if l == p {
			return true
		}
	}
	return false
}

// snapshot takes a snapshot of task t1, day 1, on main.
func (f *fixture) snapshot() *gitops.Snapshot {
	f.t.Helper()
	s, err := f.repo.CreateSnapshot(f.ctx, "t1", 1, "main")
	if err != nil {
		f.t.Fatalf("CreateSnapshot: %v", err)
	}
	return s
}

// attempt makes the changes of a typical attempt: modifies a.txt, deletes
// b.txt, creates new.txt and dir/new2.txt, stages a.txt, and commits a
// change to c.txt on the scratch branch, as an agent might.
func (f *fixture) attempt() {
	f.t.Helper()
	f.write("c.txt", "charlie, edited and committed\n")
	f.git("commit", "--quiet", "-am", "agent commit")
	f.write("a.txt", "alpha, edited\n")
	f.git("add", "a.txt")
	f.remove("b.txt")
	f.write("new.txt", "new file\n")
	f.write("dir/new2.txt", "another new file\n")
}

// foreignCommit commits a change to c.txt on main from another work tree,
// as someone working on the task branch during the attempt would, and
// returns the commit.
func (f *fixture) foreignCommit() string {
	f.t.Helper()
	wt := filepath.Join(f.t.TempDir(), "wt")
	f.git("worktree", "add", "--quiet", wt, "main")
	cmd := exec.Command("sh", "-c", `printf 'charlie, foreign\n' > c.txt && git commit --quiet -am foreign`)
	cmd.Dir = wt
	cmd.Env = append(processEnv(), testEnv()...)
	if out, err := cmd.CombinedOutput(); err != nil {
		f.t.Fatalf("foreign commit: %v: %s", err, out)
	}
	f.git("worktree", "remove", wt)
	return f.sha("main")
}

// hook installs an executable hook script.
func (f *fixture) hook(name, script string) {
	f.t.Helper()
	f.write(".git/hooks/"+name, "#!/bin/sh\n"+script+"\n")
	if err := os.Chmod(filepath.Join(f.dir, ".git", "hooks", name), 0o755); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) branches() []string {
	f.t.Helper()
	out := f.git("for-each-ref", "--format=%(refname:short)", "refs/heads/")
	bs := strings.Fields(out)
	sort.Strings(bs)
	return bs
}

func sameStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// wantErr fails unless err matches target, and returns its message.
func wantErr(t *testing.T, err, target error) string {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("error = %v, want %v", err, target)
	}
	return err.Error()
}

func mustContain(t *testing.T, s string, subs ...string) {
	t.Helper()
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			t.Errorf("%q does not contain %q", s, sub)
		}
	}
}
