package gitops_test

import (
	"os"
	"path/filepath"
	"testing"
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
