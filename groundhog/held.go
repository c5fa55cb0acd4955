package groundhog

import (
	"context"
	"fmt"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/gitops"
)

// held reports whether the run's checkpoint commits are held for approval
// (materialize: on_approval) rather than landed on the task branch.
func (r *runner) held() bool { return r.cfg.Spec.Materialize == assets.MaterializeOnApproval }

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
