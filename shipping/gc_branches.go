package shipping

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/gitops"
	"github.com/orbitrun/orbit/projector"
)

// madeBranch is a branch the log says Orbit made: a shipping run's or a
// Groundhog attempt's.
type madeBranch struct {
	kind    string // GCRunBranch or GCScratchBranch
	repo    string // a work tree of the repository it was made in
	branch  string
	runID   string
	taskIDs []string
}

// scratchName is the shape of a scratch branch (gitops.ScratchBranchName).
var scratchName = regexp.MustCompile(`^` + regexp.QuoteMeta(gitops.ScratchPrefix) + `[^/]+/day-[1-9][0-9]*$`)

// named reports whether the branch has the name Orbit gives its kind.
func (b madeBranch) named() bool {
	if b.kind == GCScratchBranch {
		return scratchName.MatchString(b.branch)
	}
	return strings.Contains(b.branch, "/") && strings.HasSuffix(b.branch, "-"+b.runID)
}

// madeBranches reads the branches the log records: task.worktree_assigned
// for shipping runs, groundhog.attempt.started for scratch branches.
func (g *gcPass) madeBranches(ctx context.Context) ([]madeBranch, map[string]*projector.TaskView, error) {
	tasks := map[string]*projector.TaskView{}
	taskOf := func(id string) (*projector.TaskView, error) {
		if v, ok := tasks[id]; ok {
			return v, nil
		}
		v, err := g.s.cfg.Task(ctx, id, g.last)
		if err != nil {
			return nil, err
		}
		tasks[id] = v
		return v, nil
	}
	byKey := map[string]*madeBranch{}
	var order []string
	add := func(b madeBranch) {
		key := b.repo + "\x00" + b.branch
		if have, ok := byKey[key]; ok {
			if !slices.Contains(have.taskIDs, b.taskIDs[0]) {
				have.taskIDs = append(have.taskIDs, b.taskIDs[0])
			}
			return
		}
		byKey[key] = &b
		order = append(order, key)
	}
	assigned, err := g.s.cfg.Log.Read(ctx, events.FollowOptions{Filters: []string{events.TypeFilter(events.AggregateTask, events.TaskWorktreeAssigned)}})
	if err != nil {
		return nil, nil, err
	}
	for _, ev := range assigned {
		var d events.TaskWorktreeAssignedData
		if err := ev.Decode(&d); err != nil || ev.Seq > g.last {
			continue
		}
		add(madeBranch{kind: GCRunBranch, repo: d.Repository, branch: d.Branch, runID: d.RunID, taskIDs: []string{ev.TaskID}})
	}
	attempts, err := g.s.cfg.Log.Read(ctx, events.FollowOptions{Filters: []string{events.TypeFilter(events.AggregateTask, events.GroundhogAttempt)}})
	if err != nil {
		return nil, nil, err
	}
	for _, ev := range attempts {
		var d events.GroundhogAttemptData
		if err := ev.Decode(&d); err != nil || ev.Seq > g.last || d.ScratchBranch == "" {
			continue
		}
		v, err := taskOf(ev.TaskID)
		if errors.Is(err, events.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		add(madeBranch{kind: GCScratchBranch, repo: v.Workspace, branch: d.ScratchBranch, runID: d.RunID, taskIDs: []string{ev.TaskID}})
	}
	var out []madeBranch
	for _, key := range order {
		b := byKey[key]
		for _, id := range b.taskIDs {
			if _, err := taskOf(id); err != nil && !errors.Is(err, events.ErrNotFound) {
				return nil, nil, err
			}
		}
		out = append(out, *b)
	}
	return out, tasks, nil
}

func (g *gcPass) branches(ctx context.Context) ([]GCEntry, error) {
	made, tasks, err := g.madeBranches(ctx)
	if err != nil {
		return nil, err
	}
	out := []GCEntry{}
	heads := map[string]map[string]string{} // repository → branch → commit
	mains := map[string]*gitops.Repo{}      // a work tree → its repository's main one (nil: gone)
	for _, b := range made {
		if !b.named() {
			continue
		}
		main, ok := mains[b.repo]
		if !ok {
			main, _ = g.s.mainOf(ctx, b.repo)
			mains[b.repo] = main
		}
		if main == nil {
			continue // the repository is gone, and its branches with it
		}
		list, ok := heads[main.Dir]
		if !ok {
			if list, err = main.Branches(ctx, ""); err != nil {
				return nil, err
			}
			heads[main.Dir] = list
		}
		sha, ok := list[b.branch]
		if !ok {
			continue // already gone
		}
		entry, err := g.branch(ctx, main, b, sha, tasks)
		if err != nil {
			return nil, err
		}
		out = append(out, entry)
	}
	slices.SortFunc(out, func(a, b GCEntry) int {
		return strings.Compare(a.Repository+"\x00"+a.Branch, b.Repository+"\x00"+b.Branch)
	})
	return out, nil
}

func (g *gcPass) branch(ctx context.Context, main *gitops.Repo, b madeBranch, sha string, tasks map[string]*projector.TaskView) (GCEntry, error) {
	entry := GCEntry{Kind: b.kind, Repository: main.Dir, Branch: b.branch, Commit: sha, RunID: b.runID, TaskIDs: b.taskIDs, Outcome: GCKept}
	state, keep, err := g.finished(ctx, b.runID)
	if err != nil || keep != "" {
		entry.RunState, entry.Reason = state, keep
		return entry, err
	}
	entry.RunState = state
	archived := true
	for _, id := range b.taskIDs {
		v := tasks[id]
		if v == nil || events.TaskStatusMeaning(v.Status) != events.TaskArchived {
			archived = false
		}
		if b.kind == GCScratchBranch && (v == nil || !taskFinished(v)) {
			status := "gone"
			if v != nil {
				status = v.Status
			}
			entry.Reason = "its task " + id + " is " + status + ": Groundhog may still want its attempts"
			return entry, nil
		}
	}
	if path, err := main.CheckedOut(ctx, b.branch); err != nil {
		return entry, err
	} else if path != "" && !g.gone[canonical(path)] {
		entry.Reason = "it is checked out at " + path
		return entry, nil
	}
	if entry.Commits, err = main.UnmergedCommits(ctx, b.branch); err != nil {
		return entry, err
	}
	why := "every commit it holds is on another branch, a remote or a tag"
	if entry.Commits > 0 {
		own := fmt.Sprintf("it holds %d commit(s) no other branch, remote or tag has", entry.Commits)
		switch {
		case !archived:
			entry.Reason = own + " (once its task is archived, --force removes it)"
			return entry, nil
		case !g.opts.Force:
			entry.Reason = own + " (its task is archived: --force removes it)"
			return entry, nil
		}
		why = own + ", dropped by --force: its task is archived"
	}
	if !g.opts.Apply {
		entry.Outcome, entry.Reason = GCWouldRemove, why
		return entry, nil
	}
	defer g.s.lockRepo(main.Dir)()
	switch err := main.DeleteBranch(ctx, b.branch, sha); {
	case errors.Is(err, gitops.ErrBranchMoved), errors.Is(err, gitops.ErrBranchExists):
		entry.Reason = err.Error()
		return entry, nil
	case err != nil:
		return entry, err
	}
	g.s.log.Info("removed a finished run's branch", "run", b.runID, "repository", main.Dir, "branch", b.branch, "at", short(sha))
	entry.Outcome, entry.Reason = GCRemoved, why
	return entry, nil
}
