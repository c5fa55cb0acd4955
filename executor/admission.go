package executor

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"time"

	"github.com/orbitrun/orbit/events"
)

// Admission on a shared NATS server (DESIGN §9). No engine owns a queued
// run: every engine follows the runs' lifecycle in the log (run.requested,
// run.started, run.finished, run.cancel_requested) and keeps, per job, the
// requested runs that have neither started nor finished in the order of
// their run.requested — one global FIFO, the same on every engine since
// the log has one order. When a run of a job is requested or finishes,
// every engine tries to admit the job's queue from its head: a run takes a
// slot by compare-and-set (claimSlot), so exactly one engine gets it and
// starts the run, and a run that finds every slot held stops the queue
// behind it. A run whose engine died after taking its slot but before
// recording run.started is admitted again once the slot's lease TTL has
// passed (slotFree); after run.started it is taken over as a started run
// (adoptOrphans). So a dead engine strands nothing it had queued, and a run
// is interpreted by one engine at a time: its lease decides.
//
// IMPORTANT: a queued run passes an earlier one only when it borrows the
// slot of a running ancestor of its job (see borrowsLocked): the rule of
// one engine, kept by the key lentKey(job, ancestor) instead of the
// engine's memory.
//
// A run that ended budget_exhausted gave its slot back; when its budget is
// raised (run.budget_raised) it joins the back of its job's queue, and
// leaves it at its run.resumed.
//
// On an embedded store one engine runs and its own queue (o.queued) is the
// global one.

// waitingRun is a requested run of the global queue.
type waitingRun struct {
	id     string
	seq    uint64 // of its run.requested: its place in the global order
	parent string
	raised bool    // queued by a budget raise: its parent is known once rc is read
	rc     *runCtl // read from the log when first tried; the admission goroutine's
	queued bool    // run.queued recorded (by this engine); the admission goroutine's
}

// lifecycleFilters are the events the global queue follows.
var lifecycleFilters = []string{
	events.TypeFilter(events.AggregateRun, events.RunRequested),
	events.TypeFilter(events.AggregateRun, events.RunStarted),
	events.TypeFilter(events.AggregateRun, events.RunResumed),
	events.TypeFilter(events.AggregateRun, events.RunFinished),
	events.TypeFilter(events.AggregateRun, events.RunBudgetRaised),
	events.TypeFilter(events.AggregateRun, events.RunCancelRequested),
}

// followQueue follows the log's run lifecycle from seq from and admits
// runs from the global queue until ctx ends. The returned func waits until
// it has stopped.
func (o *Orchestrator) followQueue(ctx context.Context, from uint64) func() {
	done := make(chan struct{})
	admitted := make(chan struct{})
	go func() {
		defer close(admitted)
		o.admitLoop(ctx)
	}()
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			next, err := o.followOnce(ctx, from)
			if ctx.Err() != nil {
				break
			}
			o.log.Warn("following the run queue; following again", "from", next, "err", err)
			from = next
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
		<-admitted
	}()
	return func() { <-done }
}

// followOnce applies the lifecycle events from seq from until the feed or
// ctx ends, and returns the sequence to go on from.
func (o *Orchestrator) followOnce(ctx context.Context, from uint64) (uint64, error) {
	feed, err := o.cfg.Log.Follow(ctx, events.FollowOptions{Filters: lifecycleFilters, FromSeq: from})
	if err != nil {
		return from, err
	}
	defer feed.Stop()
	caughtUp := feed.CaughtUp()
	for {
		select {
		case ev, ok := <-feed.Events():
			if !ok {
				return from, feed.Err()
			}
			from = ev.Seq + 1
			o.apply(ctx, ev)
		case <-caughtUp:
			caughtUp = nil
			o.mu.Lock()
			o.queueReady = true
			o.mu.Unlock()
			o.kickAll()
		case <-ctx.Done():
			return from, ctx.Err()
		}
	}
}

// apply folds one lifecycle event into the global queue.
func (o *Orchestrator) apply(ctx context.Context, ev events.Event) {
	switch ev.Type {
	case events.RunRequested:
		var d events.RunRequestedData
		if err := ev.Decode(&d); err != nil {
			o.log.Warn("unreadable run request", "run", ev.RunID, "err", err)
			return
		}
		w := &waitingRun{id: ev.RunID, seq: ev.Seq}
		if d.Parent != nil {
			w.parent = d.Parent.RunID
		}
		o.mu.Lock()
		if _, known := o.waitingJob[ev.RunID]; !known {
			o.waiting[d.JobName] = append(o.waiting[d.JobName], w)
			o.waitingJob[ev.RunID] = d.JobName
		}
		o.mu.Unlock()
		o.kick(d.JobName)
	case events.RunBudgetRaised:
		o.mu.Lock()
		if _, known := o.waitingJob[ev.RunID]; !known {
			o.waiting[ev.Job] = append(o.waiting[ev.Job], &waitingRun{id: ev.RunID, seq: ev.Seq, raised: true})
			o.waitingJob[ev.RunID] = ev.Job
		}
		o.mu.Unlock()
		o.kick(ev.Job)
	case events.RunStarted, events.RunResumed:
		o.dropWaiting(ev.RunID)
	case events.RunFinished:
		o.dropWaiting(ev.RunID)
		// Its slot is free: the next run of its job may start.
		o.kick(ev.Job)
	case events.RunCancelRequested:
		var d events.RunCancelRequestedData
		_ = ev.Decode(&d)
		o.startCancelled(ctx, ev.RunID)
		o.cancelChildren(ctx, ev.RunID, d)
	}
}

// dropWaiting removes a run from the global queue.
func (o *Orchestrator) dropWaiting(id string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	job, ok := o.waitingJob[id]
	if !ok {
		return
	}
	delete(o.waitingJob, id)
	delete(o.requested, id)
	o.waiting[job] = slices.DeleteFunc(o.waiting[job], func(w *waitingRun) bool { return w.id == id })
	if len(o.waiting[job]) == 0 {
		delete(o.waiting, job)
	}
}

// kick asks the admission goroutine to try job's queue.
func (o *Orchestrator) kick(job string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.kickLocked(job)
}

// kickLocked is kick for a caller that holds o.mu.
func (o *Orchestrator) kickLocked(job string) {
	o.dirty[job] = true
	select {
	case o.kicked <- struct{}{}:
	default:
	}
}

// kickAll asks the admission goroutine to try every queue.
func (o *Orchestrator) kickAll() {
	o.mu.Lock()
	jobs := slices.Collect(maps.Keys(o.waiting))
	o.mu.Unlock()
	for _, job := range jobs {
		o.kick(job)
	}
}

// admitLoop tries the queues that were kicked, one at a time, until ctx
// ends: the slot and log reads stay off the feed and off o.mu.
func (o *Orchestrator) admitLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-o.kicked:
		}
		o.mu.Lock()
		if !o.queueReady {
			o.mu.Unlock()
			continue
		}
		jobs := slices.Sorted(maps.Keys(o.dirty))
		clear(o.dirty)
		o.mu.Unlock()
		for _, job := range jobs {
			if ctx.Err() != nil {
				return
			}
			o.admitQueue(ctx, job)
		}
	}
}

// admitQueue starts, from the head of job's global queue, the runs that
// may start now, and stops at the first that may not (but for a run that
// borrows its ancestor's slot).
func (o *Orchestrator) admitQueue(ctx context.Context, job string) {
	o.mu.Lock()
	queue := slices.Clone(o.waiting[job])
	o.mu.Unlock()
	if len(queue) == 0 {
		return
	}
	// A paused job's queue is blocked from its head: only a run that
	// borrows its running ancestor's slot starts.
	paused := o.jobPaused(ctx, job)
	blocked := paused
	for _, w := range queue {
		o.mu.Lock()
		_, mine := o.runs[w.id]
		o.mu.Unlock()
		if mine {
			continue // started here; its run.started is on its way
		}
		if blocked && w.parent == "" && !w.raised && (!paused || w.queued) {
			continue
		}
		if w.rc == nil {
			rc, err := o.loadRun(ctx, w.id)
			if err != nil {
				o.log.Warn("reading a queued run", "run", w.id, "err", err)
				return
			}
			w.rc, w.parent, w.raised = rc, rc.parent, false
		}
		if blocked && w.parent == "" {
			if paused && !w.queued && o.requestedHere(w.id) {
				w.queued = true
				o.recordQueued(ctx, &runCtl{requestFacts: w.rc.requestFacts}, true)
			}
			continue
		}
		rc := &runCtl{requestFacts: w.rc.requestFacts}
		switch o.claimShared(ctx, rc, blocked) {
		case claimElsewhere:
			continue
		case claimFull:
			if !blocked && !w.queued && o.requestedHere(w.id) {
				w.queued = true
				o.recordQueued(ctx, rc, false)
			}
			blocked = true
			continue
		}
		over, err := o.startedOrFinished(ctx, rc.id)
		if err != nil || over {
			// Started by another engine meanwhile, or not known: the slot
			// taken for it goes back, and a run that may not have started
			// keeps its place.
			o.giveSlot(ctx, rc)
			if err != nil {
				return
			}
			o.dropWaiting(rc.id)
			continue
		}
		o.mu.Lock()
		if _, known := o.runs[rc.id]; !known {
			o.runs[rc.id] = rc
			o.startLocked(ctx, rc)
		}
		o.mu.Unlock()
	}
}

// claimShared takes, for a queued run, the slot its nearest running
// ancestor of its job lends, or (unless the queue is blocked before it)
// one of its job's slots.
// Every key it may hold is read first, so a run admitted elsewhere in one
// kind of slot is not admitted here in the other.
func (o *Orchestrator) claimShared(ctx context.Context, rc *runCtl, blocked bool) claim {
	keys := slotKeys(rc.job)
	n := len(keys)
	if blocked {
		n = 0
	}
	if lender := o.sharedLender(ctx, rc); lender != "" {
		keys = append([]string{lentKey(rc.job.Name, lender)}, keys...)
		n++
	}
	return o.claimSlot(ctx, rc, keys, n)
}

// sharedLender returns the nearest ancestor of rc of the same job that has
// started and not finished, by the log; "" when it has none.
func (o *Orchestrator) sharedLender(ctx context.Context, rc *runCtl) string {
	seen := map[string]bool{rc.id: true}
	for id := rc.parent; id != "" && !seen[id]; {
		seen[id] = true
		p, err := o.loadRun(ctx, id)
		if err != nil {
			return ""
		}
		if p.job.Name == rc.job.Name && p.started {
			return id
		}
		id = p.parent
	}
	return ""
}

// startedOrFinished reports whether the log has run.started, run.resumed
// or run.finished of run id since its last budget raise.
func (o *Orchestrator) startedOrFinished(ctx context.Context, id string) (bool, error) {
	return o.sinceRaise(ctx, id, events.RunStarted, events.RunResumed, events.RunFinished)
}

// sinceRaise reports whether the log has an event of run id of one of
// types after its last run.budget_raised (or at all, when it has none): a
// raise makes a finished run live again.
func (o *Orchestrator) sinceRaise(ctx context.Context, id string, types ...string) (bool, error) {
	return sinceRaise(ctx, o.cfg.Log, id, types...)
}

// sinceRaise reports whether run id has an event of one of types after its
// last budget raise (or at all, when it was never raised).
func sinceRaise(ctx context.Context, log *events.Log, id string, types ...string) (bool, error) {
	filters := make([]string, len(types))
	for i, typ := range types {
		filters[i] = events.EventSubject(events.AggregateRun, id, typ)
	}
	last, err := log.LastMatching(ctx, filters)
	if err != nil || last == 0 {
		return false, err
	}
	raised, err := log.LastMatching(ctx, []string{events.EventSubject(events.AggregateRun, id, events.RunBudgetRaised)})
	return last > raised, err
}

// startCancelled starts a queued run of the global queue at once, out of
// turn and without a slot, when it is cancelled: its interpreter finishes
// it cancelled without running anything. Every engine sees the cancel;
// the one that takes the run's lease first starts it.
func (o *Orchestrator) startCancelled(ctx context.Context, id string) {
	o.mu.Lock()
	_, queued := o.waitingJob[id]
	_, mine := o.runs[id]
	o.mu.Unlock()
	if !queued || mine {
		return
	}
	rc, err := o.loadRun(ctx, id)
	if err != nil || rc.started {
		return
	}
	if err := o.runLease(rc).Try(ctx); err != nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, known := o.runs[id]; !known {
		o.runs[id] = rc
		o.startLocked(ctx, rc)
	}
}

// queuedChildrenLocked lists the runs of the global queue that runID
// started.
func (o *Orchestrator) queuedChildrenLocked(runID string) []string {
	var ids []string
	for _, queue := range o.waiting {
		for _, w := range queue {
			if w.parent == runID {
				ids = append(ids, w.id)
			}
		}
	}
	return ids
}

// requestedHere reports whether this engine recorded run id's request: it
// records the run's run.queued, so that engines do not race to append the
// same event.
func (o *Orchestrator) requestedHere(id string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.requested[id]
}

// recordQueued records that rc waits for a slot, or for its job's unpause.
func (o *Orchestrator) recordQueued(ctx context.Context, rc *runCtl, paused bool) {
	var active []string
	for _, key := range slotKeys(rc.job) {
		cur, err := o.cfg.Log.Leases().Get(ctx, key)
		if err != nil {
			continue
		}
		var held slotRecord
		if json.Unmarshal(cur.Value, &held) == nil && held.Run != "" {
			active = append(active, held.Run)
		}
	}
	slices.Sort(active)
	o.appendQueued(ctx, rc, active, paused)
}

// appendQueued records, in the background, that rc is queued behind the
// runs active, or for its job's unpause.
func (o *Orchestrator) appendQueued(ctx context.Context, rc *runCtl, active []string, paused bool) {
	o.wg.Add(1)
	go func() {
		defer o.wg.Done()
		_, err := o.cfg.Log.Append(ctx, events.Event{
			ID:    events.DecisionID(events.RunQueued, rc.id),
			Type:  events.RunQueued,
			RunID: rc.id,
			Job:   rc.job.Name,
		}, events.RunQueuedData{MaxActiveRuns: maxActive(rc.job), Active: active, JobPaused: paused})
		if err != nil && ctx.Err() == nil {
			o.log.Warn("recording queued run", "run", rc.id, "err", err)
		}
	}()
}
