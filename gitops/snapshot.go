package gitops

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
)

// Snapshot is the clean state an attempt starts from. It holds only plain
// values, so that a runner can record it and rebuild it after a crash; the
// operations below re-check everything they rely on against the repository.
type Snapshot struct {
	Task          string   // the task id, as given
	Day           int      // the attempt's day, 1-based within the task
	TaskBranch    string   // the branch a success lands on
	ScratchBranch string   // ScratchBranchName(Task, Day)
	SnapshotRef   string   // the task branch's commit when the snapshot was taken
	Untracked     []string // untracked files at that moment: preserved, never absorbed into any commit
}

// inProgress are the files git keeps while an operation that must be
// finished or aborted by the user is under way.
var inProgress = []string{
	"MERGE_HEAD", "CHERRY_PICK_HEAD", "REVERT_HEAD", "BISECT_LOG",
	"rebase-merge", "rebase-apply", "sequencer",
}

// CreateSnapshot starts an attempt: it records the clean state of the task
// branch and switches to a new scratch branch there.
//
// It requires HEAD to be on taskBranch (ErrDetachedHead,
// ErrUnexpectedBranch), no staged or unstaged change to a tracked file and
// no merge, rebase, cherry-pick, revert, am or bisect in progress
// (ErrDirty, listing the files), the task branch to have a commit
// (ErrBranchNotFound), and the scratch branch ScratchBranchName(task, day)
// not to exist (ErrScratchExists; it is never overwritten). See
// ScratchBranchName for how task is sanitised. Nothing is changed when it
// fails.
//
// Untracked files are allowed: they are recorded in Untracked, and
// Rewind and CommitSuccess never put them in a commit nor remove them.
// Ignored files are neither recorded nor touched.
//
// IMPORTANT: the switch to the scratch branch does not touch the work tree:
// the scratch branch is created at HEAD, so every file, untracked ones
// included, stays as it is.
func (r *Repo) CreateSnapshot(ctx context.Context, task string, day int, taskBranch string) (*Snapshot, error) {
	scratch, err := ScratchBranchName(task, day)
	if err != nil {
		return nil, err
	}
	if err := checkRefFormat("scratch branch", scratch); err != nil {
		return nil, err
	}
	if err := checkRefFormat("task branch", taskBranch); err != nil {
		return nil, err
	}

	// One status says where HEAD is, at which commit, and what is dirty or
	// untracked.
	st, err := r.readStatus(ctx, true)
	if err != nil {
		return nil, err
	}
	if st.detached {
		return nil, fmt.Errorf("%w (in %s)", ErrDetachedHead, r.Dir)
	}
	if st.branch != taskBranch {
		return nil, fmt.Errorf("%w: expected HEAD on %s, it is on %s", ErrUnexpectedBranch, taskBranch, st.branch)
	}
	if err := r.checkNoOperation(); err != nil {
		return nil, err
	}
	if dirty := st.tracked(); len(dirty) > 0 {
		return nil, fmt.Errorf("%w: %d tracked file(s) with staged or unstaged changes: %s",
			ErrDirty, len(dirty), listPaths(dirty, 20))
	}
	if st.head == "" {
		return nil, fmt.Errorf("%w: %s has no commit yet", ErrBranchNotFound, taskBranch)
	}

	// Created at the commit the status saw HEAD at, which becomes the
	// snapshot: git switch checks that commit out, so the scratch branch
	// matches the work tree even if the task branch moved since it was
	// read (then nothing of the work tree changes but what the move
	// brought, and Rewind and CommitSuccess refuse to touch the moved task
	// branch). git refuses (rather than resets) a branch that exists.
	if _, err := r.run(ctx, call{
		args:            []string{"switch", "--quiet", "--no-track", "--create", scratch, st.head},
		uninterruptible: true,
	}); err != nil {
		if _, exists, err2 := r.branchHead(ctx, scratch); err2 == nil && exists {
			return nil, fmt.Errorf("%w: %s: %w", ErrScratchExists, scratch, err)
		}
		return nil, fmt.Errorf("creating scratch branch %s: %w", scratch, err)
	}
	untracked := st.untracked()
	if untracked == nil {
		untracked = []string{}
	}
	return &Snapshot{
		Task:          task,
		Day:           day,
		TaskBranch:    taskBranch,
		ScratchBranch: scratch,
		SnapshotRef:   st.head,
		Untracked:     untracked,
	}, nil
}

// checkNoOperation fails with ErrDirty when git is in the middle of an
// operation the user has to finish or abort. The files that say so were
// located by Open.
func (r *Repo) checkNoOperation() error {
	for i, p := range r.stateFiles {
		_, err := os.Lstat(p)
		if err == nil {
			return fmt.Errorf("%w: an operation is in progress (%s exists)", ErrDirty, inProgress[i])
		}
		if !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("checking %s: %w", p, err)
		}
	}
	return nil
}

// validate checks that s is a snapshot this package could have made.
func (s *Snapshot) validate() error {
	if s == nil {
		return fmt.Errorf("%w: nil snapshot", ErrInvalidArgument)
	}
	want, err := ScratchBranchName(s.Task, s.Day)
	if err != nil {
		return err
	}
	// IMPORTANT: only branches named by ScratchBranchName are ever committed
	// on by capture or deleted by CommitSuccess.
	if s.ScratchBranch != want {
		return fmt.Errorf("%w: scratch branch %q is not %q", ErrInvalidArgument, s.ScratchBranch, want)
	}
	if err := checkBranchName("task branch", s.TaskBranch); err != nil {
		return err
	}
	if s.TaskBranch == s.ScratchBranch {
		return fmt.Errorf("%w: task branch and scratch branch are both %s", ErrInvalidArgument, s.TaskBranch)
	}
	if !isObjectID(s.SnapshotRef) {
		return fmt.Errorf("%w: snapshot ref %q is not a full commit id", ErrInvalidArgument, s.SnapshotRef)
	}
	for _, p := range s.Untracked {
		if p == "" || strings.ContainsRune(p, 0) || strings.HasPrefix(p, "/") {
			return fmt.Errorf("%w: untracked path %q", ErrInvalidArgument, p)
		}
	}
	return nil
}
