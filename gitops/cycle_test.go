package gitops_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/orbitrun/orbit/gitops"
)

// attemptInPlace makes fixture.attempt's changes without the agent's
// commit: the common attempt, which leaves its work in the work tree and
// the index for the capture.
func (f *fixture) attemptInPlace() {
	f.t.Helper()
	f.write("c.txt", "charlie, edited and committed\n")
	f.write("a.txt", "alpha, edited\n")
	f.git("add", "a.txt")
	f.remove("b.txt")
	f.write("new.txt", "new file\n")
	f.write("dir/new2.txt", "another new file\n")
}

// An attempt that made no commit of its own lands, and rewinds, as one
// that did; a crash at any point of either is resumed.
func TestAttemptInPlace(t *testing.T) {
	t.Parallel()
	t.Run("commit", func(t *testing.T) {
		t.Parallel()
		f, s := startAttemptInPlace(t)
		sha, noChange, err := f.repo.CommitSuccess(f.ctx, s, "done", testTrailers)
		if err != nil || noChange {
			t.Fatalf("CommitSuccess = %s, %v, %v", sha, noChange, err)
		}
		checkCommitted(t, f, s, sha)
		if reflog := f.git("reflog", "-1", "--format=%gs", "HEAD@{1}"); reflog != "checkout: moving from "+s.ScratchBranch+" to main" {
			t.Errorf("HEAD's reflog says %q, want the move to main", reflog)
		}
	})
	t.Run("rewind", func(t *testing.T) {
		t.Parallel()
		f, s := startAttemptInPlace(t)
		scratchSHA, err := f.repo.Rewind(f.ctx, s, "failed")
		if err != nil {
			t.Fatal(err)
		}
		checkRewound(t, f, s, scratchSHA)
		if n := f.git("rev-list", "--count", s.SnapshotRef+".."+s.ScratchBranch); n != "1" {
			t.Errorf("%s commits on the scratch branch, want one capture", n)
		}
	})
	for _, point := range []string{"captured", "switched", "reset", "merged", "committed"} {
		t.Run("commit resumed after "+point, func(t *testing.T) {
			t.Parallel()
			f, s := startAttemptInPlace(t)
			f.crashCommit(s, point, testTrailers)
			sha, noChange, err := f.open().CommitSuccess(f.ctx, s, "done", testTrailers)
			if err != nil || noChange {
				t.Fatalf("resumed CommitSuccess = %s, %v, %v", sha, noChange, err)
			}
			checkCommitted(t, f, s, sha)
		})
		t.Run("commit, then rewind after "+point, func(t *testing.T) {
			t.Parallel()
			f, s := startAttemptInPlace(t)
			f.crashCommit(s, point, testTrailers)
			if point == "committed" {
				return // landed: there is nothing left to rewind
			}
			scratchSHA, err := f.open().Rewind(f.ctx, s, "interrupted")
			if err != nil {
				t.Fatal(err)
			}
			checkRewound(t, f, s, scratchSHA)
		})
	}
	for _, point := range []string{"captured", "switched", "reset"} {
		t.Run("rewind resumed after "+point, func(t *testing.T) {
			t.Parallel()
			f, s := startAttemptInPlace(t)
			f.crashRewind(s, point)
			scratchSHA, err := f.open().Rewind(f.ctx, s, "failed")
			if err != nil {
				t.Fatalf("resumed Rewind: %v", err)
			}
			checkRewound(t, f, s, scratchSHA)
		})
	}
}

// The task branch moved while an attempt that made no commit worked: the
// squash is refused as in the general case, the task branch untouched.
func TestAttemptInPlaceTaskBranchMoved(t *testing.T) {
	t.Parallel()
	f, s := startAttemptInPlace(t)
	foreign := f.foreignCommit()
	_, _, err := f.repo.CommitSuccess(f.ctx, s, "done", nil)
	wantErr(t, err, gitops.ErrTaskBranchMoved)
	if f.branch() != "main" || f.sha("main") != foreign {
		t.Errorf("on %s, main at %s, want main at the foreign commit %s", f.branch(), f.sha("main"), foreign)
	}
	if got := f.file(s.ScratchBranch, "new.txt"); got != "new file\n" {
		t.Errorf("the scratch branch does not hold the attempt: new.txt = %q", got)
	}
}

// A rejected squash commit of an attempt that made no commit leaves the
// task branch at the snapshot, clean, and the work on the scratch branch.
func TestAttemptInPlaceHookRefuses(t *testing.T) {
	t.Parallel()
	f, s := startAttemptInPlace(t)
	f.hook("pre-commit", "exit 1")
	if _, _, err := f.repo.CommitSuccess(f.ctx, s, "done", nil); err == nil {
		t.Fatal("CommitSuccess succeeded with a refusing pre-commit hook")
	}
	if f.branch() != "main" || f.sha("main") != s.SnapshotRef || f.status() != "?? notes.txt" {
		t.Errorf("on %s at %s, status %q: want main at the snapshot, clean", f.branch(), f.sha("main"), f.status())
	}
	if got := f.file(s.ScratchBranch, "new.txt"); got != "new file\n" {
		t.Errorf("the scratch branch does not hold the attempt: new.txt = %q", got)
	}
}

// gitCounter puts a git on PATH that logs each command line of the Repos
// given its environment, then runs the real git.
type gitCounter struct {
	log string
}

func newGitCounter(t *testing.T) *gitCounter {
	t.Helper()
	real, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	script := "#!/bin/sh\n" +
		`if [ -n "$ORBIT_GIT_COUNT_LOG" ]; then printf '%s\n' "$*" >> "$ORBIT_GIT_COUNT_LOG"; fi` + "\n" +
		`exec '` + real + `' "$@"` + "\n"
	if err := os.WriteFile(filepath.Join(dir, "git"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return &gitCounter{log: filepath.Join(dir, "log")}
}

// option makes a Repo's git commands count.
func (c *gitCounter) option() gitops.Option {
	return gitops.WithEnv("ORBIT_GIT_COUNT_LOG=" + c.log)
}

// take returns the git subcommands run since the last take, and how many
// of each.
func (c *gitCounter) take(t *testing.T) (int, string) {
	t.Helper()
	data, err := os.ReadFile(c.log)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	_ = os.Remove(c.log)
	counts := map[string]int{}
	n := 0
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if l == "" {
			continue
		}
		n++
		counts[subcommand(strings.Fields(l))]++
	}
	var parts []string
	for k, v := range counts {
		parts = append(parts, fmt.Sprintf("%d %s", v, k))
	}
	sort.Strings(parts)
	return n, strings.Join(parts, ", ")
}

// subcommand is the first argument after git's global options.
func subcommand(args []string) string {
	for i := 0; i < len(args); i++ {
		switch {
		case args[i] == "-c":
			i++
		case !strings.HasPrefix(args[i], "-"):
			return args[i]
		}
	}
	return "?"
}

// maxGitPerCycle is the most git processes a snapshot and its commit, or a
// snapshot and its rewind, may run.
const maxGitPerCycle = 12

// An attempt's cycle runs at most maxGitPerCycle git processes: a snapshot
// with an untracked and an ignored file about, an attempt that edits,
// stages, deletes and creates files, then its squash commit, or its
// rewind, or (nothing changed) its empty landing. Not parallel: it sets
// PATH.
func TestAttemptCycleGitProcesses(t *testing.T) {
	c := newGitCounter(t)
	for _, tt := range []struct {
		name   string
		change bool
		finish func(f *fixture, r *gitops.Repo, s *gitops.Snapshot) error
	}{
		{"commit", true, func(f *fixture, r *gitops.Repo, s *gitops.Snapshot) error {
			_, _, err := r.CommitSuccess(f.ctx, s, "done", testTrailers)
			return err
		}},
		{"rewind", true, func(f *fixture, r *gitops.Repo, s *gitops.Snapshot) error {
			_, err := r.Rewind(f.ctx, s, "failed")
			return err
		}},
		{"commit of nothing", false, func(f *fixture, r *gitops.Repo, s *gitops.Snapshot) error {
			_, noChange, err := r.CommitSuccess(f.ctx, s, "done", testTrailers)
			if err == nil && !noChange {
				err = errors.New("a commit of no change")
			}
			return err
		}},
		{"rewind of nothing", false, func(f *fixture, r *gitops.Repo, s *gitops.Snapshot) error {
			_, err := r.Rewind(f.ctx, s, "failed")
			return err
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.write("notes.txt", "my notes\n")
			f.write("debug.log", "ignored\n")
			// The identity from the repository's configuration, as a user
			// has it, not from the environment: one more process.
			f.git("config", "user.name", "Config User")
			f.git("config", "user.email", "config@example.invalid")
			r := f.open(c.option(), gitops.WithEnv("GIT_AUTHOR_NAME=", "GIT_AUTHOR_EMAIL=", "GIT_COMMITTER_NAME=", "GIT_COMMITTER_EMAIL="))
			c.take(t)
			s, err := r.CreateSnapshot(f.ctx, "t1", 1, "main")
			if err != nil {
				t.Fatal(err)
			}
			if tt.change {
				f.attemptInPlace()
				f.write("build.log", "the attempt's ignored output\n")
			}
			if err := tt.finish(f, r, s); err != nil {
				t.Fatal(err)
			}
			n, per := c.take(t)
			t.Logf("%d git processes: %s", n, per)
			if n > maxGitPerCycle {
				t.Errorf("%d git processes (%s), want at most %d", n, per, maxGitPerCycle)
			}
			if f.branch() != "main" || f.status() != "?? notes.txt" {
				t.Errorf("on %s, status %q", f.branch(), f.status())
			}
			if tt.name == "commit" {
				if who := f.git("log", "-1", "--format=%an <%ae>, %cn <%ce>", "main"); who != "Config User <config@example.invalid>, Config User <config@example.invalid>" {
					t.Errorf("the squash commit is by %s, want the configured identity", who)
				}
			}
		})
	}
}

// When the environment names the whole identity, it is the commits'
// whatever the configuration says (and the configuration is not read).
func TestCommitIdentityFromEnvironment(t *testing.T) {
	t.Parallel()
	f, s := startAttemptInPlace(t)
	f.git("config", "user.name", "Jane Doe")
	f.git("config", "user.email", "jane@example.invalid")
	sha, _, err := f.repo.CommitSuccess(f.ctx, s, "done", nil)
	if err != nil {
		t.Fatal(err)
	}
	const want = "Test Author <author@example.invalid> / Test Committer <committer@example.invalid>"
	if who := f.git("log", "-1", "--format=%an <%ae> / %cn <%ce>", sha); who != want {
		t.Errorf("identity %q, want %q", who, want)
	}
}

// An attempt that made no commit, but staged a file that was untracked at
// the snapshot, force-added an ignored one and un-ignored *.log: none of
// them reaches a commit, and all stay in the work tree as they are.
func TestAttemptInPlaceLeavesOut(t *testing.T) {
	t.Parallel()
	for _, end := range []string{"commit", "rewind"} {
		t.Run(end, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			f.write("notes.txt", "my notes\n")
			f.write("debug.log", "ignored\n")
			s := f.snapshot()
			f.git("add", "notes.txt")
			f.git("add", "--force", "debug.log")
			f.write(".gitignore", "*.tmp\n")
			f.write("other.log", "ignored at the snapshot\n")
			f.write("new.txt", "new file\n")
			var head string
			if end == "commit" {
				sha, noChange, err := f.repo.CommitSuccess(f.ctx, s, "done", nil)
				if err != nil || noChange {
					t.Fatalf("CommitSuccess = %s, %v, %v", sha, noChange, err)
				}
				head = sha
			} else {
				sha, err := f.repo.Rewind(f.ctx, s, "failed")
				if err != nil {
					t.Fatal(err)
				}
				head = sha
			}
			if got := f.file(head, "new.txt"); got != "new file\n" {
				t.Errorf("new.txt in %s = %q", end, got)
			}
			if got := f.file(head, ".gitignore"); got != "*.tmp\n" {
				t.Errorf(".gitignore in %s = %q", end, got)
			}
			for _, p := range []string{"notes.txt", "debug.log", "other.log"} {
				if f.everCommitted(p) {
					t.Errorf("%s is in a commit", p)
				}
			}
			for p, want := range map[string]string{"notes.txt": "my notes\n", "debug.log": "ignored\n", "other.log": "ignored at the snapshot\n"} {
				if got := f.read(p); got != want {
					t.Errorf("%s = %q, want %q", p, got, want)
				}
			}
			if f.branch() != "main" {
				t.Errorf("on %s", f.branch())
			}
		})
	}
}
