package executor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/orbitrun/orbit/activity"
	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/lease"
	"github.com/orbitrun/orbit/interpreter"
)

// Config configures an Orchestrator. The zero value of every field but Log
// and Root means its default.
type Config struct {
	// Log is the event log the orchestrator reads and writes.
	Log *events.Log
	// ActiveRuns lists the runs that are not terminal, in the order they
	// were requested. The orchestrator calls it once at start to resume
	// them; the projector's active-runs index provides it.
	ActiveRuns func(ctx context.Context) ([]string, error)
	// ViewsApplied returns the last log sequence the views behind
	// ActiveRuns have applied (nil: the start of the log). On a shared
	// server the global queue is read from the log from there, or from the
	// request of the oldest unfinished run if that is earlier.
	ViewsApplied func() uint64
	// Engine identifies this engine in leases and events (default: a new id).
	Engine string
	// Root is the project directory: the default workspace of steps.
	Root string
	// Jobs looks jobs up by name for job.invoke (nil: child jobs fail),
	// with backend: auto resolved to backend (http or cli; empty: the
	// engine's runtime.backend), the one the invoking run's job had.
	Jobs func(name, backend string) (*assets.Job, error)
	// Admission re-checks, before an invoke_and_wait step dispatches its
	// child, that the tasks it names (admission_task_ids) may still enter
	// the workflow (admission_workflow); nil checks nothing. What it
	// answers is recorded before anything depends on it.
	Admission func(ctx context.Context, taskIDs []string, workflow string) (*Admission, error)
	// Env looks up environment variables for {{ env.NAME }} (default
	// os.LookupEnv).
	Env func(name string) (string, bool)
	// Settings returns the settings of the project's configuration as
	// they are now (MaxChildDepth is read at each job.invoke); nil: every
	// default.
	Settings func() activity.Settings
	// LeaseTTL is how long a run lease lasts without renewal (default 15s).
	LeaseTTL time.Duration
	// Logger receives operational messages (nil discards them).
	Logger *slog.Logger
}

func (c *Config) setDefaults() {
	if c.Engine == "" {
		c.Engine = events.NewID()
	}
	if c.Env == nil {
		c.Env = os.LookupEnv
	}
	if c.LeaseTTL == 0 {
		c.LeaseTTL = 15 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// Orchestrator takes run requests, admits runs within their job's
// max_active_runs, and interprets each admitted run under a lease. After a
// restart it resumes every run the log says is not finished.
type Orchestrator struct {
	cfg Config
	log *slog.Logger

	mu     sync.Mutex
	runs   map[string]*runCtl   // every run admitted (and, embedded, queued) by this engine
	queued map[string][]*runCtl // embedded: job → runs waiting for a slot, in arrival order
	wg     sync.WaitGroup

	// The run requests being handled (see requests.go).
	lastRequest *turn // the last delivered; the consumer's goroutine's
	requests    sync.WaitGroup

	// The global queue of a shared server (see admission.go).
	waiting    map[string][]*waitingRun // job → runs requested, not started nor finished, in log order
	waitingJob map[string]string        // run → its job, for the runs in waiting
	dirty      map[string]bool          // jobs whose queue is to be tried
	kicked     chan struct{}
	queueReady bool            // the queue has caught up with the log
	requested  map[string]bool // runs of the queue whose request this engine recorded

	pruned map[string]time.Time // root → when this engine last looked for stale runs of its tree

	// The jobs' pauses, as read, on an embedded store (see jobpause.go).
	pauses pauses

	// runCtx is Run's context: the runs a caller of PauseJob starts
	// live as long as the orchestrator, not the caller's request.
	runCtx context.Context

	// The history feed of an embedded store (see history_feed.go).
	feedMu sync.Mutex
	feed   *historyFeed
}

// runCtl is the orchestrator's handle on one run: what its request says of
// it, and where this engine's admission of it stands.
type runCtl struct {
	requestFacts
	started bool   // it holds its slot: run.started is in the log, with no run.finished since it last started or resumed
	slot    string // the slot key it took on a shared server
	cancel  context.CancelCauseFunc
	again   bool // its budget was raised while it ended: admit it again
}

// requestFacts is what a run's run.requested says of it: the same on every
// engine and for the run's whole life.
//
// IMPORTANT: a run admitted afresh (from the global queue, or again after
// a budget raise) is built from its requestFacts alone, as
// &runCtl{requestFacts: …}; so everything of the request that a run needs
// belongs here, never beside it on runCtl, where a fresh admission would
// drop it.
type requestFacts struct {
	id      string
	job     *assets.Job
	parent  string // the run that started this one with job.invoke
	root    string // see events.RunRequestedData.Root
	depth   int    // see events.RunRequestedData.Depth
	backend string // see events.RunRequestedData.Backend
	seq     uint64 // of its run.requested
	// traceparent is the root's caller's (see
	// events.RunRequestedData.Traceparent).
	traceparent string
	protocol    int // see events.RunRequestedData.Protocol
}

// factsOf is the requestFacts of run id, whose run.requested at seq
// records d and job (d.Job decoded).
func factsOf(id string, seq uint64, job *assets.Job, d *events.RunRequestedData) requestFacts {
	f := requestFacts{id: id, job: job, root: d.Root, depth: d.Depth, backend: d.Backend, seq: seq, traceparent: d.Traceparent, protocol: d.Protocol}
	if d.Parent != nil {
		f.parent = d.Parent.RunID
	}
	return f
}

// NewOrchestrator returns an orchestrator; Run starts it.
func NewOrchestrator(cfg Config) *Orchestrator {
	cfg.setDefaults()
	return &Orchestrator{
		cfg:        cfg,
		log:        cfg.Logger.With("component", "orchestrator"),
		runs:       make(map[string]*runCtl),
		queued:     make(map[string][]*runCtl),
		waiting:    make(map[string][]*waitingRun),
		waitingJob: make(map[string]string),
		dirty:      make(map[string]bool),
		kicked:     make(chan struct{}, 1),
		requested:  make(map[string]bool),
		pruned:     make(map[string]time.Time),
	}
}

// Run resumes unfinished runs, then takes run requests until ctx ends. Runs
// in flight stop where they are (their lease lapses) and resume at the next
// start. A full disk pauses the orchestrator: its writes wait for space.
func (o *Orchestrator) Run(ctx context.Context) error {
	err := o.run(events.WaitForSpace(ctx))
	if ctx.Err() != nil {
		return nil // stopped while starting: not a failure
	}
	return err
}

func (o *Orchestrator) run(ctx context.Context) error {
	o.mu.Lock()
	o.runCtx = ctx
	o.mu.Unlock()
	raises, err := o.watchRaises(ctx)
	if err != nil {
		return err
	}
	defer raises()
	from, err := o.recover(ctx)
	if err != nil {
		return fmt.Errorf("resuming runs: %w", err)
	}
	var cancels func()
	if o.shared() {
		// The global queue's feed sees the cancels too, in log order.
		cancels = o.followQueue(ctx, from)
	} else if cancels, err = o.watchCancels(ctx); err != nil {
		return err
	}
	stop, err := o.cfg.Log.Consume(ctx, events.ConsumerSpec{
		Durable: "orchestrator",
		Command: cmdRunRequest,
		Reset:   o.cfg.Log.Embedded(),
	}, func(cmd *events.Command) { o.takeRequest(ctx, cmd) })
	if err != nil {
		cancels()
		return err
	}
	adopted := o.adoptOrphans(ctx)
	<-ctx.Done()
	// Nothing may start a run once the wait for the running ones begins.
	stop.Stop()
	o.requests.Wait()
	adopted()
	// The feeds stop side by side: a feed whose consumer vanished (its
	// stream deleted under the engine) waits out its ordered consumer's
	// back-off, up to ten seconds, and one after another those added up.
	var feeds sync.WaitGroup
	feeds.Go(cancels)
	feeds.Go(raises)
	o.wg.Wait()
	o.stopHistoryFeed()
	feeds.Wait()
	return nil
}

// Busy reports how many runs this engine is executing or holding queued.
func (o *Orchestrator) Busy() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.runs)
}

// recover admits every run the log says is unfinished, in request order:
// started runs first (they hold their slots), then queued ones. On a
// shared server it admits only the started ones whose lease has lapsed
// (see adopt), and returns the log sequence the global queue must be read
// from to see every queued run.
func (o *Orchestrator) recover(ctx context.Context) (uint64, error) {
	from := uint64(1)
	if o.cfg.ViewsApplied != nil {
		from = o.cfg.ViewsApplied() + 1
	}
	if o.cfg.ActiveRuns == nil {
		return from, nil
	}
	ids, err := o.cfg.ActiveRuns(ctx)
	if err != nil {
		return 0, err
	}
	var pending []*runCtl
	for _, id := range ids {
		rc, err := o.loadRun(ctx, id)
		if err != nil {
			o.log.Error("cannot resume run", "run", id, "err", err)
			continue
		}
		from = min(from, rc.seq)
		switch {
		case o.shared() && (!rc.started || !o.orphaned(ctx, id)):
			// Queued runs are the global queue's; a live lease is
			// another engine's run.
		case rc.started:
			o.admit(ctx, rc)
		default:
			pending = append(pending, rc)
		}
	}
	for _, rc := range pending {
		o.admit(ctx, rc)
	}
	// A cancel recorded while no engine ran reached no watch.
	o.mu.Lock()
	resumed := slices.Collect(maps.Values(o.runs))
	o.mu.Unlock()
	for _, rc := range resumed {
		if err := o.cancelIfParentCancelled(ctx, rc.id, rc.parent); err != nil {
			return 0, err
		}
	}
	return from, nil
}

// watchCancels starts the run of a queued run as soon as it is cancelled,
// out of turn: its interpreter sees the request and finishes it cancelled
// without running anything. (A running run sees the request in its own
// history.) The returned func stops watching and waits until it has.
func (o *Orchestrator) watchCancels(ctx context.Context) (func(), error) {
	return o.watchRuns(ctx, events.RunCancelRequested, func(ev events.Event) {
		var d events.RunCancelRequestedData
		_ = ev.Decode(&d)
		o.startQueued(ctx, ev.RunID)
		o.cancelChildren(ctx, ev.RunID, d)
	})
}

// watchRuns calls on with every event of type typ appended from now on,
// one at a time, until ctx ends. The returned func stops watching and
// waits until it has; it may be called more than once.
func (o *Orchestrator) watchRuns(ctx context.Context, typ string, on func(ev events.Event)) (func(), error) {
	last, err := o.cfg.Log.LastSeq(ctx)
	if err != nil {
		return nil, err
	}
	feed, err := o.cfg.Log.Follow(ctx, events.FollowOptions{
		Filters: []string{events.TypeFilter(events.AggregateRun, typ)},
		FromSeq: last + 1,
	})
	if err != nil {
		return nil, err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range feed.Events() {
			if ctx.Err() == nil {
				on(ev)
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(feed.Stop)
		<-done
	}, nil
}

// cancelChildren asks every run of this engine that runID started to
// cancel. Their cancellations reach this watch in turn, so a cancel goes
// down a whole tree of runs, waited for or not, queued or running; the
// tree cancel and the bulk operation the parent's cancel (d) was part of
// are passed on.
func (o *Orchestrator) cancelChildren(ctx context.Context, runID string, d events.RunCancelRequestedData) {
	o.mu.Lock()
	children := o.queuedChildrenLocked(runID)
	for id, rc := range o.runs {
		if rc.parent == runID {
			children = append(children, id)
		}
	}
	o.mu.Unlock()
	for _, id := range children {
		if err := requestCancel(ctx, o.cfg.Log, id, parentCancelled(runID, d)); err != nil && ctx.Err() == nil {
			o.log.Warn("cancelling a child run", "run", id, "parent", runID, "err", err)
		}
	}
}

// cancelIfParentCancelled cancels a child run whose parent was cancelled
// before the child was admitted: cancelChildren did not see it then. The
// child is in o.runs before this looks, so a cancel recorded later reaches
// it through cancelChildren.
func (o *Orchestrator) cancelIfParentCancelled(ctx context.Context, runID, parent string) error {
	if parent == "" {
		return nil
	}
	d, err := cancelOf(ctx, o.cfg.Log, parent)
	if err != nil || d == nil {
		return err
	}
	return requestCancel(ctx, o.cfg.Log, runID, parentCancelled(parent, *d))
}

// parentCancelled is the cancel of a child run whose parent was cancelled
// by d, as part of d's tree cancel and bulk operation (if any).
func parentCancelled(parent string, d events.RunCancelRequestedData) events.RunCancelRequestedData {
	return events.RunCancelRequestedData{Requester: "run:" + parent, Reason: "parent run " + parent + " cancelled", Tree: d.Tree, Bulk: d.Bulk}
}

// startQueued starts a queued run now, whatever its job's limit.
func (o *Orchestrator) startQueued(ctx context.Context, runID string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	rc, ok := o.runs[runID]
	if !ok || rc.cancel != nil {
		return
	}
	queue := o.queued[rc.job.Name]
	for i, q := range queue {
		if q == rc {
			o.queued[rc.job.Name] = append(queue[:i:i], queue[i+1:]...)
			break
		}
	}
	o.startLocked(ctx, rc)
}

// loadRun reads what the log says about a run's request and start.
//
// IMPORTANT: a run that ended budget_exhausted gave its slot back; after a
// raise (run.budget_raised) it is live again but not started: it takes a
// slot, or queues, like any run. It holds one again from its run.resumed.
func (o *Orchestrator) loadRun(ctx context.Context, id string) (*runCtl, error) {
	evs, err := o.cfg.Log.Read(ctx, events.FollowOptions{Filters: []string{
		events.EventSubject(events.AggregateRun, id, events.RunRequested),
		events.EventSubject(events.AggregateRun, id, events.RunStarted),
		events.EventSubject(events.AggregateRun, id, events.RunResumed),
		events.EventSubject(events.AggregateRun, id, events.RunFinished),
	}})
	if err != nil {
		return nil, err
	}
	rc := &runCtl{requestFacts: requestFacts{id: id}}
	for _, ev := range evs {
		switch ev.Type {
		case events.RunRequested:
			var d events.RunRequestedData
			if err := ev.Decode(&d); err != nil {
				return nil, err
			}
			job, err := decodeJob(d.Job)
			if err != nil {
				return nil, err
			}
			rc.requestFacts = factsOf(id, ev.Seq, job, &d)
		case events.RunStarted, events.RunResumed:
			rc.started = true
		case events.RunFinished:
			rc.started = false
		}
	}
	if rc.job == nil {
		return nil, fmt.Errorf("run %s has no run.requested event", id)
	}
	return rc, nil
}

// handleRequest records a run request and admits the run, in its turn
// among the requests delivered (see takeRequest). The command is
// acknowledged only once run.requested is in the log, so a crash in between
// redelivers it; the derived event id makes the second record a no-op.
func (o *Orchestrator) handleRequest(ctx context.Context, cmd *events.Command, t *turn) {
	defer t.pass()
	var req RunRequest
	if err := cmd.Decode(&req); err != nil || req.RunID == "" {
		o.log.Error("dropping malformed run request", "id", cmd.ID, "err", err)
		_ = cmd.Term()
		return
	}
	o.mu.Lock()
	_, known := o.runs[req.RunID]
	o.mu.Unlock()
	if !known {
		// Handled before (by an engine that died before acking, or sent
		// twice): if the run was recorded, it was recovered or has finished.
		last, err := o.cfg.Log.LastMatching(ctx, []string{events.EventSubject(events.AggregateRun, req.RunID, events.RunRequested)})
		if err != nil {
			_ = cmd.Nak(time.Second)
			return
		}
		known = last > 0
		if known {
			// A refused run whose engine died between its run.requested
			// and its run.finished (see refuse) is finished now.
			if err := CheckStorable(ctx, o.cfg.Log, &req); errors.Is(err, events.ErrTooLarge) {
				o.refuse(ctx, cmd, &req, err)
				return
			}
		}
	}
	if !known {
		err := o.request(ctx, &req, t)
		if errors.Is(err, events.ErrTooLarge) {
			o.refuse(ctx, cmd, &req, err)
			return
		}
		if err != nil {
			o.log.Warn("run request not recorded; will retry", "run", req.RunID, "err", err)
			_ = cmd.Nak(time.Second)
			return
		}
	}
	if req.Parent != nil {
		if err := o.cancelIfParentCancelled(ctx, req.RunID, req.Parent.RunID); err != nil {
			o.log.Warn("checking a child run's parent for a cancel; will retry", "run", req.RunID, "err", err)
			_ = cmd.Nak(time.Second)
			return
		}
	}
	if err := cmd.Ack(ctx); err != nil {
		o.log.Warn("acking run request", "run", req.RunID, "err", err)
	}
}

// refuse ends a run whose run.requested the log can never store (err wraps
// events.ErrTooLarge): it records a small run.requested (see
// recordRefused) and run.finished, failed with the reason, for whoever
// follows the run and for the views, and removes the command, which would
// otherwise be redelivered for ever.
func (o *Orchestrator) refuse(ctx context.Context, cmd *events.Command, req *RunRequest, err error) {
	o.log.Error("run request cannot be recorded; the run fails", "run", req.RunID, "err", err)
	if rerr := o.recordRefused(ctx, req); rerr != nil {
		o.log.Warn("recording a refused run; will retry", "run", req.RunID, "err", rerr)
		_ = cmd.Nak(time.Second)
		return
	}
	job := refusedJobName(req)
	_, ferr := o.cfg.Log.Append(ctx, events.Event{
		ID:    events.DecisionID(events.RunFinished, req.RunID),
		Type:  events.RunFinished,
		RunID: req.RunID,
		Job:   job,
	}, events.RunFinishedData{State: events.StateFailed, Error: &events.ErrorInfo{
		Kind:    events.KindLimit,
		Message: fmt.Sprintf("the run cannot be recorded: %v; make the job or its input smaller", err),
	}})
	if ferr != nil {
		o.log.Warn("recording a refused run's end; will retry", "run", req.RunID, "err", ferr)
		_ = cmd.Nak(time.Second)
		return
	}
	_ = cmd.Term()
}

// request records run.requested, sent in t's turn, and, on an embedded
// store, admits the run in its turn.
func (o *Orchestrator) request(ctx context.Context, req *RunRequest, t *turn) error {
	ev, data, err := requestedEvent(req)
	if err != nil {
		return err
	}
	if o.shared() {
		// Marked before the append: the queue may see the run at once.
		o.mu.Lock()
		o.requested[req.RunID] = true
		o.mu.Unlock()
	}
	var appended events.Appended
	pending, err := t.send(ctx, func() (*events.PendingAppend, error) { return o.cfg.Log.AppendAsync(ctx, ev, data) })
	if err == nil {
		appended, err = pending.Wait(ctx)
	}
	if err != nil {
		o.mu.Lock()
		delete(o.requested, req.RunID)
		o.mu.Unlock()
		return err
	}
	if o.shared() {
		return nil // the global queue admits it
	}
	return t.admit(ctx, func() {
		o.admit(ctx, &runCtl{requestFacts: factsOf(req.RunID, appended.Seq, &req.Job, &data)})
	})
}

// admit starts a run if its job has a free slot, and queues it otherwise.
func (o *Orchestrator) admit(ctx context.Context, rc *runCtl) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.admitLocked(ctx, rc)
}

// admitLocked is admit for a caller that holds o.mu.
func (o *Orchestrator) admitLocked(ctx context.Context, rc *runCtl) {
	if _, known := o.runs[rc.id]; known {
		return
	}
	o.runs[rc.id] = rc
	job := rc.job.Name
	if o.admissibleLocked(ctx, rc) {
		o.startLocked(ctx, rc)
		return
	}
	o.queued[job] = append(o.queued[job], rc)
	o.appendQueued(ctx, rc, o.activeRunsLocked(job), o.jobPaused(ctx, job))
}

// admissibleLocked reports whether a run may start now: it started before
// and has not finished since (it holds its slot), or its job is not paused
// and has a free slot, or it may borrow the slot of an ancestor.
func (o *Orchestrator) admissibleLocked(ctx context.Context, rc *runCtl) bool {
	if rc.started || o.borrowsLocked(rc) {
		return true
	}
	if o.jobPaused(ctx, rc.job.Name) {
		return false
	}
	if o.shared() {
		return o.takeSlot(ctx, rc)
	}
	return o.activeCountLocked(rc.job.Name) < maxActive(rc.job)
}

// borrowsLocked reports whether a run may run in the slot of its nearest
// running ancestor of the same job. That ancestor holds the slot the run
// would wait for while it waits for the run, so queueing the run behind it
// would never end. But it lends its slot to one such descendant at a time:
// a recursive job runs one chain of runs, never a tree of them, and the
// other jobs keep their share of the engine.
func (o *Orchestrator) borrowsLocked(rc *runCtl) bool {
	lender := o.lenderLocked(rc)
	if lender == nil {
		return false
	}
	for _, other := range o.runs {
		if other != rc && other.cancel != nil && other.job.Name == rc.job.Name && o.lenderLocked(other) == lender {
			return false
		}
	}
	return true
}

// lenderLocked returns a run's nearest running ancestor of the same job,
// nil when it has none.
func (o *Orchestrator) lenderLocked(rc *runCtl) *runCtl {
	seen := map[string]bool{rc.id: true}
	for p := o.runs[rc.parent]; p != nil && !seen[p.id]; p = o.runs[p.parent] {
		if p.job.Name == rc.job.Name && p.cancel != nil {
			return p
		}
		seen[p.id] = true
	}
	return nil
}

func maxActive(job *assets.Job) int {
	if job.Spec.MaxActiveRuns < 1 {
		return 1
	}
	return job.Spec.MaxActiveRuns
}

// activeCountLocked counts the runs of job holding a slot: what
// admission asks of every run, where activeRunsLocked's sorted list cost
// a run's admission, in the chain of admissions, a sort of every run the
// job has going.
func (o *Orchestrator) activeCountLocked(job string) int {
	n := 0
	for _, rc := range o.runs {
		if rc.job.Name == job && rc.cancel != nil {
			n++
		}
	}
	return n
}

// activeRunsLocked lists the runs of job holding a slot, sorted.
func (o *Orchestrator) activeRunsLocked(job string) []string {
	var ids []string
	for id, rc := range o.runs {
		if rc.job.Name == job && rc.cancel != nil {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

func (o *Orchestrator) startLocked(ctx context.Context, rc *runCtl) {
	rctx, cancel := context.WithCancelCause(ctx)
	rc.cancel = cancel
	o.wg.Add(1)
	go func() {
		defer o.wg.Done()
		defer cancel(nil)
		o.executeUntilDone(rctx, rc)
		o.release(ctx, rc)
	}()
}

// executeUntilDone interprets a run until it is finished or ctx ends. An
// error is Orbit's own (the log unreachable, the lease lost), never the
// run's: the run is interpreted again after a backoff, and the history
// makes that pick up where it stopped.
func (o *Orchestrator) executeUntilDone(ctx context.Context, rc *runCtl) {
	bo := backoff.NewExponentialBackOff()
	bo.InitialInterval = 500 * time.Millisecond
	bo.MaxInterval = 30 * time.Second
	bo.MaxElapsedTime = 0
	for {
		err := o.execute(ctx, rc)
		if err == nil || ctx.Err() != nil {
			return
		}
		wait := bo.NextBackOff()
		o.log.Error("run interrupted; resuming it", "run", rc.id, "in", wait, "err", err)
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return
		}
	}
}

// release takes a run off its root's tree (see descendants.go), frees its
// slot and starts the next queued run of its job. A run that stopped
// without finishing (the engine is stopping) is forgotten here and resumed
// by whichever engine recovers it. A run whose budget was
// raised as it ended is admitted again once its slot is free: it queues
// behind the runs that waited for that slot (see admit).
func (o *Orchestrator) release(ctx context.Context, rc *runCtl) {
	if ctx.Err() == nil {
		o.releaseDescendant(ctx, rc)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.runs, rc.id)
	job := rc.job.Name
	if ctx.Err() != nil {
		return
	}
	if o.shared() {
		// A raised run is in the global queue again (see apply).
		o.giveSlot(ctx, rc)
		o.kickLocked(job)
		return
	}
	// In arrival order, every queued run that may start now: the first ones
	// take the free slots, and descendants of running runs may borrow
	// theirs (see borrowsLocked) past runs that must wait for a free one.
	o.startAdmissibleLocked(ctx, job)
	if rc.again {
		o.admitLocked(ctx, &runCtl{requestFacts: rc.requestFacts})
	}
}

// execute runs one run to its end under its lease.
func (o *Orchestrator) execute(ctx context.Context, rc *runCtl) error {
	ls := o.runLease(rc)
	if err := ls.Acquire(ctx); err != nil {
		return fmt.Errorf("taking the lease: %w", err)
	}
	leaseCtx, lost := context.WithCancelCause(ctx)
	held := make(chan struct{})
	go func() {
		defer close(held)
		ls.Hold(leaseCtx, func(err error) { lost(fmt.Errorf("%w: lease lost: %v", lease.ErrHeld, err)) })
	}()
	defer func() {
		lost(nil)
		<-held // the renewals have stopped: the lease is this goroutine's again
		if err := ls.Release(context.WithoutCancel(ctx)); err != nil && !errors.Is(err, events.ErrConflict) {
			o.log.Warn("releasing lease", "run", rc.id, "err", err)
		}
	}()

	host := &runHost{o: o, runID: rc.id}
	x := interpreter.New(o.interpreterConfig(rc, host))
	hist, err := o.openRunHistory(leaseCtx, rc.id, rc.seq, x.Observe)
	if err != nil {
		return err
	}
	defer hist.close()
	host.hist = hist
	return x.Run(leaseCtx, hist)
}

// runLease is the lease under which this engine interprets rc. On an
// embedded store the file lock lets one engine run, and nothing reads a
// run's lease there (adoption, a slot's release and recovery read it on a
// shared server only): the lease is a no-op, as a step's is (a create at
// the run's start and a delete at its end, each an fsync strict).
func (o *Orchestrator) runLease(rc *runCtl) *lease.Lease {
	if o.cfg.Log.Embedded() {
		return &lease.Lease{}
	}
	return &lease.Lease{
		KV:     o.cfg.Log.Leases(),
		Key:    leaseKey(rc.id),
		Engine: o.cfg.Engine,
		TTL:    o.cfg.LeaseTTL,
	}
}
