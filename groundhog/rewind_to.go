package groundhog

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/gitops"
)

// RewindTo takes a task back to before a committed checkpoint: the branch
// that holds its commits (the task branch, or the held ref of an
// on_approval task) moves back to the commit before the checkpoint's,
// groundhog.rewound_to is recorded, and the task becomes active. The
// attempts of that checkpoint and of every later one are forgotten:
// GroundhogMemory drops their checkpoints, and the next run does them
// again with a prompt that does not remember them.
//
// It is refused (an error wrapping events.ErrInvalidRequest, nothing
// written) for a checkpoint the plan does not have or that is not
// committed, an open attempt, a workspace not on the task branch or with
// uncommitted changes to tracked files, and a branch that moved since the
// last recorded commit. It can be run again after a crash: a branch
// already moved back is recorded.
func RewindTo(ctx context.Context, cfg ControlConfig) (*Control, error) {
	return control(ctx, cfg, func(ctx context.Context, r *runner, res *Control) error {
		refuse := func(format string, args ...any) error {
			return fmt.Errorf("%w: rewind task %s to before %s: "+format+"; nothing was changed",
				append([]any{events.ErrInvalidRequest, cfg.TaskID, cfg.Checkpoint}, args...)...)
		}
		st := r.st
		commits := st.commits()
		k := slices.IndexFunc(commits, func(c *events.GroundhogCommittedData) bool { return c.Checkpoint == cfg.Checkpoint })
		if k < 0 {
			ids := planIDs(st)
			if !slices.Contains(ids, cfg.Checkpoint) {
				return refuse("the plan has no such checkpoint (it has %s)", strings.Join(ids, ", "))
			}
			return refuse("the checkpoint is not committed (committed: %s)", committedIDs(commits))
		}
		if open := st.open(); open != nil {
			return refuse("day %d (%s) is still open; let its run end, or abandon it", open.started.Day, open.started.Checkpoint)
		}
		branch := st.task.Branch
		if cur, err := r.repo.CurrentBranch(ctx); err != nil || cur != branch {
			return refuse("the workspace is not on the task branch %s (it is on %q)", branch, cur)
		}
		if dirty, err := r.repo.DirtyTracked(ctx); err != nil {
			return err
		} else if len(dirty) > 0 {
			return refuse("the workspace has uncommitted changes to %d tracked file(s): %s", len(dirty), strings.Join(dirty, ", "))
		}
		last, c := commits[len(commits)-1], commits[k]
		to := c.SHA
		if !c.NoChange {
			parent, err := r.repo.FirstParent(ctx, c.SHA)
			if err != nil {
				return err
			}
			to = parent
		}
		heldRef, err := gitops.HeldRefName(cfg.TaskID)
		if err != nil {
			return err
		}
		head, err := r.repo.BranchSHA(ctx, branch)
		if err != nil {
			return err
		}
		held, heldOK, err := r.repo.RefSHA(ctx, heldRef)
		if err != nil {
			return err
		}
		// Where the commits are: on the task branch (landed, or approved),
		// else on the held ref. Either must be at the last recorded commit,
		// or already back at to (a rewind cut short before its record).
		switch {
		case head == last.SHA || (head == to && !(heldOK && held == last.SHA)):
			res.Ref = "refs/heads/" + branch
			if head == last.SHA {
				if err := r.repo.ResetBranch(ctx, branch, to, head); err != nil {
					return err
				}
			}
			// A held ref at the rewound commits would bring them back
			// into the next attempt.
			if heldOK && held == last.SHA {
				if err := r.repo.SetRef(ctx, heldRef, to, held); err != nil {
					return err
				}
			}
		case heldOK && (held == last.SHA || held == to):
			res.Ref = heldRef
			if held == last.SHA {
				if err := r.repo.SetRef(ctx, heldRef, to, held); err != nil {
					return err
				}
			}
		default:
			return refuse("%s is at %s and the held ref at %s, but the last recorded commit is %s: the branch moved",
				branch, shortSHA(head), shortSHA(held), shortSHA(last.SHA))
		}
		res.Outcome, res.FromSHA, res.ToSHA = RewindDone, last.SHA, to
		fromDay := 0
		for _, a := range st.attempts {
			if !a.forgotten && a.started.Checkpoint == cfg.Checkpoint {
				fromDay = a.started.Day
				break
			}
		}
		if err := record(ctx, r, events.GroundhogRewoundTo, events.DecisionID(events.GroundhogRewoundTo, cfg.TaskID, cfg.Checkpoint, last.SHA),
			events.GroundhogRewoundToData{Checkpoint: cfg.Checkpoint, Ref: res.Ref, FromSHA: last.SHA, ToSHA: to, FromDay: fromDay,
				By: byOrUnknown(cfg.By), Reason: cfg.Reason, Signer: events.RequestSigner(ctx)}); err != nil {
			return err
		}
		forgot := committedIDs(commits[k:])
		res.Message = fmt.Sprintf("task %s: %s moved back from %s to %s, before %s; forgotten: %s; the next run does them again",
			cfg.TaskID, res.Ref, shortSHA(last.SHA), shortSHA(to), cfg.Checkpoint, forgot)
		return r.setStatus(ctx, events.TaskBacklog, "rewound to before "+cfg.Checkpoint+" by "+byOrUnknown(cfg.By))
	})
}

// planIDs are the checkpoints of the task's current plan.
func planIDs(st *state) []string {
	plan, err := assets.ParsePlan("plan", []byte(st.plans[st.planVersion]))
	if err != nil {
		return nil
	}
	ids := make([]string, 0, len(plan.Checkpoints))
	for i := range plan.Checkpoints {
		ids = append(ids, plan.Checkpoints[i].ID)
	}
	return ids
}

func committedIDs(commits []*events.GroundhogCommittedData) string {
	if len(commits) == 0 {
		return "none"
	}
	ids := make([]string, 0, len(commits))
	for _, c := range commits {
		ids = append(ids, c.Checkpoint)
	}
	return strings.Join(ids, ", ")
}
