package groundhog

import (
	"context"
	"fmt"
	"strings"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/gitops"
)

// held reports whether the run's checkpoint commits are held for approval
// (materialize: on_approval) rather than landed on the task branch.
func (r *runner) held() bool { return r.cfg.Spec.Materialize == assets.MaterializeOnApproval }

// unapproved reports whether the task has commits held for approval that
// its branch does not hold: its held ref exists and is not an ancestor of
// the task branch. It names the held ref.
func (r *runner) unapproved(ctx context.Context) (string, bool, error) {
	ref, err := gitops.HeldRefName(r.cfg.TaskID)
	if err != nil {
		return "", false, err
	}
	held, ok, err := r.repo.RefSHA(ctx, ref)
	if err != nil || !ok {
		return ref, false, err
	}
	head, err := r.repo.BranchSHA(ctx, r.st.task.Branch)
	if err != nil {
		return ref, false, err
	}
	landed, err := r.repo.IsAncestor(ctx, held, head)
	return ref, !landed, err
}

// snapshotBranch is the branch the next attempt's snapshot is taken on:
// the task branch, or for held commits the hold branch, made at the held
// ref (see gitops.EnterHold).
func (r *runner) snapshotBranch(ctx context.Context) (string, error) {
	if !r.held() {
		return r.st.task.Branch, nil
	}
	hold, err := r.repo.EnterHold(ctx, r.cfg.TaskID, r.st.task.Branch)
	if err != nil {
		return "", fmt.Errorf("task %s: taking the workspace to its held commits: %w", r.cfg.TaskID, err)
	}
	return hold, nil
}

// leaveHold moves the held ref to what a closed attempt left on the hold
// branch and takes the workspace back to the task branch. Runs that do
// not hold commits have no hold branch, and it does nothing then (a
// hold branch left by a held run whose activity changed is finished
// too).
func (r *runner) leaveHold(ctx context.Context) error {
	if open := r.st.open(); open != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if err := r.repo.LeaveHold(ctx, r.cfg.TaskID, r.st.task.Branch); err != nil {
		return fmt.Errorf("task %s: back to %s from the hold branch: %w", r.cfg.TaskID, r.st.task.Branch, err)
	}
	return nil
}

// heldRef is the held ref a commit on taskBranch lands on, or "" when
// taskBranch is the task's own branch.
func (r *runner) heldRef(taskBranch string) string {
	if hold, err := gitops.HoldBranchName(r.cfg.TaskID); err != nil || taskBranch != hold {
		return ""
	}
	ref, _ := gitops.HeldRefName(r.cfg.TaskID)
	return ref
}

// refuseHeldUnderDirect refuses a run whose activity lands its commits on
// the task branch (materialize: direct) while checkpoint commits of the
// task are held for approval, unless every checkpoint is committed already.
// The next checkpoint would build on a task branch without the held work,
// and the task's commits would no longer be one line (what orbit groundhog
// verify checks). The error names the held commits and the ways out.
// Switching the other way is safe: a held run starts its hold at the task
// branch when nothing is held.
func (r *runner) refuseHeldUnderDirect(ctx context.Context) error {
	if r.held() || r.committedCount() == len(r.plan.Checkpoints) {
		return nil
	}
	ref, err := gitops.HeldRefName(r.cfg.TaskID)
	if err != nil {
		return err
	}
	if _, ok, err := r.repo.RefSHA(ctx, ref); err != nil || !ok {
		return err
	}
	branch := r.st.task.Branch
	head, err := r.repo.BranchSHA(ctx, branch)
	if err != nil {
		return err
	}
	var held []string
	first := ""
	for _, c := range r.st.commits() {
		if c.HeldRef == "" || c.NoChange {
			continue
		}
		landed, err := r.repo.IsAncestor(ctx, c.SHA, head)
		if err != nil {
			return err
		}
		if !landed {
			held = append(held, c.Checkpoint+" "+shortSHA(c.SHA))
			if first == "" {
				first = c.Checkpoint
			}
		}
	}
	if len(held) == 0 {
		return nil
	}
	return fmt.Errorf("task %s: the activity %s has materialize: direct, but %d checkpoint commit(s) are held for approval on %s (%s), "+
		"which the next checkpoint must build on: approve them (orbit groundhog approve %s), or rewind them (orbit groundhog rewind %s --to %s), "+
		"or run an activity with materialize: on_approval: %w",
		r.cfg.TaskID, r.cfg.Activity, len(held), ref, strings.Join(held, ", "), r.cfg.TaskID, r.cfg.TaskID, first, ErrHeldUnapproved)
}
