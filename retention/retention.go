// Package retention applies the project's retention policy (DESIGN §15,
// docs/architecture/retention.md): it selects the finished runs, with their
// whole trees, and the done or archived tasks the policy lets go, exports
// their events to an archive file, and removes them from the log with a
// signed log.removed record before the purge; then it rebuilds the views
// from what the log retains and snapshots them. Nothing is removed that is
// not in an archive on disk first, and a pass interrupted anywhere is
// finished by the next.
package retention

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/failpoint"
	"github.com/orbitrun/orbit/internal/lease"
	"github.com/orbitrun/orbit/projector"
)

// FailpointExported: the archive is on disk, nothing recorded or purged.
const FailpointExported = "retention-exported"

// perRecord bounds the runs and tasks one log.removed names, so that a
// record stays well within an event's inline budget.
const perRecord = 500

// Config is what a Collector works on.
type Config struct {
	Log   *events.Log
	Views *projector.Projector
	// Root is the project's root: a relative archive_dir is under it.
	Root string
	// Policy returns the retention block as the project's configuration
	// has it now (read at every pass).
	Policy func() assets.RetentionConfig
	// AfterCollect, when set, ends every pass that was not a dry run,
	// removal or not: the collection of what finished work leaves
	// behind outside the log (blobs, branches, worktrees). Its error is
	// the pass's.
	AfterCollect func(ctx context.Context) error
	// Now is the clock (nil: time.Now).
	Now    func() time.Time
	Logger *slog.Logger
	// Leases is the orbit_leases bucket, where the engines sharing a log
	// take the lease of its passes (LeaseKey) as Engine; nil: this
	// collector is the log's only one. TakeOver (an embedded store, one
	// engine) takes another engine's lease at once: that is a dead
	// one's. LeaseTTL is the lease's (0: DefaultLeaseTTL).
	Leases   *events.KV
	Engine   string
	TakeOver bool
	LeaseTTL time.Duration
}

// Collector applies the policy. Its passes run one at a time (the
// engine's loop and orbit log collect may ask at once), and of the
// engines sharing a log only the holder of the pass's lease makes them.
type Collector struct {
	cfg     Config
	mu      sync.Mutex
	lease   *lease.Lease
	holding atomic.Bool // this engine took the lease and has not lost it
	// afterSelect, when set, is called between a pass's selection and
	// its export: the window in which a run made live again must not be
	// removed (set by the tests alone).
	afterSelect func()
	// deniedSaid: the log's refusal of purges was logged (once; later
	// passes say it in their reports alone). Under mu.
	deniedSaid bool
}

// New returns a Collector.
func New(cfg Config) *Collector {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Collector{cfg: cfg, lease: newLease(cfg)}
}

// Report is what a pass did, or with DryRun would do.
type Report struct {
	DryRun bool `json:"dry_run"`
	// Runs and Tasks are those removed (with DryRun, those selected).
	Runs  []string `json:"runs"`
	Tasks []string `json:"tasks"`
	// Events is how many events were archived and removed.
	Events int `json:"events"`
	// Archive is the archive written (empty: none).
	Archive string `json:"archive,omitempty"`
	// Records are the sequences of the log.removed records appended.
	Records []uint64 `json:"records,omitempty"`
	// Kept says why nothing was removed, when it was not.
	Kept string `json:"kept,omitempty"`
}

// Selection is what the policy lets go, as the views have it.
type Selection struct {
	Runs  []string
	Tasks []string
	// trees are Runs by tree (a root and what it started), which go
	// together or not at all.
	trees [][]string
}

// Select returns the runs and tasks policy lets go at now: every run of a
// tree (a root run and the runs it started, at any depth) when the whole
// tree is finished and its root is older than runs.older_than or beyond
// runs.keep_per_job of its job's finished roots, newest first; every task
// done or archived whose last change is older than tasks.older_than.
func Select(ctx context.Context, views *projector.Projector, policy assets.RetentionConfig, now time.Time) (Selection, error) {
	var sel Selection
	if !policy.Enabled() {
		return sel, nil
	}
	return selectBy(ctx, views, policy, now, "")
}

// SelectBefore returns what orbit log export --before archives: every
// finished run tree that ended before before (of job's root runs alone
// when job is set) and, without job, every task done or archived whose
// last change came before it.
func SelectBefore(ctx context.Context, views *projector.Projector, before time.Time, job string, now time.Time) (Selection, error) {
	age := now.Sub(before)
	policy := assets.RetentionConfig{Runs: assets.RunRetention{OlderThan: max(age, 1)}}
	if job == "" {
		policy.Tasks.OlderThan = max(age, 1)
	}
	return selectBy(ctx, views, policy, now, job)
}

func selectBy(ctx context.Context, views *projector.Projector, policy assets.RetentionConfig, now time.Time, job string) (Selection, error) {
	var sel Selection
	if policy.Runs.OlderThan > 0 || policy.Runs.KeepPerJob > 0 {
		runs, err := views.Runs(ctx, projector.RunFilter{})
		if err != nil {
			return sel, err
		}
		sel.trees = selectRuns(runs, policy.Runs, now, job)
		for _, t := range sel.trees {
			sel.Runs = append(sel.Runs, t...)
		}
		slices.Sort(sel.Runs)
	}
	if policy.Tasks.OlderThan > 0 {
		tasks, err := views.Tasks(ctx)
		if err != nil {
			return sel, err
		}
		for _, t := range tasks {
			switch events.TaskStatusMeaning(t.Status) {
			case events.TaskDone, events.TaskArchived:
			default:
				continue
			}
			if t.UpdatedAt != nil && now.Sub(*t.UpdatedAt) > policy.Tasks.OlderThan {
				sel.Tasks = append(sel.Tasks, t.ID)
			}
		}
		slices.Sort(sel.Tasks)
	}
	return sel, nil
}

// tree is a root run and what it started.
type tree struct {
	root     *projector.RunView
	runs     []string
	finished bool
	ended    time.Time // the latest end of its runs
}

// selectRuns applies the runs rules to every run the views hold, and
// returns the trees that go.
func selectRuns(runs []projector.RunView, rule assets.RunRetention, now time.Time, job string) [][]string {
	byID := make(map[string]*projector.RunView, len(runs))
	for i := range runs {
		byID[runs[i].ID] = &runs[i]
	}
	rootOf := func(r *projector.RunView) string {
		for seen := 0; r.Parent != nil && seen < len(runs); seen++ {
			p, ok := byID[r.Parent.RunID]
			if !ok {
				break // its parent is gone already: the run is its tree's root now
			}
			r = p
		}
		return r.ID
	}
	trees := map[string]*tree{}
	for i := range runs {
		r := &runs[i]
		id := rootOf(r)
		t := trees[id]
		if t == nil {
			t = &tree{root: byID[id], finished: true}
			trees[id] = t
		}
		t.runs = append(t.runs, r.ID)
		if !events.Terminal(r.State) || r.FinishedAt == nil {
			t.finished = false
		} else if r.FinishedAt.After(t.ended) {
			t.ended = *r.FinishedAt
		}
	}
	byJob := map[string][]*tree{}
	for _, t := range trees {
		if t.finished && (job == "" || t.root.Job == job) {
			byJob[t.root.Job] = append(byJob[t.root.Job], t)
		}
	}
	var out [][]string
	for _, ts := range byJob {
		// Newest first: by the root's end, then its id (a ULID).
		slices.SortFunc(ts, func(a, b *tree) int {
			if c := b.root.FinishedAt.Compare(*a.root.FinishedAt); c != 0 {
				return c
			}
			return cmp.Compare(b.root.ID, a.root.ID)
		})
		for i, t := range ts {
			old := rule.OlderThan > 0 && now.Sub(t.ended) > rule.OlderThan
			beyond := rule.KeepPerJob > 0 && i >= rule.KeepPerJob
			if old || beyond {
				slices.Sort(t.runs)
				out = append(out, t.runs)
			}
		}
	}
	slices.SortFunc(out, func(a, b []string) int { return cmp.Compare(a[0], b[0]) })
	return out
}

// Collect makes one pass: it finishes a removal an earlier pass left
// half done, selects what the policy lets go and, unless dryRun, archives
// it, records and purges it, rebuilds the views from what the log
// retains and snapshots them, and calls AfterCollect.
func (c *Collector) Collect(ctx context.Context, dryRun bool) (Report, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	policy := c.cfg.Policy()
	rep := Report{DryRun: dryRun, Runs: []string{}, Tasks: []string{}}
	if dryRun {
		err := c.pass(ctx, policy, true, &rep)
		return rep, err
	}
	if err := c.take(ctx); err != nil {
		return rep, err
	}
	err := c.held(ctx, func(ctx context.Context) error { return c.pass(ctx, policy, false, &rep) })
	return rep, err
}

// pass is Collect's work, under the pass's lease unless dryRun.
func (c *Collector) pass(ctx context.Context, policy assets.RetentionConfig, dryRun bool, rep *Report) error {
	if !dryRun {
		if err := c.finish(ctx); err != nil {
			return err
		}
	}
	// The views first catch up with the log: a run they show finished
	// may have been made live again since (a budget raised).
	last, err := c.cfg.Log.LastSeq(ctx)
	if err != nil {
		return err
	}
	if err := c.cfg.Views.WaitFor(ctx, last); err != nil {
		return err
	}
	sel, err := Select(ctx, c.cfg.Views, policy, c.cfg.Now())
	if err != nil {
		return err
	}
	if dryRun {
		rep.Runs, rep.Tasks = append(rep.Runs, sel.Runs...), append(rep.Tasks, sel.Tasks...)
		return nil
	}
	if len(sel.Runs)+len(sel.Tasks) > 0 {
		if err := c.remove(ctx, policy, sel, last, rep); err != nil {
			return err
		}
	}
	if c.cfg.AfterCollect != nil {
		if err := c.cfg.AfterCollect(ctx); err != nil {
			return fmt.Errorf("after the collection: %w", err)
		}
	}
	return nil
}

// remove archives sel, then records and purges it in records of at most
// perRecord runs and tasks, one record purged before the next is
// appended (so only the last record can be left half purged: finish),
// then rebuilds the views and snapshots them.
func (c *Collector) remove(ctx context.Context, policy assets.RetentionConfig, sel Selection, selected uint64, rep *Report) error {
	if c.afterSelect != nil {
		c.afterSelect()
	}
	allowed, err := c.cfg.Log.PurgeAllowed(ctx)
	if err != nil {
		return err
	}
	if !allowed {
		rep.Kept = fmt.Sprintf("the log's stream %s denies purges (it was made before retention, and JetStream cannot lift that); nothing is archived or removed (orbit doctor says what to do)", events.EventsStream)
		if !c.deniedSaid {
			c.cfg.Logger.Warn(rep.Kept)
			c.deniedSaid = true
		}
		return nil
	}
	through, err := c.cfg.Log.LastSeq(ctx)
	if err != nil {
		return err
	}
	now := c.cfg.Now().UTC()
	path := fmt.Sprintf("%s/%s-%d.orbit-archive.gz", policy.Dir(c.cfg.Root), now.Format("20060102T150405Z"), through)
	exp, err := c.cfg.Log.Export(ctx, path, events.ExportSelection{Runs: sel.Runs, Tasks: sel.Tasks, Through: through})
	if err != nil {
		return fmt.Errorf("exporting to %s: %w", path, err)
	}
	rep.Archive = path
	failpoint.Hit(FailpointExported)
	// Each record is made only after what it names is checked again: a
	// run or task with an event past selected, the log's last sequence
	// when the views were read, was made live again since the selection
	// (a budget raised, a task reopened), and its tree stays whole in the
	// log (it stays in the archive too, which the records do not name it
	// in).
	moved := &movedSince{through: selected, runs: map[string]bool{}, tasks: map[string]bool{}}
	for _, ch := range chunks(sel) {
		if err := moved.read(ctx, c.cfg.Log); err != nil {
			return err
		}
		runs, tasks := moved.keep(ch)
		d := exp.Removal(runs, tasks)
		if d.Count == 0 {
			continue
		}
		r, err := c.cfg.Log.Remove(ctx, d)
		if err != nil {
			return fmt.Errorf("removing what %s archived: %w", path, err)
		}
		rep.Records = append(rep.Records, r.Seq)
		rep.Events += int(d.Count)
		rep.removed(d)
	}
	slices.Sort(rep.Runs)
	slices.Sort(rep.Tasks)
	rep.Kept = moved.kept()
	c.cfg.Logger.Info("retention archived and removed finished work from the log", "runs", len(rep.Runs), "tasks", len(rep.Tasks),
		"events", rep.Events, "archive", path)
	return c.rebuild(ctx)
}

// rebuild makes the views the fold of what the log retains (a replay,
// swapped in) and snapshots them.
func (c *Collector) rebuild(ctx context.Context) error {
	if _, err := c.cfg.Views.Replay(ctx, false); err != nil {
		return fmt.Errorf("rebuilding the views after a removal: %w", err)
	}
	return c.cfg.Views.Snapshot()
}

// finish completes what a pass interrupted after a record left: the
// purge of the last record (records are purged one by one, in order),
// and the views' rebuild when they still hold what it removed.
func (c *Collector) finish(ctx context.Context) error {
	recs, err := c.cfg.Log.Removals(ctx)
	if err != nil || len(recs) == 0 {
		return err
	}
	last := recs[len(recs)-1]
	if err := c.cfg.Log.Purge(ctx, last.LogRemovedData); err != nil {
		if errors.Is(err, events.ErrPurgeDenied) {
			return nil
		}
		return err
	}
	if err := c.cfg.Views.WaitFor(ctx, last.Seq); err != nil {
		return err
	}
	stale := false
	for _, id := range last.Runs {
		if _, err := c.cfg.Views.RunView(ctx, id); err == nil {
			stale = true
			break
		}
	}
	for _, id := range last.Tasks {
		if _, err := c.cfg.Views.Task(ctx, id); err == nil {
			stale = true
			break
		}
	}
	if !stale {
		return nil
	}
	c.cfg.Logger.Info("finishing a removal an earlier pass left: rebuilding the views", "record", last.Seq)
	return c.rebuild(ctx)
}

// Run applies the policy every retention.every until ctx ends, from the
// first interval on; a pass that fails is logged and tried again at the
// next. A policy that removes nothing makes no pass. Of the engines
// sharing a log, the one that holds the pass's lease makes the passes
// and renews it between them; the others try at each of their intervals,
// and take the passes over once it lapses (its engine died) or is given
// up (its engine stopped).
func (c *Collector) Run(ctx context.Context) {
	defer c.release()
	renew := time.NewTicker(c.renewEvery())
	defer renew.Stop()
	next := time.NewTimer(c.cfg.Policy().Interval())
	defer next.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-renew.C:
			c.renew(ctx)
			continue
		case <-next.C:
		}
		next.Reset(c.cfg.Policy().Interval())
		if !c.cfg.Policy().Enabled() {
			continue
		}
		_, err := c.Collect(ctx, false)
		switch {
		case err == nil || ctx.Err() != nil:
		case errors.Is(err, ErrElsewhere):
			c.cfg.Logger.Debug("retention pass left to the engine that holds it", "err", err)
		default:
			c.cfg.Logger.Error("retention pass failed; tried again at the next", "err", err)
		}
	}
}

// renewEvery is how often Run renews the lease it holds.
func (c *Collector) renewEvery() time.Duration {
	if c.lease.KV == nil {
		return time.Hour // no bucket: nothing to renew
	}
	return c.lease.TTL / 3
}
