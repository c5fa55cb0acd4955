package gitops_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/orbitrun/orbit/gitops"
)

// checkRewound checks the state after a successful Rewind of
// fixture.attempt's changes, notes.txt being untracked at the snapshot.
func checkRewound(t *testing.T, f *fixture, s *gitops.Snapshot, scratchSHA string) {
	t.Helper()
	if b := f.branch(); b != "main" {
		t.Errorf("HEAD on %s, want main", b)
	}
	if got := f.sha("main"); got != s.SnapshotRef {
		t.Errorf("main at %s, want the snapshot %s", got, s.SnapshotRef)
	}
	if st := f.status(); st != "?? notes.txt" {
		t.Errorf("status:\n%s\nwant only the pre-existing untracked file", st)
	}
	for p, want := range map[string]string{
		"a.txt": "alpha\n", "b.txt": "bravo\n", "c.txt": "charlie\n",
		"new.txt": "<missing>", "dir/new2.txt": "<missing>",
		"notes.txt": "my notes\n", "debug.log": "ignored\n",
	} {
		if got := f.read(p); got != want {
			t.Errorf("work tree %s = %q, want %q", p, got, want)
		}
	}
	// The scratch branch keeps the attempt.
	if !f.branchExists(s.ScratchBranch) {
		t.Fatalf("scratch branch %s deleted", s.ScratchBranch)
	}
	if got := f.sha(s.ScratchBranch); got != scratchSHA {
		t.Errorf("scratch branch at %s, Rewind returned %s", got, scratchSHA)
	}
	for p, want := range map[string]string{
		"a.txt": "alpha, edited\n", "b.txt": "<missing>", "c.txt": "charlie, edited and committed\n",
		"new.txt": "new file\n", "dir/new2.txt": "another new file\n", "notes.txt": "<missing>",
	} {
		if got := f.file(scratchSHA, p); got != want {
			t.Errorf("scratch %s = %q, want %q", p, got, want)
		}
	}
	if f.everCommitted("notes.txt") {
		t.Errorf("the pre-existing untracked notes.txt is in a commit")
	}
	if f.everCommitted("debug.log") {
		t.Errorf("the ignored debug.log is in a commit")
	}
}

func TestRewind(t *testing.T) {
	t.Parallel()
	f, s := startAttempt(t)
	scratchSHA, err := f.repo.Rewind(f.ctx, s, "tests failed:\nTestX")
	if err != nil {
		t.Fatal(err)
	}
	checkRewound(t, f, s, scratchSHA)
	msg := f.git("log", "-1", "--format=%B", scratchSHA)
	mustContain(t, msg, "t1", "day 1", "tests failed:\nTestX")
	if p := f.git("rev-parse", scratchSHA+"^"); p != f.sha(s.ScratchBranch+"~1") || f.git("log", "-1", "--format=%s", p) != "agent commit" {
		t.Errorf("the capture commit is not on top of the agent's commit")
	}
	// Ignored files are never touched, not even the attempt's.
	if got := f.read("build.log"); got != "the attempt's ignored output\n" {
		t.Errorf("build.log = %q", got)
	}
}

func TestRewindNothingToCapture(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s := f.snapshot()
	scratchSHA, err := f.repo.Rewind(f.ctx, s, "gave up")
	if err != nil {
		t.Fatal(err)
	}
	if scratchSHA != s.SnapshotRef {
		t.Errorf("scratch head %s, want the snapshot: no capture commit for nothing", scratchSHA)
	}
	if f.branch() != "main" || f.sha("main") != s.SnapshotRef || f.status() != "" {
		t.Errorf("not rewound: on %s at %s, status %q", f.branch(), f.sha("main"), f.status())
	}
}

func TestRewindTaskBranchMoved(t *testing.T) {
	t.Parallel()
	f, s := startAttempt(t)
	foreign := f.foreignCommit()

	scratchSHA, err := f.repo.Rewind(f.ctx, s, "failed")
	msg := wantErr(t, err, gitops.ErrTaskBranchMoved)
	mustContain(t, msg, "main", s.SnapshotRef, foreign, s.ScratchBranch)
	checkFailedClosedOnMove(t, f, s, foreign, scratchSHA)

	// Calling again changes nothing.
	_, err = f.repo.Rewind(f.ctx, s, "failed")
	wantErr(t, err, gitops.ErrTaskBranchMoved)
	checkFailedClosedOnMove(t, f, s, foreign, scratchSHA)
}

// checkFailedClosedOnMove checks the state after Rewind or CommitSuccess
// found main moved to foreign: on main, foreign intact and checked out,
// the attempt's work on the scratch branch.
func checkFailedClosedOnMove(t *testing.T, f *fixture, s *gitops.Snapshot, foreign, scratchSHA string) {
	t.Helper()
	if b := f.branch(); b != "main" {
		t.Errorf("HEAD on %s, want main", b)
	}
	if got := f.sha("main"); got != foreign {
		t.Errorf("main at %s, want the foreign commit %s", got, foreign)
	}
	if st := f.status(); st != "?? notes.txt" {
		t.Errorf("status:\n%s\nwant only the pre-existing untracked file", st)
	}
	if got := f.read("c.txt"); got != "charlie, foreign\n" {
		t.Errorf("c.txt = %q, want the foreign commit's", got)
	}
	if got := f.read("notes.txt"); got != "my notes\n" {
		t.Errorf("notes.txt = %q", got)
	}
	if scratchSHA != "" && f.sha(s.ScratchBranch) != scratchSHA {
		t.Errorf("scratch head %s, returned %s", f.sha(s.ScratchBranch), scratchSHA)
	}
	for p, want := range map[string]string{"a.txt": "alpha, edited\n", "new.txt": "new file\n", "b.txt": "<missing>"} {
		if got := f.file(s.ScratchBranch, p); got != want {
			t.Errorf("scratch %s = %q, want %q", p, got, want)
		}
	}
	if f.everCommitted("notes.txt") {
		t.Errorf("notes.txt is in a commit")
	}
}

// Someone switched to another branch (or detached HEAD) during the attempt:
// neither operation touches anything.
func TestUnrelatedBranch(t *testing.T) {
	t.Parallel()
	for _, detach := range []bool{false, true} {
		for _, op := range []string{"Rewind", "CommitSuccess"} {
			name := op + "/branch"
			if detach {
				name = op + "/detached"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				f, s := startAttempt(t)
				scratch := f.sha(s.ScratchBranch)
				if detach {
					f.git("switch", "--quiet", "--detach")
				} else {
					f.git("switch", "--quiet", "-c", "elsewhere")
				}
				head := f.git("rev-parse", "HEAD")
				status := f.status()

				var err error
				if op == "Rewind" {
					_, err = f.repo.Rewind(f.ctx, s, "x")
				} else {
					_, _, err = f.repo.CommitSuccess(f.ctx, s, "x", nil)
				}
				msg := wantErr(t, err, gitops.ErrUnexpectedBranch)
				if detach {
					wantErr(t, err, gitops.ErrDetachedHead)
				} else {
					mustContain(t, msg, "elsewhere", "main", s.ScratchBranch)
				}
				if f.git("rev-parse", "HEAD") != head || f.status() != status || f.sha(s.ScratchBranch) != scratch {
					t.Errorf("something was touched")
				}
				if got := f.read("a.txt"); got != "alpha, edited\n" {
					t.Errorf("a.txt = %q", got)
				}
			})
		}
	}
}

func TestRewindScratchBranchMissing(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s := f.snapshot()
	f.git("switch", "--quiet", "main")
	f.git("branch", "-D", s.ScratchBranch)
	_, err := f.repo.Rewind(f.ctx, s, "x")
	wantErr(t, err, gitops.ErrBranchNotFound)
}

// A crash at any point of Rewind: calling it again finishes the job.
func TestRewindResumes(t *testing.T) {
	t.Parallel()
	for _, point := range []string{"captured", "switched", "reset"} {
		t.Run(point, func(t *testing.T) {
			t.Parallel()
			f, s := startAttempt(t)
			f.crashRewind(s, point)
			scratchSHA, err := f.open().Rewind(f.ctx, s, "failed")
			if err != nil {
				t.Fatalf("resumed Rewind: %v", err)
			}
			checkRewound(t, f, s, scratchSHA)
			if n := f.git("rev-list", "--count", s.SnapshotRef+".."+s.ScratchBranch); n != "2" {
				t.Errorf("%s commits on the scratch branch, want the agent's and one capture", n)
			}
		})
	}
}

// A crash of CommitSuccess between the squash merge and the commit, after
// which the runner rewinds instead: the staged squash is a copy of the
// scratch branch, so the reset loses nothing.
func TestRewindAfterInterruptedSquash(t *testing.T) {
	t.Parallel()
	f, s := startAttempt(t)
	crashing := f.open()
	gitops.CrashAt(crashing, "merged")
	if _, _, err := crashing.CommitSuccess(f.ctx, s, "done", nil); !errors.Is(err, gitops.ErrSimulatedCrash) {
		t.Fatalf("CommitSuccess = %v, want the simulated crash", err)
	}
	if f.status() == "?? notes.txt" {
		t.Fatalf("the crash left nothing staged: the test does not test anything")
	}
	scratchSHA, err := f.open().Rewind(f.ctx, s, "interrupted")
	if err != nil {
		t.Fatal(err)
	}
	checkRewound(t, f, s, scratchSHA)
}

// Resuming on the task branch, Rewind refuses to reset changes that are in
// neither the snapshot nor the scratch branch: someone else's work.
func TestRewindResumeRefusesForeignChanges(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		edit  func(f *fixture)
		files []string
	}{
		{"unstaged edit", func(f *fixture) { f.write("c.txt", "a human's edit\n") }, []string{"c.txt"}},
		{"staged edit", func(f *fixture) { f.write("dir/d.txt", "staged\n"); f.git("add", "dir/d.txt") }, []string{"dir/d.txt"}},
		{"staged new file", func(f *fixture) { f.write("human.txt", "mine\n"); f.git("add", "human.txt") }, []string{"human.txt"}},
		{"untracked over a tracked file", func(f *fixture) {
			f.git("rm", "--quiet", "--cached", "a.txt")
			f.write("a.txt", "not in the index\n")
		}, []string{"a.txt"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f, s := startAttempt(t)
			crashing := f.open()
			gitops.CrashAt(crashing, "switched")
			if _, err := crashing.Rewind(f.ctx, s, "failed"); !errors.Is(err, gitops.ErrSimulatedCrash) {
				t.Fatalf("Rewind = %v", err)
			}
			tt.edit(f)
			status := f.status()
			_, err := f.open().Rewind(f.ctx, s, "failed")
			msg := wantErr(t, err, gitops.ErrDirty)
			mustContain(t, msg, tt.files...)
			if got := f.status(); got != status {
				t.Errorf("status changed:\n%s\nwant\n%s", got, status)
			}
		})
	}
}

// Left-overs of an interrupted switch (untracked copies of the scratch
// branch's files) are removed; an untracked file that is not a copy is
// left alone.
func TestRewindRemovesOnlyCopies(t *testing.T) {
	t.Parallel()
	f, s := startAttempt(t)
	crashing := f.open()
	gitops.CrashAt(crashing, "switched")
	if _, err := crashing.Rewind(f.ctx, s, "failed"); !errors.Is(err, gitops.ErrSimulatedCrash) {
		t.Fatalf("Rewind = %v", err)
	}
	f.write("new.txt", "new file\n")           // as in the scratch branch
	f.write("dir/new2.txt", "changed since\n") // not
	f.write("human.txt", "a human's file\n")   // not there at all
	if _, err := f.open().Rewind(f.ctx, s, "failed"); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"new.txt": "<missing>", "dir/new2.txt": "changed since\n", "human.txt": "a human's file\n"}
	for p, w := range want {
		if got := f.read(p); got != w {
			t.Errorf("%s = %q, want %q", p, got, w)
		}
	}
}

// The attempt staged, or even committed, a file that was untracked at the
// snapshot: it stays in the work tree, unchanged, and out of the
// capture.
func TestRewindUnstagesPreexistingUntracked(t *testing.T) {
	t.Parallel()
	for _, commit := range []bool{false, true} {
		name := "staged"
		if commit {
			name = "committed"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f, s := startAttempt(t)
			f.write("odd [name]*.txt", "glob characters\n")
			f.git("add", "notes.txt")
			if commit {
				f.git("commit", "--quiet", "-m", "agent absorbs notes", "--", "notes.txt")
			}
			scratchSHA, err := f.repo.Rewind(f.ctx, s, "failed")
			if err != nil {
				t.Fatal(err)
			}
			if got := f.read("notes.txt"); got != "my notes\n" {
				t.Errorf("notes.txt = %q", got)
			}
			if got := f.file(scratchSHA, "notes.txt"); got != "<missing>" {
				t.Errorf("notes.txt is in the capture commit")
			}
			if !commit && f.everCommitted("notes.txt") {
				t.Errorf("notes.txt is in a commit")
			}
			if got := f.file(scratchSHA, "odd [name]*.txt"); got != "glob characters\n" {
				t.Errorf("a new file with glob characters was not captured: %q", got)
			}
		})
	}
}

// A user's hooks do not run on (and cannot fail) Orbit's bookkeeping.
func TestBookkeepingRunsNoHooks(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	marker := f.dir + "/../hook-ran"
	for _, h := range []string{"post-checkout", "pre-commit", "commit-msg", "post-commit", "post-merge", "reference-transaction"} {
		f.hook(h, "echo "+h+" >> '"+marker+"'; exit 1")
	}
	f.write("notes.txt", "my notes\n")
	s, err := f.repo.CreateSnapshot(f.ctx, "t1", 1, "main")
	if err != nil {
		t.Fatal(err)
	}
	f.write("a.txt", "edit\n")
	if _, err := f.repo.Rewind(f.ctx, s, "x"); err != nil {
		t.Fatal(err)
	}
	if got := f.read("../hook-ran"); got != "<missing>" {
		t.Errorf("hooks ran: %q", strings.TrimSpace(got))
	}
}

// startMovedUnderTheWorkTree is an attempt that left its work uncommitted,
// after which someone switched the work tree to main (the work comes
// along) and committed there: their own person.txt and an edit of
// dir/d.txt, which they then edited again without committing.
func startMovedUnderTheWorkTree(t *testing.T) (f *fixture, s *gitops.Snapshot, theirs string) {
	t.Helper()
	f, s = startAttemptBy(t, func(f *fixture) {
		f.write("a.txt", "alpha, edited\n")
		f.remove("b.txt")
		f.write("c.txt", "charlie, staged\n")
		f.git("add", "c.txt")
		f.write("c.txt", "charlie, staged and edited again\n")
		f.write("new.txt", "new file\n")
		f.write("dir/new2.txt", "another new file\n")
		f.write("staged.txt", "staged new file\n")
		f.git("add", "staged.txt")
	})
	f.git("switch", "--quiet", "main")
	f.write("person.txt", "a person's file\n")
	f.write("dir/d.txt", "delta, by a person\n")
	f.git("add", "person.txt", "dir/d.txt")
	f.git("commit", "--quiet", "-m", "by a person", "--", "person.txt", "dir/d.txt")
	f.write("dir/d.txt", "delta, by a person, uncommitted\n")
	return f, s, f.sha("main")
}

// The task branch moved with the work tree on it: Rewind does not reset it,
// but takes what the attempt left in the work tree out of it, committed on
// the scratch branch first; what may be the person's work is left in place
// and named. Calling it again (also after a crash half-way) sets nothing
// more aside and commits nothing more.
func TestRewindTaskBranchMovedUnderTheWorkTree(t *testing.T) {
	t.Parallel()
	check := func(t *testing.T, f *fixture, s *gitops.Snapshot, theirs string, err error, setAside []string) string {
		t.Helper()
		var moved *gitops.MovedError
		if !errors.As(err, &moved) || !errors.Is(err, gitops.ErrTaskBranchMoved) {
			t.Fatalf("Rewind = %v, want a *MovedError", err)
		}
		if !sameStrings(moved.SetAside, setAside) {
			t.Errorf("set aside %q, want %q", moved.SetAside, setAside)
		}
		if want := []string{"c.txt", "dir/d.txt"}; !sameStrings(moved.Left, want) {
			t.Errorf("left %q, want %q", moved.Left, want)
		}
		if moved.Now != theirs || moved.ScratchSHA != f.sha(s.ScratchBranch) {
			t.Errorf("now %s, scratch %s: want %s, %s", moved.Now, moved.ScratchSHA, theirs, f.sha(s.ScratchBranch))
		}
		if f.branch() != "main" || f.sha("main") != theirs {
			t.Errorf("on %s at %s, want main at the person's %s", f.branch(), f.sha("main"), theirs)
		}
		if st := f.status(); st != "MM c.txt\n M dir/d.txt\n?? notes.txt" {
			t.Errorf("status:\n%s\nwant only what may be the person's", st)
		}
		for p, want := range map[string]string{
			"a.txt": "alpha\n", "b.txt": "bravo\n", "new.txt": "<missing>", "dir/new2.txt": "<missing>", "staged.txt": "<missing>",
			"person.txt": "a person's file\n", "dir/d.txt": "delta, by a person, uncommitted\n",
			"notes.txt": "my notes\n", "debug.log": "ignored\n", "build.log": "the attempt's ignored output\n",
		} {
			if got := f.read(p); got != want {
				t.Errorf("work tree %s = %q, want %q", p, got, want)
			}
		}
		for p, want := range map[string]string{
			"a.txt": "alpha, edited\n", "b.txt": "<missing>", "new.txt": "new file\n", "dir/new2.txt": "another new file\n",
			"staged.txt": "staged new file\n", "c.txt": "charlie\n", "person.txt": "<missing>", "notes.txt": "<missing>",
		} {
			if got := f.file(moved.ScratchSHA, p); got != want {
				t.Errorf("scratch %s = %q, want %q", p, got, want)
			}
		}
		if f.everCommitted("notes.txt") || f.everCommitted("debug.log") || f.everCommitted("build.log") {
			t.Errorf("a user's untracked or ignored file is in a commit")
		}
		mustContain(t, err.Error(), "main", s.SnapshotRef, theirs, s.ScratchBranch, strings.Join(setAside, ", "), "c.txt, dir/d.txt")
		return moved.ScratchSHA
	}
	all := []string{"a.txt", "b.txt", "dir/new2.txt", "new.txt", "staged.txt"}

	t.Run("once", func(t *testing.T) {
		t.Parallel()
		f, s, theirs := startMovedUnderTheWorkTree(t)
		_, err := f.repo.Rewind(f.ctx, s, "failed")
		head := check(t, f, s, theirs, err, all)
		if n := f.git("rev-list", "--count", s.SnapshotRef+".."+head); n != "1" {
			t.Errorf("%s commits on the scratch branch, want the one that set the files aside", n)
		}
		_, err = f.open().Rewind(f.ctx, s, "failed")
		if again := check(t, f, s, theirs, err, nil); again != head {
			t.Errorf("called again, it committed %s", again)
		}
	})
	t.Run("crash", func(t *testing.T) {
		t.Parallel()
		f, s, theirs := startMovedUnderTheWorkTree(t)
		f.crashRewind(s, "set-aside-saved")
		if f.read("new.txt") != "new file\n" {
			t.Fatalf("the crash came after the work tree changed: the test does not test anything")
		}
		_, err := f.open().Rewind(f.ctx, s, "failed")
		head := check(t, f, s, theirs, err, all)
		if n := f.git("rev-list", "--count", s.SnapshotRef+".."+head); n != "1" {
			t.Errorf("%s commits on the scratch branch, want one", n)
		}
	})
}
