package gitops_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/orbitrun/orbit/gitops"
)

var testTrailers = []gitops.Trailer{
	{Key: "Orbit-Task", Value: "t1"},
	{Key: "Orbit-Checkpoint", Value: "cp-1"},
}

// checkCommitted checks the state after a successful CommitSuccess of
// fixture.attempt's changes.
func checkCommitted(t *testing.T, f *fixture, s *gitops.Snapshot, sha string) {
	t.Helper()
	if b := f.branch(); b != "main" {
		t.Errorf("HEAD on %s, want main", b)
	}
	if got := f.sha("main"); got != sha {
		t.Errorf("main at %s, CommitSuccess returned %s", got, sha)
	}
	if n := f.git("rev-list", "--count", s.SnapshotRef+"..main"); n != "1" {
		t.Errorf("%s commits on main since the snapshot, want 1", n)
	}
	if p := f.git("rev-parse", sha+"^@"); p != s.SnapshotRef {
		t.Errorf("parents of the commit: %q, want only the snapshot %s", p, s.SnapshotRef)
	}
	changes := f.git("diff", "--name-status", "--no-renames", s.SnapshotRef, sha)
	const want = "M\ta.txt\nD\tb.txt\nM\tc.txt\nA\tdir/new2.txt\nA\tnew.txt"
	if changes != want {
		t.Errorf("the commit changes:\n%s\nwant:\n%s", changes, want)
	}
	tr, err := f.repo.Trailers(f.ctx, sha)
	if err != nil {
		t.Fatal(err)
	}
	if tr["Orbit-Task"] != "t1" || tr["Orbit-Checkpoint"] != "cp-1" {
		t.Errorf("trailers = %v", tr)
	}
	if f.branchExists(s.ScratchBranch) {
		t.Errorf("scratch branch %s kept", s.ScratchBranch)
	}
	if st := f.status(); st != "?? notes.txt" {
		t.Errorf("status:\n%s\nwant only the pre-existing untracked file", st)
	}
	if got := f.read("notes.txt"); got != "my notes\n" {
		t.Errorf("notes.txt = %q", got)
	}
	if f.everCommitted("notes.txt") || f.everCommitted("debug.log") {
		t.Errorf("a pre-existing untracked or ignored file is in a commit")
	}
	if _, err := os.Stat(filepath.Join(f.dir, ".git", "SQUASH_MSG")); err == nil {
		t.Errorf("SQUASH_MSG left behind")
	}
}

func TestCommitSuccess(t *testing.T) {
	t.Parallel()
	f, s := startAttempt(t)
	sha, noChange, err := f.repo.CommitSuccess(f.ctx, s, "Edit a, drop b, add new files", testTrailers)
	if err != nil || noChange {
		t.Fatalf("CommitSuccess = %s, %v, %v", sha, noChange, err)
	}
	checkCommitted(t, f, s, sha)
	const wantMsg = "Edit a, drop b, add new files\n\nOrbit-Task: t1\nOrbit-Checkpoint: cp-1"
	if msg := f.git("log", "-1", "--format=%B", sha); msg != wantMsg {
		t.Errorf("message:\n%s\nwant:\n%s", msg, wantMsg)
	}
	if who := f.git("log", "-1", "--format=%an <%ae> / %cn <%ce>", sha); who != "Test Author <author@example.invalid> / Test Committer <committer@example.invalid>" {
		t.Errorf("identity: %s", who)
	}
}

func TestCommitSuccessNoChange(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		attempt func(f *fixture)
	}{
		{"nothing", func(f *fixture) {}},
		{"edit and undo", func(f *fixture) { f.write("a.txt", "x\n"); f.write("a.txt", "alpha\n") }},
		{"commit and revert", func(f *fixture) {
			f.write("a.txt", "x\n")
			f.git("commit", "--quiet", "-am", "x")
			f.git("revert", "--no-edit", "HEAD")
		}},
		{"only ignored files", func(f *fixture) { f.write("out.log", "x\n") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			f.write("notes.txt", "my notes\n")
			s := f.snapshot()
			all := f.git("rev-list", "--all", "--count")
			tt.attempt(f)
			sha, noChange, err := f.repo.CommitSuccess(f.ctx, s, "nothing to do", testTrailers)
			if err != nil || !noChange || sha != s.SnapshotRef {
				t.Fatalf("CommitSuccess = %s, %v, %v; want the snapshot, true", sha, noChange, err)
			}
			if f.branch() != "main" || f.sha("main") != s.SnapshotRef {
				t.Errorf("on %s at %s, want main at the snapshot", f.branch(), f.sha("main"))
			}
			if f.branchExists(s.ScratchBranch) {
				t.Errorf("scratch branch kept")
			}
			if got := f.git("rev-list", "--all", "--count"); got != all {
				t.Errorf("%s commits reachable, want %s as before", got, all)
			}
			if st := f.status(); st != "?? notes.txt" {
				t.Errorf("status %q", st)
			}
			if _, err := os.Stat(filepath.Join(f.dir, ".git", "SQUASH_MSG")); err == nil {
				t.Errorf("SQUASH_MSG left behind")
			}
		})
	}
}

// Refusals before anything is touched.
func TestCommitSuccessRefusesBadInput(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		summary  string
		trailers []gitops.Trailer
		want     error
	}{
		{"empty summary", "", nil, gitops.ErrBlankSummary},
		{"blank summary", " \n\t\r\n ", nil, gitops.ErrBlankSummary},
		{"trailer key with a space", "ok", []gitops.Trailer{{Key: "Bad Key", Value: "v"}}, gitops.ErrInvalidArgument},
		{"trailer key with a colon", "ok", []gitops.Trailer{{Key: "K:", Value: "v"}}, gitops.ErrInvalidArgument},
		{"trailer value on two lines", "ok", []gitops.Trailer{{Key: "K", Value: "a\nb"}}, gitops.ErrInvalidArgument},
		{"empty trailer value", "ok", []gitops.Trailer{{Key: "K", Value: " "}}, gitops.ErrInvalidArgument},
		{"NUL in summary", "a\x00b", nil, gitops.ErrInvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f, s := startAttempt(t)
			status := f.status()
			_, _, err := f.repo.CommitSuccess(f.ctx, s, tt.summary, tt.trailers)
			wantErr(t, err, tt.want)
			if f.branch() != s.ScratchBranch || f.status() != status {
				t.Errorf("touched: on %s, status\n%s", f.branch(), f.status())
			}
			if got := f.git("log", "-1", "--format=%s", s.ScratchBranch); got != "agent commit" {
				t.Errorf("scratch head is %q: something was committed", got)
			}
		})
	}
}

func TestCommitSuccessTaskBranchMoved(t *testing.T) {
	t.Parallel()
	f, s := startAttempt(t)
	foreign := f.foreignCommit()
	_, _, err := f.repo.CommitSuccess(f.ctx, s, "done", testTrailers)
	msg := wantErr(t, err, gitops.ErrTaskBranchMoved)
	mustContain(t, msg, "main", s.SnapshotRef, foreign)
	checkFailedClosedOnMove(t, f, s, foreign, "")
	// Again, from the task branch: still refused, nothing reset.
	_, _, err = f.open().CommitSuccess(f.ctx, s, "done", testTrailers)
	wantErr(t, err, gitops.ErrTaskBranchMoved)
	checkFailedClosedOnMove(t, f, s, foreign, "")
}

func TestCommitSuccessFailingHook(t *testing.T) {
	t.Parallel()
	f, s := startAttempt(t)
	f.hook("pre-commit", `echo "lint: 3 problems" >&2; echo formatted > a.txt; exit 1`)
	_, _, err := f.repo.CommitSuccess(f.ctx, s, "done", testTrailers)
	var ge *gitops.GitError
	if !errors.As(err, &ge) {
		t.Fatalf("error = %v, want a *GitError", err)
	}
	if ge.ExitCode != 1 || !strings.Contains(ge.Stderr, "lint: 3 problems") {
		t.Errorf("GitError = %+v", ge)
	}
	// On the task branch, at the snapshot, clean; the work on the scratch
	// branch.
	if f.branch() != "main" || f.sha("main") != s.SnapshotRef {
		t.Errorf("on %s at %s", f.branch(), f.sha("main"))
	}
	if st := f.status(); st != "?? notes.txt" {
		t.Errorf("status:\n%s", st)
	}
	if got := f.file(s.ScratchBranch, "a.txt"); got != "alpha, edited\n" {
		t.Errorf("scratch a.txt = %q", got)
	}
	if _, err := os.Stat(filepath.Join(f.dir, ".git", "SQUASH_MSG")); err == nil {
		t.Errorf("SQUASH_MSG left behind")
	}

	// Once the hook is fixed, the same call (resuming on the task branch)
	// lands the attempt.
	f.hook("pre-commit", "exit 0")
	sha, noChange, err := f.open().CommitSuccess(f.ctx, s, "done", testTrailers)
	if err != nil || noChange {
		t.Fatalf("CommitSuccess = %s, %v, %v", sha, noChange, err)
	}
	checkCommitted(t, f, s, sha)
}

func TestCommitSuccessRunsHooks(t *testing.T) {
	t.Parallel()
	f, s := startAttempt(t)
	f.hook("commit-msg", `printf '\nHook-Ran: yes\n' >> "$1"`)
	sha, _, err := f.repo.CommitSuccess(f.ctx, s, "done", nil)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := f.repo.Trailers(f.ctx, sha)
	if err != nil || tr["Hook-Ran"] != "yes" {
		t.Errorf("trailers %v, %v: the commit-msg hook did not run", tr, err)
	}
}

// A crash at any point of CommitSuccess: calling it again lands exactly
// one commit.
func TestCommitSuccessResumes(t *testing.T) {
	t.Parallel()
	for _, point := range []string{"captured", "switched", "reset", "merged", "committed"} {
		t.Run(point, func(t *testing.T) {
			t.Parallel()
			f, s := startAttempt(t)
			f.crashCommit(s, point, testTrailers)
			sha, noChange, err := f.open().CommitSuccess(f.ctx, s, "done", testTrailers)
			if err != nil || noChange {
				t.Fatalf("resumed CommitSuccess = %s, %v, %v", sha, noChange, err)
			}
			checkCommitted(t, f, s, sha)
		})
	}
}

func TestCommitSuccessResumesNoChange(t *testing.T) {
	t.Parallel()
	for _, point := range []string{"switched", "merged"} {
		t.Run(point, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			s := f.snapshot()
			f.crashCommit(s, point, nil)
			sha, noChange, err := f.open().CommitSuccess(f.ctx, s, "done", nil)
			if err != nil || !noChange || sha != s.SnapshotRef {
				t.Fatalf("resumed CommitSuccess = %s, %v, %v", sha, noChange, err)
			}
			if f.branchExists(s.ScratchBranch) || f.sha("main") != s.SnapshotRef {
				t.Errorf("not finished")
			}
		})
	}
}

// On the task branch with no capture commit on the scratch branch, nothing
// proves CommitSuccess got past the capture: refused.
func TestCommitSuccessOnTaskBranchWithoutCapture(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s := f.snapshot()
	f.write("a.txt", "edit\n")
	f.git("switch", "--quiet", "main") // carries the edit along
	_, _, err := f.repo.CommitSuccess(f.ctx, s, "done", nil)
	wantErr(t, err, gitops.ErrUnexpectedBranch)
	if f.read("a.txt") != "edit\n" || !f.branchExists(s.ScratchBranch) {
		t.Errorf("touched")
	}
}

// The attempt reset its scratch branch behind the snapshot: its squash
// would not be the attempt's work.
func TestCommitSuccessScratchDiverged(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s := f.snapshot()
	f.git("reset", "--quiet", "--hard", "HEAD~1")
	f.write("a.txt", "edit\n")
	_, _, err := f.repo.CommitSuccess(f.ctx, s, "done", nil)
	wantErr(t, err, gitops.ErrScratchDiverged)
	if f.branch() != "main" || f.sha("main") != s.SnapshotRef || f.status() != "" {
		t.Errorf("not rewound: on %s at %s, status %q", f.branch(), f.sha("main"), f.status())
	}
	if got := f.file(s.ScratchBranch, "a.txt"); got != "edit\n" {
		t.Errorf("scratch a.txt = %q", got)
	}
}

// The pre-existing untracked file, staged by the attempt, is not in the
// squash.
func TestCommitSuccessLeavesPreexistingUntracked(t *testing.T) {
	t.Parallel()
	f, s := startAttempt(t)
	f.git("add", "notes.txt")
	sha, _, err := f.repo.CommitSuccess(f.ctx, s, "done", testTrailers)
	if err != nil {
		t.Fatal(err)
	}
	checkCommitted(t, f, s, sha)
}

// merge.ff=false makes git refuse --squash, merge.verifySignatures would
// refuse the unsigned capture commit, commit.cleanup=strip would eat lines
// starting with #: none of them may break CommitSuccess.
func TestCommitSuccessUserConfig(t *testing.T) {
	t.Parallel()
	f, s := startAttempt(t)
	f.git("config", "merge.ff", "false")
	f.git("config", "merge.verifySignatures", "true")
	f.git("config", "commit.cleanup", "strip")
	f.git("config", "branch.autoSetupMerge", "always")
	summary := "Fix it\n\n# Details\nkept"
	sha, _, err := f.repo.CommitSuccess(f.ctx, s, summary, testTrailers)
	if err != nil {
		t.Fatal(err)
	}
	checkCommitted(t, f, s, sha)
	if msg := f.git("log", "-1", "--format=%B", sha); !strings.HasPrefix(msg, summary+"\n\n") {
		t.Errorf("message:\n%s", msg)
	}
}

func TestCommitMessageSubject(t *testing.T) {
	t.Parallel()
	long := "Make the scheduler retry leases that expired while the engine was paused, and record why"
	tests := []struct {
		name, summary, subject, body string
	}{
		{"one line", "  Fix the bug  ", "Fix the bug", ""},
		{"lines", "Fix the bug\r\n\r\nIt was off by one.\nNow it is not.", "Fix the bug", "It was off by one.\nNow it is not."},
		{"long", long, "Make the scheduler retry leases that expired while the engine was", long},
		{"word ends at 72", strings.Repeat("x", 72) + " y", strings.Repeat("x", 72), strings.Repeat("x", 72) + " y"},
		{"73 with a space at 1", "a " + strings.Repeat("x", 71), "a", "a " + strings.Repeat("x", 71)},
		{"long word", strings.Repeat("x", 100), strings.Repeat("x", 72), strings.Repeat("x", 100)},
		{"long multi-byte", strings.Repeat("é ", 50), strings.TrimSpace(strings.Repeat("é ", 36)), strings.TrimSpace(strings.Repeat("é ", 50))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			s := f.snapshot()
			f.write("a.txt", "edit\n")
			sha, _, err := f.repo.CommitSuccess(f.ctx, s, tt.summary, []gitops.Trailer{{Key: "K", Value: "v"}})
			if err != nil {
				t.Fatal(err)
			}
			subject := f.git("log", "-1", "--format=%s", sha)
			body := f.git("log", "-1", "--format=%b", sha)
			if subject != tt.subject {
				t.Errorf("subject %q, want %q", subject, tt.subject)
			}
			if n := utf8.RuneCountInString(subject); n > 72 {
				t.Errorf("subject of %d characters", n)
			}
			wantBody := "K: v"
			if tt.body != "" {
				wantBody = tt.body + "\n\nK: v"
			}
			if body != wantBody {
				t.Errorf("body:\n%q\nwant:\n%q", body, wantBody)
			}
		})
	}
}

func TestCommitIdentity(t *testing.T) {
	t.Parallel()
	noIdentity := gitops.WithEnv("GIT_AUTHOR_NAME=", "GIT_AUTHOR_EMAIL=", "GIT_COMMITTER_NAME=", "GIT_COMMITTER_EMAIL=", "EMAIL=")
	t.Run("fallback", func(t *testing.T) {
		t.Parallel()
		f, s := startAttempt(t, noIdentity)
		sha, _, err := f.repo.CommitSuccess(f.ctx, s, "done", nil)
		if err != nil {
			t.Fatal(err)
		}
		const want = "Orbit Groundhog <groundhog@orbit.invalid> / Orbit Groundhog <groundhog@orbit.invalid>"
		if who := f.git("log", "-1", "--format=%an <%ae> / %cn <%ce>", sha); who != want {
			t.Errorf("identity %q, want %q", who, want)
		}
	})
	t.Run("configured", func(t *testing.T) {
		t.Parallel()
		f, s := startAttempt(t, noIdentity)
		f.git("config", "user.name", "Jane Doe")
		f.git("config", "user.email", "jane@example.invalid")
		sha, _, err := f.repo.CommitSuccess(f.ctx, s, "done", nil)
		if err != nil {
			t.Fatal(err)
		}
		const want = "Jane Doe <jane@example.invalid> / Jane Doe <jane@example.invalid>"
		if who := f.git("log", "-1", "--format=%an <%ae> / %cn <%ce>", sha); who != want {
			t.Errorf("identity %q, want %q", who, want)
		}
	})
}

// A pre-commit hook that rewrites and re-stages files (a formatter) changes
// what the commit holds: it is still the attempt's commit.
func TestCommitSuccessRestagingHook(t *testing.T) {
	t.Parallel()
	f, s := startAttempt(t)
	f.hook("pre-commit", `echo formatted > a.txt && git add a.txt`)
	sha, noChange, err := f.repo.CommitSuccess(f.ctx, s, "done", testTrailers)
	if err != nil || noChange {
		t.Fatalf("CommitSuccess = %s, %v, %v", sha, noChange, err)
	}
	if got := f.file(sha, "a.txt"); got != "formatted\n" {
		t.Errorf("a.txt = %q", got)
	}
	if f.branchExists(s.ScratchBranch) || f.sha("main") != sha || f.git("rev-parse", sha+"^") != s.SnapshotRef {
		t.Errorf("not landed as one commit on the snapshot")
	}
}
