package groundhog

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/gitops"
)

// Check is one finding of Verify.
type Check struct {
	OK     bool   `json:"ok"`
	What   string `json:"what"`
	Detail string `json:"detail,omitempty"`
}

// Report is what Verify found.
type Report struct {
	TaskID  string  `json:"task_id"`
	Commits int     `json:"commits"`
	Checks  []Check `json:"checks"`
	OK      bool    `json:"ok"`
}

func (rep *Report) add(ok bool, what, format string, args ...any) {
	rep.Checks = append(rep.Checks, Check{OK: ok, What: what, Detail: fmt.Sprintf(format, args...)})
	if !ok {
		rep.OK = false
	}
}

// Workspace returns the work tree a task's Groundhog work is in, as its
// events say: the workspace it was created with, or the worktree a
// shipping run gave it since. Verify is run against it.
func Workspace(evs []events.Event) (string, error) {
	st := newState()
	for _, ev := range evs {
		if _, err := st.apply(ev); err != nil {
			return "", err
		}
	}
	if st.task == nil {
		return "", fmt.Errorf("%w: the events hold no task.created", events.ErrNotFound)
	}
	return st.task.Workspace, nil
}

// Verify replays a task's events against its repository, as an auditor
// would: every committed sha exists and is on the task branch (or, held
// for approval, on its held ref; or, rebased by a shipping run onto a base
// that moved, as its copy: the same trailers and the same patch), in the
// order
// the events recorded them; every commit has its grounding record, and the
// chain of state hashes recomputes; no attempt is left open; and the
// workspace is on the task branch with no uncommitted change to tracked
// files.
func Verify(ctx context.Context, evs []events.Event, repo *gitops.Repo) (*Report, error) {
	st := newState()
	var groundings []*events.GroundhogGroundingData
	for _, ev := range evs {
		p, err := st.apply(ev)
		if err != nil {
			return nil, err
		}
		if g, ok := p.(*events.GroundhogGroundingData); ok {
			groundings = append(groundings, g)
		}
	}
	if st.task == nil {
		return nil, fmt.Errorf("%w: no task.created among the events", events.ErrNotFound)
	}
	rep := &Report{OK: true, TaskID: taskOf(evs)}
	head, err := repo.BranchSHA(ctx, st.task.Branch)
	if err != nil {
		return nil, err
	}
	commits := st.commits()
	groundings = slices.DeleteFunc(groundings, func(g *events.GroundhogGroundingData) bool {
		a := st.byDay(g.Day)
		return a != nil && a.forgotten
	})
	rep.Commits = len(commits)
	prev := ""
	for _, c := range commits {
		if c.NoChange {
			rep.add(true, "checkpoint "+c.Checkpoint, "succeeded without changes: no commit")
		} else {
			exists, err := repo.CommitExists(ctx, c.SHA)
			if err != nil {
				return nil, err
			}
			onBranch, held := false, false
			if exists {
				if onBranch, err = repo.IsAncestor(ctx, c.SHA, head); err != nil {
					return nil, err
				}
				if !onBranch && c.HeldRef != "" {
					if held, err = onRef(ctx, repo, c.SHA, c.HeldRef); err != nil {
						return nil, err
					}
				}
			}
			at := c.SHA // where the checkpoint's change is on the branch
			rewritten := ""
			if exists && !onBranch && !held {
				if rewritten, err = rebasedCopy(ctx, repo, rep.TaskID, c, head); err != nil {
					return nil, err
				}
			}
			switch {
			case held:
				rep.add(true, "checkpoint "+c.Checkpoint, "commit %s exists, held on %s (not yet approved onto %s)", shortSHA(c.SHA), c.HeldRef, st.task.Branch)
			case rewritten != "":
				at = rewritten
				rep.add(true, "checkpoint "+c.Checkpoint, "commit %s exists, and is on %s as %s, its copy by a rebase (same trailers, same patch)",
					shortSHA(c.SHA), st.task.Branch, shortSHA(rewritten))
			default:
				rep.add(exists && onBranch, "checkpoint "+c.Checkpoint, "commit %s exists: %t, on %s: %t", shortSHA(c.SHA), exists, st.task.Branch, onBranch)
			}
			if prev != "" && exists {
				inOrder, err := repo.IsAncestor(ctx, prev, at)
				if err != nil {
					return nil, err
				}
				rep.add(inOrder, "order", "%s comes after %s", shortSHA(at), shortSHA(prev))
			}
			prev = at
		}
	}
	// The chain: one grounding record per commit, in the same order, each
	// hash recomputed from the one before it.
	chainOK := len(groundings) == len(commits)
	last := ""
	for i, g := range groundings {
		if i >= len(commits) {
			break
		}
		want := StateHash(last, rep.TaskID, commits[i])
		if g.SHA != commits[i].SHA || g.PrevHash != last || g.StateHash != want {
			chainOK = false
			rep.add(false, "grounding", "record %d (%s) does not recompute", i+1, commits[i].Checkpoint)
		}
		last = g.StateHash
	}
	rep.add(chainOK, "grounding chain", "%d records for %d commits", len(groundings), len(commits))
	if open := st.open(); open != nil {
		rep.add(false, "attempts", "day %d (%s) is still open", open.started.Day, open.started.Checkpoint)
	} else {
		rep.add(true, "attempts", "%d attempts, none open", len(st.attempts))
	}
	branch, err := repo.CurrentBranch(ctx)
	onTask := err == nil && branch == st.task.Branch
	rep.add(onTask, "workspace branch", "on %q (task branch %q)", branch, st.task.Branch)
	dirty, err := repo.DirtyTracked(ctx)
	if err != nil {
		return nil, err
	}
	rep.add(len(dirty) == 0, "workspace", "%d tracked files with uncommitted changes", len(dirty))
	return rep, nil
}

// rebasedCopy returns the commit on the branch at head that a rebase made
// of a checkpoint's recorded commit (a shipping run rebases its branch
// onto a base that moved): one whose Groundhog trailers name the same
// task, checkpoint and day and whose change has the same patch id. ""
// when there is none.
func rebasedCopy(ctx context.Context, repo *gitops.Repo, taskID string, c *events.GroundhogCommittedData, head string) (string, error) {
	want, err := repo.PatchID(ctx, c.SHA)
	if err != nil {
		return "", err
	}
	found, err := repo.CommitsWithTrailer(ctx, head, "Groundhog-Task", taskID)
	if err != nil {
		return "", err
	}
	for _, sha := range found {
		tr, err := repo.Trailers(ctx, sha)
		if err != nil {
			return "", err
		}
		if tr["Groundhog-Checkpoint"] != c.Checkpoint || tr["Groundhog-Day"] != strconv.Itoa(c.Day) {
			continue
		}
		if id, err := repo.PatchID(ctx, sha); err != nil {
			return "", err
		} else if id == want {
			return sha, nil
		}
	}
	return "", nil
}

// onRef reports whether sha is ref's commit or one of its ancestors.
func onRef(ctx context.Context, repo *gitops.Repo, sha, ref string) (bool, error) {
	at, ok, err := repo.RefSHA(ctx, ref)
	if err != nil || !ok {
		return false, err
	}
	return repo.IsAncestor(ctx, sha, at)
}

func taskOf(evs []events.Event) string {
	for _, ev := range evs {
		if ev.TaskID != "" {
			return ev.TaskID
		}
	}
	return ""
}
