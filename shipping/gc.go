package shipping

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/gitops"
)

// GC outcomes of a worktree.
const (
	GCRemoved     = "removed"
	GCWouldRemove = "would_remove"
	GCKept        = "kept"
)

// GCEntry is what GC did, or would do, with one worktree.
type GCEntry struct {
	Path     string `json:"path"`
	RunID    string `json:"run_id"`
	RunState string `json:"run_state,omitempty"`
	Branch   string `json:"branch,omitempty"`
	Outcome  string `json:"outcome"` // GCRemoved, GCWouldRemove or GCKept
	Reason   string `json:"reason,omitempty"`
}

// GCReport is the outcome of GC.
type GCReport struct {
	DryRun    bool      `json:"dry_run"`
	Worktrees []GCEntry `json:"worktrees"`
}

// GC reaps the worktrees of finished shipping runs: each directory of
// WorktreesDir is a run's (named by its id). A worktree is removed, its
// branch kept, when its run has ended and it holds no change (tracked or
// untracked); every other one is kept, with the reason. Without apply
// nothing is removed: the report says what would be.
func (s *Service) GC(ctx context.Context, apply bool) (*GCReport, error) {
	rep := &GCReport{DryRun: !apply, Worktrees: []GCEntry{}}
	entries, err := os.ReadDir(WorktreesDir(s.cfg.Root))
	if errors.Is(err, fs.ErrNotExist) {
		return rep, nil
	}
	if err != nil {
		return nil, err
	}
	last, err := s.cfg.Log.LastSeq(ctx)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		entry, err := s.gcOne(ctx, filepath.Join(WorktreesDir(s.cfg.Root), e.Name()), e.Name(), last, apply)
		if err != nil {
			return nil, err
		}
		rep.Worktrees = append(rep.Worktrees, entry)
	}
	slices.SortFunc(rep.Worktrees, func(a, b GCEntry) int { return strings.Compare(a.RunID, b.RunID) })
	return rep, nil
}

func (s *Service) gcOne(ctx context.Context, path, runID string, last uint64, apply bool) (GCEntry, error) {
	entry := GCEntry{Path: path, RunID: runID, Outcome: GCKept}
	run, err := s.cfg.Run(ctx, runID, last)
	if errors.Is(err, events.ErrNotFound) {
		entry.Reason = "no run " + runID + " in the log: not a worktree Orbit made"
		return entry, nil
	}
	if err != nil {
		return entry, err
	}
	entry.RunState = run.State
	if !events.Terminal(run.State) {
		entry.Reason = "its run is " + run.State
		return entry, nil
	}
	wt, err := s.open(path)
	if err != nil {
		entry.Reason = fmt.Sprintf("not a git work tree: %v", err)
		return entry, nil
	}
	if entry.Branch, err = wt.CurrentBranch(ctx); err != nil {
		entry.Reason = err.Error()
		return entry, nil
	}
	main, err := s.mainOf(ctx, path)
	if err != nil {
		return entry, err
	}
	if !apply {
		entry.Outcome = GCWouldRemove
		if changed, err := wt.Changes(ctx); err != nil {
			return entry, err
		} else if len(changed) > 0 {
			entry.Outcome, entry.Reason = GCKept, "it has changes nobody committed: "+strings.Join(changed, ", ")
		}
		return entry, nil
	}
	defer s.lockRepo(main.Dir)()
	if err := main.RemoveWorktree(ctx, path, false); errors.Is(err, gitops.ErrDirty) {
		entry.Reason = err.Error()
		return entry, nil
	} else if err != nil {
		return entry, err
	}
	s.log.Info("removed a finished run's worktree", "run", runID, "path", path, "branch", entry.Branch)
	entry.Outcome = GCRemoved
	return entry, nil
}
