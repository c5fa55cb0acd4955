package executor

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/interpreter"
)

// runHistory is a run's history (see interpreter.History) kept up to date by a feed.
// The interpreter consults it before every decision: what is recorded is
// returned, never done again.
//
// It holds every event of the run but those of the types in unread.
type runHistory struct {
	runID   string
	log     *events.Log
	feed    *events.Feed // its own feed, or nil when shared is its feed
	filters []string     // what its own feed follows (see followed)

	// A history fed by the engine's history feed (openFedHistory).
	shared *historyFeed
	wake   chan struct{} // a push or a fail since drain last looked
	stop   chan struct{} // closed by close

	// rec orders the records of the feed's events (add) and of the
	// engine's own (keep), so that onEvent sees each event once.
	rec     sync.Mutex
	mu      sync.Mutex
	byID    map[string]events.Event
	lastSeq uint64
	changed chan struct{} // closed and replaced whenever an event arrives
	err     error
	onEvent func(events.Event)
	done    chan struct{}
	queue   []events.Event // handed by shared, not yet recorded
	failed  error          // shared ended with it
	// spend sums the run's agent usage as it arrives, in log order.
	spend interpreter.Spend
}

var _ interpreter.History = (*runHistory)(nil)

// unread are the event types of a run that the interpreter never reads:
// the worker's record of each execution, for auditors and the views (see
// docs/architecture/runs.md, "What each event of a step is for"). They are two of a
// step's four events, and a history that followed them had the server
// deliver, and the orchestrator decode, both on the path of every step
// before its step.finished.
//
// IMPORTANT: the interpreter's decisions must not depend on an event of
// these types; a history does not hold them.
var unread = []string{events.ActivityStarted, events.ActivityFinished}

// openHistory follows the run's events from sequence from (its
// run.requested's; 0 when not known) and returns once every event already
// in the log has been delivered. onEvent, if not nil, is called for every
// event as it arrives, before the history records it.
//
// Starting at the run's first event spares the server a search of the
// whole stream for the run's subjects, which it makes for a filter from
// the stream's start and which grows with the log.
func openHistory(ctx context.Context, log *events.Log, runID string, from uint64, onEvent func(events.Event)) (*runHistory, error) {
	filters := events.RunFilterExcept(runID, unread...)
	feed, err := log.Follow(ctx, events.FollowOptions{Filters: filters, FromSeq: from})
	if err != nil {
		return nil, err
	}
	h := &runHistory{
		runID:   runID,
		log:     log,
		feed:    feed,
		filters: filters,
		byID:    make(map[string]events.Event),
		changed: make(chan struct{}),
		onEvent: onEvent,
		done:    make(chan struct{}),
	}
	go h.follow()
	// The feed catches up with the log as it was when the feed started:
	// looking up where the log ends again would cost the server one
	// request per filter (twelve), on the path of every run's start.
	if err := h.caughtUp(ctx); err != nil {
		h.close()
		return nil, err
	}
	return h, nil
}

// CatchUp blocks until the history holds every event of the run it
// follows that is in the log now.
func (h *runHistory) CatchUp(ctx context.Context) error {
	last, err := h.log.LastMatching(ctx, h.followed())
	if err != nil {
		return err
	}
	return h.waitSeq(ctx, last)
}

// followed are the subjects of the events the history holds. A fed
// history makes them only when asked: nearly every run ends without a
// CatchUp, and they cost a walk of the event types' registry (3% of a
// three-step run's CPU by profile).
func (h *runHistory) followed() []string {
	if h.filters != nil {
		return h.filters
	}
	return events.RunFilterExcept(h.runID, unread...)
}

// caughtUp waits until the history holds what its feed had to deliver
// when it started.
func (h *runHistory) caughtUp(ctx context.Context) error {
	select {
	case <-h.feed.CaughtUp():
		return h.waitSeq(ctx, h.feed.Last())
	case <-h.done:
		return h.waitSeq(ctx, math.MaxUint64) // the feed failed: its error
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

func (h *runHistory) follow() {
	defer close(h.done)
	for ev := range h.feed.Events() {
		h.add(ev)
	}
	h.end(h.feed.Err())
}

// add records ev, read from the log: the history holds the run's events
// up to its sequence.
func (h *runHistory) add(ev events.Event) { h.record(ev, true) }

// keep records ev, an event of the run that this engine appended, as the
// log acknowledged storing it (events.Appended.Stored): a decision that
// waits for it need not wait for the feed to hand it back. The feed's
// copy, when it comes, only moves the history's place in the log; onEvent
// and the spend see the event once.
func (h *runHistory) keep(ev events.Event) {
	if ev.RunID != h.runID || slices.Contains(unread, ev.Type) {
		return
	}
	h.record(ev, false)
}

// record records ev; fed says that it was read from the log, in order.
func (h *runHistory) record(ev events.Event, fed bool) {
	h.rec.Lock()
	defer h.rec.Unlock()
	h.mu.Lock()
	held, ok := h.byID[ev.ID]
	h.mu.Unlock()
	kept := ok && held.Seq == ev.Seq // a copy of an event keep recorded
	// onEvent runs first, so that whoever waits for the history to reach
	// an event also sees what onEvent made of it.
	if !kept && h.onEvent != nil {
		h.onEvent(ev)
	}
	h.mu.Lock()
	if !kept {
		h.byID[ev.ID] = ev
		h.spend.Add(ev)
	}
	if fed {
		h.lastSeq = ev.Seq
	}
	close(h.changed)
	h.changed = make(chan struct{})
	h.mu.Unlock()
}

// end records that the history gets no more events, for err (nil: it was
// closed).
func (h *runHistory) end(err error) {
	h.mu.Lock()
	h.err = err
	if h.err == nil {
		h.err = fmt.Errorf("%w: history of run %s closed", events.ErrUnavailable, h.runID)
	}
	close(h.changed)
	h.mu.Unlock()
}

// openFedHistory is openHistory for a history fed by the engine's history
// feed f: it registers with f, then reads what the log holds of the run
// (a batched direct get: no consumer), and returns once it has recorded
// that.
func openFedHistory(ctx context.Context, f *historyFeed, log *events.Log, runID string, from uint64, onEvent func(events.Event)) (*runHistory, error) {
	h := &runHistory{
		runID:   runID,
		log:     log,
		shared:  f,
		wake:    make(chan struct{}, 1),
		stop:    make(chan struct{}),
		byID:    make(map[string]events.Event),
		changed: make(chan struct{}),
		onEvent: onEvent,
		done:    make(chan struct{}),
	}
	if err := f.register(h); err != nil {
		return nil, err
	}
	stored, err := log.Read(ctx, events.FollowOptions{Filters: []string{events.RunFilter(runID)}, FromSeq: from})
	if err != nil {
		f.unregister(h)
		return nil, err
	}
	var read uint64
	kept := stored[:0]
	for _, ev := range stored {
		read = max(read, ev.Seq)
		if !slices.Contains(unread, ev.Type) {
			kept = append(kept, ev)
		}
	}
	go h.drain(kept, read)
	var last uint64
	if len(kept) > 0 {
		last = kept[len(kept)-1].Seq
	}
	if err := h.waitSeq(ctx, last); err != nil {
		h.close()
		return nil, err
	}
	return h, nil
}

// drain records stored, the events read of the run up to sequence read,
// then what the feed hands it after them, in order: an event the feed
// hands that the read held too (its sequence at most read) is left out.
func (h *runHistory) drain(stored []events.Event, read uint64) {
	defer close(h.done)
	for _, ev := range stored {
		h.add(ev)
	}
	for {
		h.mu.Lock()
		queue, failed := h.queue, h.failed
		h.queue = nil
		h.mu.Unlock()
		for _, ev := range queue {
			if ev.Seq > read {
				h.add(ev)
				read = ev.Seq
			}
		}
		if len(queue) > 0 {
			continue
		}
		if failed != nil {
			h.end(failed)
			return
		}
		select {
		case <-h.wake:
		case <-h.stop:
			h.end(nil)
			return
		}
	}
}

// push queues ev, handed by the history feed.
func (h *runHistory) push(ev events.Event) {
	h.mu.Lock()
	h.queue = append(h.queue, ev)
	h.mu.Unlock()
	h.signal()
}

// fail ends the history once it has recorded what it was handed: the
// history feed ended with err.
func (h *runHistory) fail(err error) {
	h.mu.Lock()
	h.failed = err
	h.mu.Unlock()
	h.signal()
}

func (h *runHistory) signal() {
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// Get returns the event with the given id if it is in the history.
func (h *runHistory) Get(id string) (events.Event, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ev, ok := h.byID[id]
	return ev, ok
}

// Last returns the latest event (by sequence) of one of the given types.
func (h *runHistory) Last(types ...string) (events.Event, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var found events.Event
	for _, ev := range h.byID {
		if ev.Seq > found.Seq && slices.Contains(types, ev.Type) {
			found = ev
		}
	}
	return found, found.Seq > 0
}

// Wait blocks until the event with the given id is in the history.
func (h *runHistory) Wait(ctx context.Context, id string) (events.Event, error) {
	for {
		h.mu.Lock()
		ev, ok := h.byID[id]
		changed, err := h.changed, h.err
		h.mu.Unlock()
		if ok {
			return ev, nil
		}
		if err != nil {
			return events.Event{}, err
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return events.Event{}, context.Cause(ctx)
		}
	}
}

// waitSeq blocks until every event of the run up to seq that the history
// follows has been recorded; seq must be one it follows (see CatchUp).
func (h *runHistory) waitSeq(ctx context.Context, seq uint64) error {
	for {
		h.mu.Lock()
		last, changed, err := h.lastSeq, h.changed, h.err
		h.mu.Unlock()
		if last >= seq {
			return nil
		}
		if err != nil {
			return err
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

// Spent is what the run's agents spent by the events the history holds.
func (h *runHistory) Spent() (tokens int64, costUSD float64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.spend.Tokens, h.spend.CostUSD
}

func (h *runHistory) close() {
	if h.shared != nil {
		h.shared.unregister(h)
		close(h.stop)
	} else {
		h.feed.Stop()
	}
	<-h.done
}

// OpenHistory returns the history an orchestrator gives the interpreter
// of run runID, caught up with the log, and what closes it; onEvent, if
// not nil, sees every event first (the orchestrator's is the
// interpreter's Observe). It is how a replay outside the orchestrator
// (internal/compat's stored logs) runs the interpreter on the history the
// engine uses.
func OpenHistory(ctx context.Context, log *events.Log, runID string, onEvent func(events.Event)) (interpreter.History, func(), error) {
	h, err := openHistory(ctx, log, runID, 0, onEvent)
	if err != nil {
		return nil, nil, err
	}
	return h, h.close, nil
}
