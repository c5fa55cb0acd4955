package gitops_test

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/orbitrun/orbit/gitops"
)

// TestUnmergedCommitsAndDeleteBranch: a branch merged into main has no
// commit of its own; one with a commit nothing else reaches has one, and
// none once a tag (or any other ref) holds it. DeleteBranch removes a
// branch at the commit expected, and refuses one that moved or is checked
// out in a work tree.
func TestUnmergedCommitsAndDeleteBranch(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.git("branch", "orbit/merged")
	f.git("switch", "--quiet", "-c", "orbit/unmerged")
	f.write("e.txt", "echo\n")
	f.git("add", "e.txt")
	f.git("commit", "--quiet", "-m", "only here")
	f.git("switch", "--quiet", "main")

	count := func(branch string) int {
		t.Helper()
		n, err := f.repo.UnmergedCommits(f.ctx, branch)
		if err != nil {
			t.Fatalf("UnmergedCommits(%s): %v", branch, err)
		}
		return n
	}
	if n := count("orbit/merged"); n != 0 {
		t.Errorf("merged: %d commits of its own, want 0", n)
	}
	if n := count("orbit/unmerged"); n != 1 {
		t.Errorf("unmerged: %d commits of its own, want 1", n)
	}
	wt0 := filepath.Join(t.TempDir(), "wt0")
	f.git("worktree", "add", "--quiet", wt0, "orbit/unmerged")
	if n := count("orbit/unmerged"); n != 1 {
		t.Errorf("unmerged and checked out: %d commits of its own, want 1", n)
	}
	f.git("worktree", "remove", wt0)
	f.git("tag", "keep", "orbit/unmerged")
	if n := count("orbit/unmerged"); n != 0 {
		t.Errorf("unmerged but tagged: %d commits of its own, want 0", n)
	}
	if _, err := f.repo.UnmergedCommits(f.ctx, "orbit/none"); !errors.Is(err, gitops.ErrBranchNotFound) {
		t.Errorf("a missing branch: %v, want ErrBranchNotFound", err)
	}

	list, err := f.repo.Branches(f.ctx, "orbit/")
	if err != nil || len(list) != 2 || list["orbit/merged"] != f.sha("main") {
		t.Fatalf("Branches(orbit/) = %v, %v", list, err)
	}

	wt := filepath.Join(t.TempDir(), "wt")
	f.git("worktree", "add", "--quiet", wt, "orbit/merged")
	wantErr(t, f.repo.DeleteBranch(f.ctx, "orbit/merged", f.sha("main")), gitops.ErrBranchExists)
	f.git("worktree", "remove", wt)
	wantErr(t, f.repo.DeleteBranch(f.ctx, "orbit/merged", f.sha("HEAD~1")), gitops.ErrBranchMoved)
	if !f.branchExists("orbit/merged") {
		t.Fatal("a refused delete removed the branch")
	}
	if err := f.repo.DeleteBranch(f.ctx, "orbit/merged", f.sha("main")); err != nil {
		t.Fatalf("DeleteBranch: %v", err)
	}
	if f.branchExists("orbit/merged") {
		t.Error("the branch is still there")
	}
	if err := f.repo.DeleteBranch(f.ctx, "orbit/merged", f.sha("main")); err != nil {
		t.Errorf("deleting a branch already gone: %v", err)
	}
}
