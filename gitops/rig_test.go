package gitops_test

import (
	"errors"
	"testing"

	"github.com/orbitrun/orbit/gitops"
)

// startAttemptBy is the rig of an attempt: a fixture with a pre-existing
// untracked file (notes.txt) and an ignored one (debug.log), a snapshot of
// it, attempt's changes, and the attempt's ignored output (build.log).
func startAttemptBy(t *testing.T, attempt func(*fixture), opts ...gitops.Option) (*fixture, *gitops.Snapshot) {
	t.Helper()
	f := newFixture(t, opts...)
	f.write("notes.txt", "my notes\n")
	f.write("debug.log", "ignored\n")
	s := f.snapshot()
	attempt(f)
	f.write("build.log", "the attempt's ignored output\n")
	return f, s
}

// startAttempt is startAttemptBy with fixture.attempt: an attempt that
// made a commit of its own.
func startAttempt(t *testing.T, opts ...gitops.Option) (*fixture, *gitops.Snapshot) {
	t.Helper()
	return startAttemptBy(t, (*fixture).attempt, opts...)
}

// startAttemptInPlace is startAttemptBy with fixture.attemptInPlace: an
// attempt that left its work uncommitted.
func startAttemptInPlace(t *testing.T, opts ...gitops.Option) (*fixture, *gitops.Snapshot) {
	t.Helper()
	return startAttemptBy(t, (*fixture).attemptInPlace, opts...)
}

// crashCommit calls CommitSuccess of s (summary "done") on a Repo that
// stops at point, as a crash there would, and fails the test unless it
// stopped there.
func (f *fixture) crashCommit(s *gitops.Snapshot, point string, trailers []gitops.Trailer) {
	f.t.Helper()
	crashing := f.open()
	gitops.CrashAt(crashing, point)
	if _, _, err := crashing.CommitSuccess(f.ctx, s, "done", trailers); !errors.Is(err, gitops.ErrSimulatedCrash) {
		f.t.Fatalf("CommitSuccess = %v, want the simulated crash at %s", err, point)
	}
}

// crashRewind is crashCommit for Rewind (reason "failed").
func (f *fixture) crashRewind(s *gitops.Snapshot, point string) {
	f.t.Helper()
	crashing := f.open()
	gitops.CrashAt(crashing, point)
	if _, err := crashing.Rewind(f.ctx, s, "failed"); !errors.Is(err, gitops.ErrSimulatedCrash) {
		f.t.Fatalf("Rewind = %v, want the simulated crash at %s", err, point)
	}
}
