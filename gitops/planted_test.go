package gitops_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orbitrun/orbit/gitops"
)

// TestAPlantedFSMonitorNeverRuns: an agent that can write the workspace's
// .git/config sets core.fsmonitor to a program of its own, which a plain
// `git status` runs. Orbit's git calls — the snapshot, the queries of the
// verifier and the capture, the commit — never run it.
func TestAPlantedFSMonitorNeverRuns(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.write("notes.txt", "my notes\n")
	marker := filepath.Join(t.TempDir(), "ran")
	monitor := filepath.Join(t.TempDir(), "monitor")
	if err := os.WriteFile(monitor, []byte("#!/bin/sh\necho \"$@\" >> '"+marker+"'\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	f.git("config", "core.fsmonitor", monitor)
	// Planted: a plain git runs it.
	f.status()
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("git status did not run the planted fsmonitor, so this test shows nothing: %v", err)
	}
	if err := os.Remove(marker); err != nil {
		t.Fatal(err)
	}

	s := f.snapshot()
	f.write("a.txt", "alpha, edited\n")
	f.write("new.txt", "new file\n")
	if _, err := f.repo.DirtyTracked(f.ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := f.repo.ChangedPaths(f.ctx, s); err != nil {
		t.Fatal(err)
	}
	sha, noChange, err := f.repo.CommitSuccess(f.ctx, s, "Edit a, add new", testTrailers)
	if err != nil || noChange {
		t.Fatalf("CommitSuccess = %s, %v, %v", sha, noChange, err)
	}
	if ran, err := os.ReadFile(marker); err == nil {
		t.Errorf("Orbit's git ran the planted fsmonitor: %q", ran)
	}
}

// TestHooksTheChangeWroteNeverRun: a repository that keeps its hooks in
// the work tree (core.hooksPath = .husky) runs them on Orbit's success
// commit; a change that edits one — an agent's, which its sandbox let
// write the work tree but not the git directory — is not committed, and
// the hook it wrote never runs. The same hooks, unchanged, do run.
func TestHooksTheChangeWroteNeverRun(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ran := filepath.Join(t.TempDir(), "ran")
	f.write(".husky/pre-commit", "#!/bin/sh\necho reviewed >> '"+ran+"'\n")
	if err := os.Chmod(filepath.Join(f.dir, ".husky", "pre-commit"), 0o755); err != nil {
		t.Fatal(err)
	}
	f.git("add", ".husky")
	f.git("commit", "-q", "--no-verify", "-m", "hooks")
	f.git("config", "core.hooksPath", ".husky")

	s := f.snapshot()
	f.write("a.txt", "alpha, edited\n")
	if _, _, err := f.repo.CommitSuccess(f.ctx, s, "Edit a", testTrailers); err != nil {
		t.Fatalf("CommitSuccess with the user's own hooks: %v", err)
	}
	if got, _ := os.ReadFile(ran); string(got) != "reviewed\n" {
		t.Fatalf("the repository's unchanged hook ran %q times, want once", got)
	}

	s = f.snapshot()
	f.write(".husky/pre-commit", "#!/bin/sh\necho planted >> '"+ran+"'\n")
	f.write("b.txt", "beta\n")
	_, _, err := f.repo.CommitSuccess(f.ctx, s, "Edit the hook", testTrailers)
	if !errors.Is(err, gitops.ErrHooksChanged) {
		t.Fatalf("CommitSuccess of a change to its own hooks = %v, want ErrHooksChanged", err)
	}
	if !strings.Contains(err.Error(), ".husky") {
		t.Errorf("the error does not name the hooks' directory: %v", err)
	}
	if got, _ := os.ReadFile(ran); strings.Contains(string(got), "planted") {
		t.Errorf("Orbit's commit ran the hook the change wrote: %q", got)
	}
	if f.sha(s.TaskBranch) != s.SnapshotRef {
		t.Errorf("the task branch moved: the change was committed")
	}
}
