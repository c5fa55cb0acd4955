package gitops_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orbitrun/orbit/gitops"
)

func TestOpen(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	top, err := filepath.EvalSymlinks(f.dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{f.dir, filepath.Join(f.dir, "dir")} {
		r, err := gitops.Open(dir, gitops.WithEnv(testEnv()...))
		if err != nil {
			t.Fatalf("Open(%s): %v", dir, err)
		}
		if got, _ := filepath.EvalSymlinks(r.Dir); got != top {
			t.Errorf("Open(%s).Dir = %s, want %s", dir, r.Dir, top)
		}
	}

	bare := t.TempDir()
	cmd := exec.Command("git", "init", "--quiet", "--bare", bare)
	cmd.Env = append(processEnv(), testEnv()...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git init --bare: %v %s", err, out)
	}
	for name, dir := range map[string]string{
		"no repository": t.TempDir(),
		"git dir":       filepath.Join(f.dir, ".git"),
		"bare":          bare,
	} {
		if _, err := gitops.Open(dir, gitops.WithEnv(testEnv()...)); !errors.Is(err, gitops.ErrNotARepo) {
			t.Errorf("Open(%s): %v, want ErrNotARepo", name, err)
		}
	}
	if _, err := gitops.Open(filepath.Join(f.dir, "missing")); err == nil || errors.Is(err, gitops.ErrNotARepo) {
		t.Errorf("Open(missing dir): %v, want a file system error", err)
	}
	if _, err := gitops.Open(filepath.Join(f.dir, "a.txt")); !errors.Is(err, gitops.ErrNotARepo) {
		t.Errorf("Open(a file): %v, want ErrNotARepo", err)
	}
}

// GIT_DIR and friends of the calling process must not redirect git.
func TestOpenIgnoresInheritedGitDir(t *testing.T) {
	f := newFixture(t)
	other := newFixture(t)
	t.Setenv("GIT_DIR", filepath.Join(other.dir, ".git"))
	t.Setenv("GIT_WORK_TREE", other.dir)
	r, err := gitops.Open(f.dir, gitops.WithEnv(testEnv()...))
	if err != nil {
		t.Fatal(err)
	}
	got, err := r.BranchSHA(context.Background(), "main")
	if err != nil {
		t.Fatal(err)
	}
	if got != f.sha("main") {
		t.Errorf("BranchSHA read another repository")
	}
}

func TestQueries(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := f.ctx
	r := f.repo
	first, second := f.sha("main~1"), f.sha("main")

	if b, err := r.CurrentBranch(ctx); err != nil || b != "main" {
		t.Errorf("CurrentBranch = %q, %v", b, err)
	}
	if got, err := r.BranchSHA(ctx, "main"); err != nil || got != second {
		t.Errorf("BranchSHA(main) = %q, %v", got, err)
	}
	if _, err := r.BranchSHA(ctx, "nope"); !errors.Is(err, gitops.ErrBranchNotFound) {
		t.Errorf("BranchSHA(nope) = %v, want ErrBranchNotFound", err)
	}
	// A branch named like a full ref of another must not be found by its
	// short name.
	f.git("branch", "refs/heads/ghost")
	if _, err := r.BranchSHA(ctx, "ghost"); !errors.Is(err, gitops.ErrBranchNotFound) {
		t.Errorf("BranchSHA(ghost) = %v, want ErrBranchNotFound", err)
	}
	if _, err := r.BranchSHA(ctx, "--all"); !errors.Is(err, gitops.ErrInvalidArgument) {
		t.Errorf("BranchSHA(--all) = %v, want ErrInvalidArgument", err)
	}

	for rev, want := range map[string]bool{first: true, second: true, "main": true, strings.Repeat("0", 40): false, "nope": false} {
		if got, err := r.CommitExists(ctx, rev); err != nil || got != want {
			t.Errorf("CommitExists(%s) = %v, %v; want %v", rev, got, err, want)
		}
	}
	tree := f.git("rev-parse", "main^{tree}")
	if got, err := r.CommitExists(ctx, tree); err != nil || got {
		t.Errorf("CommitExists(a tree) = %v, %v", got, err)
	}
	if _, err := r.CommitExists(ctx, "--output=x"); !errors.Is(err, gitops.ErrInvalidArgument) {
		t.Errorf("CommitExists(option) = %v", err)
	}

	for _, tt := range []struct {
		a, d string
		want bool
	}{{first, second, true}, {second, first, false}, {second, second, true}} {
		if got, err := r.IsAncestor(ctx, tt.a, tt.d); err != nil || got != tt.want {
			t.Errorf("IsAncestor(%s, %s) = %v, %v", tt.a, tt.d, got, err)
		}
	}

	if p, err := r.FirstParent(ctx, second); err != nil || p != first {
		t.Errorf("FirstParent(second) = %q, %v", p, err)
	}
	if p, err := r.FirstParent(ctx, first); err != nil || p != "" {
		t.Errorf("FirstParent(root) = %q, %v", p, err)
	}

	f.write("msg", "Subject\n\nBody.\n---\nnot a divider\n\nOrbit-Task: t1\nSigned-off-by: A <a@x>\nOrbit-Task: t2\n")
	f.git("commit", "--quiet", "--allow-empty", "-F", "msg")
	got, err := r.Trailers(ctx, "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got["Orbit-Task"] != "t2" || got["Signed-off-by"] != "A <a@x>" {
		t.Errorf("Trailers = %v", got)
	}
	if got, err := r.Trailers(ctx, first); err != nil || len(got) != 0 {
		t.Errorf("Trailers(no trailers) = %v, %v", got, err)
	}

	if d, err := r.DirtyTracked(ctx); err != nil || len(d) != 0 {
		t.Errorf("DirtyTracked (clean) = %q, %v", d, err)
	}
	f.write("a.txt", "unstaged\n")
	f.write("staged.txt", "staged\n")
	f.git("add", "staged.txt")
	f.remove("b.txt")
	f.write("untracked.txt", "x\n")
	if d, err := r.DirtyTracked(ctx); err != nil || !sameStrings(d, []string{"a.txt", "b.txt", "staged.txt"}) {
		t.Errorf("DirtyTracked = %q, %v", d, err)
	}
	f.git("reset", "--quiet", "--hard")

	f.git("switch", "--quiet", "--detach")
	if _, err := r.CurrentBranch(ctx); !errors.Is(err, gitops.ErrDetachedHead) {
		t.Errorf("CurrentBranch detached = %v", err)
	}
}

func TestChangedPaths(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.write("pre.txt", "there before\n")
	f.write("pre-dir/x.txt", "there before\n")
	s := f.snapshot()

	f.write("c.txt", "committed on scratch\n")
	f.git("commit", "--quiet", "-am", "agent")
	f.write("a.txt", "unstaged\n")
	f.write("staged.txt", "staged\n")
	f.git("add", "staged.txt")
	f.remove("b.txt")
	f.git("mv", "dir/d.txt", "dir/moved.txt")
	f.write("new.txt", "new\n")
	f.write("pre-dir/y.txt", "new in an old directory\n")
	f.write("sp ace/ünï.txt", "odd name\n")
	f.write("out.log", "ignored\n")
	f.write("pre.txt", "changed, but git cannot know\n")

	got, err := f.repo.ChangedPaths(f.ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"a.txt", "b.txt", "c.txt", "dir/d.txt", "dir/moved.txt", "new.txt", "pre-dir/y.txt", "sp ace/ünï.txt", "staged.txt"}
	if !sameStrings(got, want) {
		t.Errorf("ChangedPaths =\n%q\nwant\n%q", got, want)
	}

	if _, err := f.repo.ChangedPaths(f.ctx, &gitops.Snapshot{}); !errors.Is(err, gitops.ErrInvalidArgument) {
		t.Errorf("ChangedPaths(empty snapshot) = %v", err)
	}
}

func TestGitError(t *testing.T) {
	t.Parallel()
	f := newFixture(t, gitops.WithEnv("ORBIT_TEST_SECRET=hunter2"))
	_, err := f.repo.IsAncestor(f.ctx, "no-such-rev", "main")
	var ge *gitops.GitError
	if !errors.As(err, &ge) {
		t.Fatalf("error = %v, want a *GitError", err)
	}
	if ge.ExitCode != 128 || ge.Args[0] != "merge-base" || ge.Stderr == "" {
		t.Errorf("GitError = %+v", ge)
	}
	if strings.Contains(err.Error(), "hunter2") {
		t.Errorf("the error shows an environment value: %v", err)
	}
}

func TestContextCancelled(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := f.repo.CurrentBranch(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("CurrentBranch = %v, want context.Canceled", err)
	}
	s := f.snapshot()
	f.write("a.txt", "edit\n")
	if _, err := f.repo.Rewind(ctx, s, "x"); !errors.Is(err, context.Canceled) {
		t.Errorf("Rewind = %v, want context.Canceled", err)
	}
	// Nothing happened; the work is where it was.
	if f.branch() != s.ScratchBranch || f.read("a.txt") != "edit\n" {
		t.Errorf("touched")
	}
	if _, err := os.Stat(filepath.Join(f.dir, ".git", "index.lock")); err == nil {
		t.Errorf("index.lock left")
	}
}
