package gitops

import (
	"errors"
	"strconv"
	"strings"
)

// Sentinel errors returned by this package. They are always wrapped with a
// message naming what was found; test for them with errors.Is.
var (
	// ErrNotARepo is returned by Open when the directory is not inside the
	// work tree of a git repository (a bare repository, the .git directory
	// itself, or no repository at all).
	ErrNotARepo = errors.New("not a git work tree")

	// ErrDetachedHead is returned when HEAD does not name a branch.
	ErrDetachedHead = errors.New("HEAD is detached")

	// ErrDirty is returned when tracked files have staged or unstaged
	// changes (or a merge, rebase, cherry-pick, revert, am or bisect is in
	// progress) where a clean work tree is required, and by a resumed
	// Rewind or CommitSuccess that finds changes it could not restore if it
	// reset them. The message lists the files.
	ErrDirty = errors.New("work tree has changes")

	// ErrScratchExists is returned by CreateSnapshot when the scratch branch
	// already exists. The branch is never overwritten.
	ErrScratchExists = errors.New("scratch branch already exists")

	// ErrUnexpectedBranch is returned when HEAD is not on the branch an
	// operation requires. Nothing has been changed.
	ErrUnexpectedBranch = errors.New("unexpected branch")

	// ErrTaskBranchMoved is returned by Rewind and CommitSuccess when the
	// task branch no longer points at the snapshot's commit: someone
	// committed on it during the attempt. The task branch is left as it is,
	// and the attempt's work is on the scratch branch.
	ErrTaskBranchMoved = errors.New("task branch moved since the snapshot")

	// ErrScratchDiverged is returned by CommitSuccess when the scratch
	// branch no longer descends from the snapshot's commit (the attempt
	// rewrote its history), so a squash of it would not be the attempt's
	// work. The workspace is rewound as by Rewind; the scratch branch is
	// kept.
	ErrScratchDiverged = errors.New("scratch branch does not descend from the snapshot")

	// ErrNotFastForward is returned by FastForward when the branch is not
	// an ancestor of the commit it would move to: it moved on its own.
	// Nothing has been changed.
	ErrNotFastForward = errors.New("not a fast-forward")

	// ErrBranchNotFound is returned when a branch that must exist does not.
	ErrBranchNotFound = errors.New("branch not found")

	// ErrHooksChanged is returned by a commit that would run hooks the
	// change it commits wrote: the repository keeps its hooks in the work
	// tree (core.hooksPath = .husky, say) and they differ there from HEAD.
	// Orbit commits as the engine's user, outside the sandbox an agent's
	// change was made in, so it runs no hook an agent could have written.
	// Nothing is committed.
	ErrHooksChanged = errors.New("the change edits the hooks its commit would run")

	// ErrBlankSummary is returned by CommitSuccess when the summary is empty
	// or only white space. Nothing has been changed.
	ErrBlankSummary = errors.New("blank commit summary")

	// ErrWorktreeExists is returned by AddWorktree when the path holds
	// something other than the work tree it would make. Nothing has been
	// changed.
	ErrWorktreeExists = errors.New("work tree path is taken")

	// ErrBranchExists is returned by AddWorktree when the branch exists
	// and cannot be the one it would make: checked out elsewhere, or not
	// descending from the start commit. Nothing has been changed.
	ErrBranchExists = errors.New("branch exists")

	// ErrConflict is returned by Rebase when the rebase stops on a
	// conflict. The rebase is aborted, the work tree as it was; the
	// message names the files.
	ErrConflict = errors.New("conflict")

	// ErrBranchMoved is returned by PushLease when the remote branch is not
	// where the lease expects it (someone else pushed), and by
	// MergeFastForward when the branch is not at the commit the caller
	// expects. Nothing has been changed.
	ErrBranchMoved = errors.New("branch moved")

	// ErrInvalidArgument is returned for arguments that cannot be used: a
	// task id with nothing left after sanitising, a day below 1, a branch
	// name git would refuse, a malformed Snapshot or trailer.
	ErrInvalidArgument = errors.New("invalid argument")
)

// GitError is a git command that failed. It never carries environment
// values; Args are the arguments after "git" and its global options.
type GitError struct {
	Args     []string
	ExitCode int    // -1 when git did not run to completion
	Stderr   string // trimmed, capped at a few KiB
	Err      error  // why git did not run to completion (context, exec), if so
}

func (e *GitError) Error() string {
	var b strings.Builder
	b.WriteString("git")
	for _, a := range e.Args {
		b.WriteByte(' ')
		b.WriteString(a)
	}
	if e.ExitCode >= 0 {
		b.WriteString(": exit status ")
		b.WriteString(strconv.Itoa(e.ExitCode))
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	if e.Stderr != "" {
		b.WriteString(": ")
		b.WriteString(e.Stderr)
	}
	return b.String()
}

// Unwrap returns the reason git did not run to completion, so that
// errors.Is(err, context.Canceled) works.
func (e *GitError) Unwrap() error { return e.Err }

// exitCode returns the exit code of a git command: 0 for no error, -1 when
// err is not a *GitError.
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var ge *GitError
	if errors.As(err, &ge) {
		return ge.ExitCode
	}
	return -1
}
