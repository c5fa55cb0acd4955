package gitops

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
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
	if err := r.checkRefFormat(ctx, "scratch branch", scratch); err != nil {
		return nil, err
	}
	if err := r.checkRefFormat(ctx, "task branch", taskBranch); err != nil {
		return nil, err
	}

	cur, err := r.CurrentBranch(ctx)
	if err != nil {
		return nil, err
	}
	if cur != taskBranch {
		return nil, fmt.Errorf("%w: expected HEAD on %s, it is on %s", ErrUnexpectedBranch, taskBranch, cur)
	}
	if err := r.checkNoOperation(ctx); err != nil {
		return nil, err
	}
	dirty, untracked, err := r.status(ctx)
	if err != nil {
		return nil, err
	}
	if len(dirty) > 0 {
		return nil, fmt.Errorf("%w: %d tracked file(s) with staged or unstaged changes: %s",
			ErrDirty, len(dirty), listPaths(dirty, 20))
	}
	if _, exists, err := r.branchHead(ctx, scratch); err != nil {
		return nil, err
	} else if exists {
		return nil, fmt.Errorf("%w: %s", ErrScratchExists, scratch)
	}
	if _, exists, err := r.branchHead(ctx, taskBranch); err != nil {
		return nil, err
	} else if !exists {
		return nil, fmt.Errorf("%w: %s has no commit yet", ErrBranchNotFound, taskBranch)
	}

	// Created at HEAD, never at a named commit: if the task branch moved
	// since it was read, the scratch branch still matches the work tree.
	// git refuses (rather than resets) a branch that appeared meanwhile.
	if _, err := r.run(ctx, call{
		args:            []string{"switch", "--quiet", "--no-track", "--create", scratch},
		uninterruptible: true,
	}); err != nil {
		if _, exists, err2 := r.branchHead(ctx, scratch); err2 == nil && exists {
			return nil, fmt.Errorf("%w: %s: %w", ErrScratchExists, scratch, err)
		}
		return nil, fmt.Errorf("creating scratch branch %s: %w", scratch, err)
	}
	ref, err := r.BranchSHA(ctx, scratch)
	if err != nil {
		return nil, err
	}
	if untracked == nil {
		untracked = []string{}
	}
	return &Snapshot{
		Task:          task,
		Day:           day,
		TaskBranch:    taskBranch,
		ScratchBranch: scratch,
		SnapshotRef:   ref,
		Untracked:     untracked,
	}, nil
}

// checkNoOperation fails with ErrDirty when git is in the middle of an
// operation the user has to finish or abort.
func (r *Repo) checkNoOperation(ctx context.Context) error {
	args := []string{"rev-parse"}
	for _, f := range inProgress {
		args = append(args, "--git-path", f)
	}
	out, err := r.run(ctx, call{args: args, readOnly: true})
	if err != nil {
		return fmt.Errorf("locating git's state files: %w", err)
	}
	paths := lines(out)
	if len(paths) != len(inProgress) {
		return fmt.Errorf("locating git's state files: unexpected output %q", out)
	}
	for i, p := range paths {
		if !filepath.IsAbs(p) {
			p = filepath.Join(r.Dir, p)
		}
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
