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
	"time"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/gitops"
	"github.com/orbitrun/orbit/projector"
)

// GC outcomes of a worktree or a branch.
const (
	GCRemoved     = "removed"
	GCWouldRemove = "would_remove"
	GCKept        = "kept"
)

// Kinds of what GC collects.
const (
	GCWorktree      = "worktree"       // a shipping run's worktree
	GCRunBranch     = "run_branch"     // a shipping run's branch
	GCScratchBranch = "scratch_branch" // a Groundhog attempt's scratch branch
)

// DefaultGCGrace is how long after its run finished a worktree or branch
// is kept by default.
const DefaultGCGrace = assets.DefaultGCGrace

// GraceString is d as a Go duration without its zero tails: 1h, 30m,
// 1h30m, 90s.
func GraceString(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// GCOptions says what GC looks at and what it may do. The zero value is a
// dry run of worktrees and branches with the default grace.
type GCOptions struct {
	// Apply removes what is garbage; without it nothing is touched and
	// the report says what would be.
	Apply bool
	// Worktrees and Branches pick the kinds; both false means both.
	Worktrees, Branches bool
	// Grace keeps what belongs to a run that finished less than Grace ago
	// (0: DefaultGCGrace; negative: no grace).
	Grace time.Duration
	// Force also removes a branch that holds commits nothing else has,
	// when every task it was made for is archived.
	Force bool
	// Now is the time the grace is counted back from (zero: the clock).
	Now time.Time
}

func (o *GCOptions) setDefaults() {
	if !o.Worktrees && !o.Branches {
		o.Worktrees, o.Branches = true, true
	}
	switch {
	case o.Grace == 0:
		o.Grace = DefaultGCGrace
	case o.Grace < 0:
		o.Grace = 0
	}
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
}

// GCEntry is what GC did, or would do, with one worktree or branch.
type GCEntry struct {
	Kind       string   `json:"kind"` // GCWorktree, GCRunBranch or GCScratchBranch
	Path       string   `json:"path,omitempty"`
	Repository string   `json:"repository,omitempty"`
	RunID      string   `json:"run_id,omitempty"`
	RunState   string   `json:"run_state,omitempty"`
	TaskIDs    []string `json:"task_ids,omitempty"`
	Branch     string   `json:"branch,omitempty"`
	Commit     string   `json:"commit,omitempty"` // the branch's head
	// Commits counts the branch's commits no other ref holds.
	Commits int    `json:"commits,omitempty"`
	Outcome string `json:"outcome"` // GCRemoved, GCWouldRemove or GCKept
	Reason  string `json:"reason,omitempty"`
}

// GCReport is the outcome of GC.
type GCReport struct {
	DryRun    bool      `json:"dry_run"`
	Worktrees []GCEntry `json:"worktrees"`
	Branches  []GCEntry `json:"branches"`
}

// GC reaps what finished shipping runs and Groundhog attempts leave in git:
//
//   - the worktrees of shipping runs (each directory of WorktreesDir, named
//     by its run's id): removed, their branch kept, when the run ended
//     more than the grace ago and the worktree holds no change (tracked or
//     untracked);
//   - the branches shipping runs made (as task.worktree_assigned records
//     them, named <prefix>/…-<run>) and the scratch branches of Groundhog
//     attempts (as groundhog.attempt.started records them, named
//     groundhog/<task>/day-<n>), in the repository they were made in:
//     removed when their run ended more than the grace ago (a scratch
//     branch: when its task is done, archived or rejected too), no work
//     tree has them checked out, and every commit they hold is on another
//     ref (merged, pushed, tagged); with Force also when they hold commits
//     of their own and every task they were made for is archived.
//
// Everything else is kept, and a worktree or branch GC looked at and kept
// is in the report with the reason. A branch nothing in the log records is
// never looked at, whatever its name.
func (s *Service) GC(ctx context.Context, opts GCOptions) (*GCReport, error) {
	opts.setDefaults()
	rep := &GCReport{DryRun: !opts.Apply, Worktrees: []GCEntry{}, Branches: []GCEntry{}}
	last, err := s.cfg.Log.LastSeq(ctx)
	if err != nil {
		return nil, err
	}
	g := &gcPass{s: s, opts: opts, last: last, gone: map[string]bool{}}
	if opts.Worktrees {
		if rep.Worktrees, err = g.worktrees(ctx); err != nil {
			return nil, err
		}
	}
	if opts.Branches {
		if rep.Branches, err = g.branches(ctx); err != nil {
			return nil, err
		}
	}
	return rep, nil
}

// gcPass is one GC.
type gcPass struct {
	s    *Service
	opts GCOptions
	last uint64
	// gone holds the worktrees this pass removes (or, in a dry run, would
	// remove): their branches are no longer checked out.
	gone map[string]bool
}

// finished returns the run's state, and why what it left must stay: the
// run goes on, or ended within the grace.
func (g *gcPass) finished(ctx context.Context, runID string) (state, keep string, err error) {
	run, err := g.s.cfg.Run(ctx, runID, g.last)
	if errors.Is(err, events.ErrNotFound) {
		return "", "no run " + runID + " in the log: not made by Orbit", nil
	}
	if err != nil {
		return "", "", err
	}
	if !events.Terminal(run.State) {
		return run.State, "its run is " + run.State, nil
	}
	if run.FinishedAt != nil && g.opts.Now.Sub(*run.FinishedAt) < g.opts.Grace {
		return run.State, fmt.Sprintf("its run finished %s ago, within the grace of %s", GraceString(g.opts.Now.Sub(*run.FinishedAt).Round(time.Second)), GraceString(g.opts.Grace)), nil
	}
	return run.State, "", nil
}

func (g *gcPass) worktrees(ctx context.Context) ([]GCEntry, error) {
	out := []GCEntry{}
	entries, err := os.ReadDir(WorktreesDir(g.s.cfg.Root))
	if errors.Is(err, fs.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		entry, err := g.worktree(ctx, filepath.Join(WorktreesDir(g.s.cfg.Root), e.Name()), e.Name())
		if err != nil {
			return nil, err
		}
		out = append(out, entry)
	}
	slices.SortFunc(out, func(a, b GCEntry) int { return strings.Compare(a.RunID, b.RunID) })
	return out, nil
}

func (g *gcPass) worktree(ctx context.Context, path, runID string) (GCEntry, error) {
	entry := GCEntry{Kind: GCWorktree, Path: path, RunID: runID, Outcome: GCKept}
	state, keep, err := g.finished(ctx, runID)
	if err != nil || keep != "" {
		entry.RunState, entry.Reason = state, keep
		return entry, err
	}
	entry.RunState = state
	wt, err := g.s.open(path)
	if err != nil {
		entry.Reason = fmt.Sprintf("not a git work tree: %v", err)
		return entry, nil
	}
	if entry.Branch, err = wt.CurrentBranch(ctx); err != nil {
		entry.Reason = err.Error()
		return entry, nil
	}
	main, err := g.s.mainOf(ctx, path)
	if err != nil {
		return entry, err
	}
	entry.Repository = main.Dir
	if !g.opts.Apply {
		changed, err := wt.Changes(ctx)
		if err != nil {
			return entry, err
		}
		if len(changed) > 0 {
			entry.Reason = "it has changes nobody committed: " + strings.Join(changed, ", ")
			return entry, nil
		}
		entry.Outcome, entry.Reason = GCWouldRemove, "its run is "+state+" and it holds no change"
		g.gone[canonical(path)] = true
		return entry, nil
	}
	defer g.s.lockRepo(main.Dir)()
	if err := main.RemoveWorktree(ctx, path, false); errors.Is(err, gitops.ErrDirty) {
		entry.Reason = err.Error()
		return entry, nil
	} else if err != nil {
		return entry, err
	}
	g.s.log.Info("removed a finished run's worktree", "run", runID, "path", path, "branch", entry.Branch)
	entry.Outcome, entry.Reason = GCRemoved, "its run is "+state+" and it held no change"
	g.gone[canonical(path)] = true
	return entry, nil
}

// taskFinished reports whether a task's work is over (done, archived or
// rejected), so its scratch branches are no one's.
func taskFinished(v *projector.TaskView) bool {
	switch events.TaskStatusMeaning(v.Status) {
	case events.TaskDone, events.TaskArchived, events.TaskRejected:
		return true
	}
	return false
}

// canonical is path cleaned, with its symbolic links resolved where they
// exist: git lists work trees by their real paths.
func canonical(path string) string {
	if real, err := filepath.EvalSymlinks(path); err == nil {
		return real
	}
	return filepath.Clean(path)
}
