package gitops

import (
	"context"
	"fmt"
)

// Rewind ends a failed attempt: it captures the scratch state as a commit
// on the scratch branch, checks out the task branch, verifies it still
// points at s.SnapshotRef, resets it hard there, and keeps the scratch
// branch for inspection. It returns the scratch branch's head, which holds
// everything the attempt changed; also with an error, whenever the work is
// known to be there.
//
// The capture stages every change, new untracked files included, except
// the files in s.Untracked and ignored files (ignored by the current rules
// or by the snapshot's: an attempt that edits .gitignore does not get a
// user's ignored files committed), and commits on the scratch
// branch (without hooks or signing) with a message naming the task, the
// day and reason. When nothing is staged no commit is made. Files the
// attempt created are in that commit, and leave the work tree with the
// switch to the task branch.
//
// IMPORTANT: it fails closed. When HEAD is on neither the scratch branch
// nor the task branch it returns ErrUnexpectedBranch and changes nothing;
// when the scratch branch does not exist, ErrBranchNotFound. When the task
// branch moved it is not reset: Rewind returns a *MovedError
// (ErrTaskBranchMoved), the repository on the task branch as someone left
// it, the attempt's work on the scratch branch and, so that the next
// snapshot starts clean, out of the work tree: what the attempt left there
// (changed tracked files, new files) is committed on the scratch branch
// and then put back to the task branch's content, except paths the
// commits on the task branch since the snapshot changed too, which may be
// someone's work and are left in place (MovedError.Left). The files in
// s.Untracked are never committed, removed or modified.
//
// It can be called again after a crash at any point. On the task branch it
// skips the capture; before the reset it checks that every change the
// reset would discard is a copy of the snapshot or of the scratch head
// (what a crash half-way through leaves), and otherwise returns ErrDirty
// listing the files, changing nothing. After the reset it removes the
// untracked files that did not exist at the snapshot and are byte for byte
// in the scratch head; others are left in place.
func (r *Repo) Rewind(ctx context.Context, s *Snapshot, reason string) (scratchSHA string, err error) {
	if err := s.validate(); err != nil {
		return "", err
	}
	st, err := r.readStatus(ctx, true)
	if err != nil {
		return "", err
	}
	onScratch, scratchHead, err := r.locate(ctx, s, st)
	if err != nil {
		return "", err
	}
	if onScratch {
		var ident []string
		c, err := r.capture(ctx, s, st, "rewound", reason, false, &ident)
		if err != nil {
			return "", err
		}
		scratchHead = c.head
		if err := r.checkpoint("captured"); err != nil {
			return scratchHead, err
		}
		if err := r.leaveScratch(ctx, s); err != nil {
			return scratchHead, err
		}
		if err := r.checkpoint("switched"); err != nil {
			return scratchHead, err
		}
		if st.head == s.SnapshotRef {
			// Everything was captured and git switch left the work tree
			// clean at the task branch: when that is the snapshot, there
			// is nothing to reset, and no copy of a scratch file can be
			// left behind (those are what an interrupted switch leaves).
			after, err := r.readStatus(ctx, false)
			if err != nil {
				return scratchHead, err
			}
			if !after.detached && after.branch == s.TaskBranch && after.head == s.SnapshotRef && len(after.entries) == 0 {
				return scratchHead, r.checkpoint("reset")
			}
		}
	}
	now, err := r.BranchSHA(ctx, s.TaskBranch)
	if err != nil {
		return scratchHead, err
	}
	if now != s.SnapshotRef {
		return r.setAside(ctx, s, scratchHead, now)
	}
	if err := r.resetToSnapshot(ctx, s, scratchHead); err != nil {
		return scratchHead, err
	}
	return scratchHead, nil
}

// locate reports whether HEAD is on the scratch branch (false: on the task
// branch), as st says, and the scratch branch's head. Anywhere else it
// fails with ErrUnexpectedBranch; a missing scratch branch is
// ErrBranchNotFound.
func (r *Repo) locate(ctx context.Context, s *Snapshot, st *workStatus) (onScratch bool, scratchHead string, err error) {
	if st.detached {
		return false, "", fmt.Errorf("%w: expected HEAD on %s or %s: %w (in %s)",
			ErrUnexpectedBranch, s.ScratchBranch, s.TaskBranch, ErrDetachedHead, r.Dir)
	}
	cur := st.branch
	if cur != s.ScratchBranch && cur != s.TaskBranch {
		return false, "", fmt.Errorf("%w: expected HEAD on %s or %s, it is on %s",
			ErrUnexpectedBranch, s.ScratchBranch, s.TaskBranch, cur)
	}
	head, ok := st.head, st.head != ""
	if cur != s.ScratchBranch {
		if head, ok, err = r.branchHead(ctx, s.ScratchBranch); err != nil {
			return false, "", err
		}
	}
	if !ok {
		return false, "", fmt.Errorf("%w: scratch branch %s (HEAD is on %s)", ErrBranchNotFound, s.ScratchBranch, cur)
	}
	return cur == s.ScratchBranch, head, nil
}

// leaveScratch switches from the scratch branch, just captured (its work
// tree is clean but for ignored files and s.Untracked), to the task branch.
// git refuses rather than overwrite an untracked file in the way.
func (r *Repo) leaveScratch(ctx context.Context, s *Snapshot) error {
	if _, err := r.run(ctx, call{
		args:            []string{"switch", "--quiet", "--no-guess", s.TaskBranch},
		uninterruptible: true,
	}); err != nil {
		err = fmt.Errorf("switching to %s (the attempt's work is on %s): %w", s.TaskBranch, s.ScratchBranch, err)
		if sha, ok, err2 := r.branchHead(context.WithoutCancel(ctx), s.TaskBranch); err2 == nil && ok && sha != s.SnapshotRef {
			// Say why it matters, in a way callers can test for.
			err = fmt.Errorf("%w: %s was at %s when the snapshot was taken and is at %s now: %w",
				ErrTaskBranchMoved, s.TaskBranch, s.SnapshotRef, sha, err)
		}
		return err
	}
	return nil
}
