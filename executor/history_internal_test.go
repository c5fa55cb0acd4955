package executor

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
	"github.com/orbitrun/orbit/interpreter"
)

// TestHistoryLeavesOutActivityEventsAndCatchesUp opens the history of a
// run whose last event is an activity.started, as an engine killed inside
// a step leaves it: the history opens (it waits for the last event it
// follows, not the run's last), holds every decision event and no activity
// event, and catches up again with a step.finished appended later.
func TestHistoryLeavesOutActivityEventsAndCatchesUp(t *testing.T) {
	t.Parallel()
	for name, open := range openers {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			historyLeavesOutActivityEventsAndCatchesUp(t, open)
		})
	}
}

// A history opened at its run's first event reads nothing before it:
// both ways start there (a consumer's start, a read's first sequence),
// sparing the server a search of the stream from its start. An event of
// the run's id stored before that sequence is not in the history.
func TestAHistoryStartsAtItsRunsFirstEvent(t *testing.T) {
	t.Parallel()
	for name, open := range openers {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			log := testkit.StartLog(t, events.Config{})
			ctx := testkit.Context(t)
			const run = "R0"
			var seqs []uint64
			for _, key := range []string{"before", "first", "after"} {
				a, err := log.Append(ctx, events.Event{ID: interpreter.StepEventID(events.StepStarted, run, key, 1), Type: events.StepStarted, RunID: run, StepKey: key},
					events.StepStartedData{Attempt: 1, ActivityType: "deterministic"})
				require.NoError(t, err)
				seqs = append(seqs, a.Seq)
			}
			h, err := open(ctx, t, log, run, seqs[1], nil)
			require.NoError(t, err)
			defer h.close()
			for key, want := range map[string]bool{"before": false, "first": true, "after": true} {
				_, ok := h.Get(interpreter.StepEventID(events.StepStarted, run, key, 1))
				assert.Equal(t, want, ok, key)
			}
		})
	}
}

// logWithFeed starts a log and the history feed an orchestrator shares
// among its runs; the feed stops when the test ends, if not before.
func logWithFeed(t *testing.T) (*events.Log, *historyFeed) {
	t.Helper()
	log := testkit.StartLog(t, events.Config{})
	f, err := startHistoryFeed(testkit.Context(t), log)
	require.NoError(t, err)
	t.Cleanup(f.stop)
	return log, f
}

// opener opens a run's history, one way or the other.
type opener func(ctx context.Context, t *testing.T, log *events.Log, runID string, from uint64, onEvent func(events.Event)) (*runHistory, error)

// openers are the two ways: a feed of the history's own, and the history
// feed an orchestrator on an embedded store shares among its runs.
var openers = map[string]opener{
	"own feed": func(ctx context.Context, _ *testing.T, log *events.Log, runID string, from uint64, onEvent func(events.Event)) (*runHistory, error) {
		return openHistory(ctx, log, runID, from, onEvent)
	},
	"history feed": func(ctx context.Context, t *testing.T, log *events.Log, runID string, from uint64, onEvent func(events.Event)) (*runHistory, error) {
		f, err := startHistoryFeed(ctx, log)
		require.NoError(t, err)
		t.Cleanup(f.stop)
		return openFedHistory(ctx, f, log, runID, from, onEvent)
	},
}

func historyLeavesOutActivityEventsAndCatchesUp(t *testing.T, open opener) {
	log := testkit.StartLog(t, events.Config{})
	ctx := testkit.Context(t)
	const run = "R1"
	appendStep := func(typ string, payload any) events.Appended {
		t.Helper()
		id := ""
		if typ == events.StepStarted || typ == events.StepFinished {
			id = interpreter.StepEventID(typ, run, "s", 1)
		}
		a, err := log.Append(ctx, events.Event{ID: id, Type: typ, RunID: run, StepKey: "s"}, payload)
		require.NoError(t, err)
		return a
	}
	appendStep(events.StepStarted, events.StepStartedData{Attempt: 1, ActivityType: "deterministic"})
	appendStep(events.ActivityStarted, events.ActivityStartedData{Attempt: 1, ActivityType: "deterministic"})

	octx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	h, err := open(octx, t, log, run, 0, nil)
	require.NoError(t, err, "the history opens though the run's last event is one it leaves out")
	defer h.close()
	_, ok := h.Get(interpreter.StepEventID(events.StepStarted, run, "s", 1))
	assert.True(t, ok, "the decision is in the history")

	appendStep(events.ActivityFinished, events.ActivityFinishedData{Attempt: 1, State: events.StateSuccess})
	finished := appendStep(events.StepFinished, events.StepFinishedData{Attempt: 1, State: events.StateSuccess})
	appendStep(events.ActivityStarted, events.ActivityStartedData{Attempt: 2, ActivityType: "deterministic"})
	require.NoError(t, h.CatchUp(octx))
	_, ok = h.Get(interpreter.StepEventID(events.StepFinished, run, "s", 1))
	assert.True(t, ok, "catching up finds the step.finished")

	h.mu.Lock()
	defer h.mu.Unlock()
	assert.Equal(t, finished.Seq, h.lastSeq)
	for _, ev := range h.byID {
		assert.NotContains(t, unread, ev.Type, "the history holds %s", ev.Type)
	}
	assert.Len(t, h.byID, 2)
}

// TestAFedHistoryHoldsEachEventOnceInOrder opens histories of one run
// from the shared history feed, one after another, while events of the
// run are appended: an event stored before a history registers comes from
// its read of the log, one after from the feed, one in between from
// both. Every history sees each event once, in the log's order, and
// catches up with all of them.
func TestAFedHistoryHoldsEachEventOnceInOrder(t *testing.T) {
	t.Parallel()
	log, f := logWithFeed(t)
	ctx := testkit.Context(t)
	const run, steps = "R2", 60
	appended := make(chan struct{})
	go func() {
		defer close(appended)
		for i := range steps {
			key := "s" + strconv.Itoa(i)
			_, err := log.Append(ctx, events.Event{ID: interpreter.StepEventID(events.StepStarted, run, key, 1), Type: events.StepStarted, RunID: run, StepKey: key},
				events.StepStartedData{Attempt: 1, ActivityType: "deterministic"})
			assert.NoError(t, err)
		}
	}()
	check := func() {
		var observed seenEvents
		h, err := openFedHistory(ctx, f, log, run, 0, observed.add)
		require.NoError(t, err)
		defer h.close()
		<-appended
		require.NoError(t, h.CatchUp(ctx))
		seqs := seen(&observed, func(ev events.Event) uint64 { return ev.Seq })
		require.Len(t, seqs, steps, "each event once")
		assert.True(t, slices.IsSorted(seqs), "in the log's order: %v", seqs)
		assert.Len(t, slices.Compact(seqs), steps)
	}
	for range 5 {
		check()
	}
}

// TestAFedHistoryFailsWithItsFeed: a history whose feed ends is told so
// by Wait, as one whose own feed ends is, and a new feed serves the next.
func TestAFedHistoryFailsWithItsFeed(t *testing.T) {
	t.Parallel()
	log, f := logWithFeed(t)
	ctx := testkit.Context(t)
	h, err := openFedHistory(ctx, f, log, "R3", 0, nil)
	require.NoError(t, err)
	defer h.close()
	f.stop()
	_, err = h.Wait(ctx, "never")
	require.ErrorIs(t, err, events.ErrUnavailable)
	_, err = openFedHistory(ctx, f, log, "R4", 0, nil)
	require.ErrorIs(t, err, events.ErrUnavailable, "an ended feed registers no history")
}

// TestAHistoryKeepsTheEnginesOwnAppends: an event the engine appended is
// in its run's history once the log has acknowledged it, before any feed
// hands it back (here, none does: the history is taken off the shared
// feed). The copy the feed hands later moves the history's place in the
// log and is seen once: onEvent is not called again.
func TestAHistoryKeepsTheEnginesOwnAppends(t *testing.T) {
	t.Parallel()
	log, f := logWithFeed(t)
	ctx := testkit.Context(t)
	const run = "R5"
	var observed seenEvents
	h, err := openFedHistory(ctx, f, log, run, 0, observed.add)
	require.NoError(t, err)
	defer h.close()
	f.unregister(h)
	host := &runHost{runID: run, hist: h}

	id := interpreter.StepEventID(events.StepFinished, run, "s", 1)
	pending, err := log.AppendAsync(ctx, events.Event{ID: id, Type: events.StepFinished, RunID: run, StepKey: "s"},
		events.StepFinishedData{Attempt: 1, State: events.StateSuccess, Output: "hello"})
	require.NoError(t, err)
	res, err := keptAppend{pending, host}.Wait(ctx)
	require.NoError(t, err)

	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	ev, err := h.Wait(wctx, id)
	require.NoError(t, err, "the engine's own event is in the history without a feed")
	assert.Equal(t, res.Seq, ev.Seq)
	var d events.StepFinishedData
	require.NoError(t, ev.Decode(&d))
	assert.Equal(t, "hello", d.Output)
	h.mu.Lock()
	assert.Zero(t, h.lastSeq, "the history's place in the log is the feed's")
	h.mu.Unlock()

	// Another run's event and an execution record are not the run's
	// history's to keep.
	other, err := log.Append(ctx, events.Event{ID: "other", Type: events.StepFinished, RunID: "R6", StepKey: "s"},
		events.StepFinishedData{Attempt: 1, State: events.StateSuccess})
	require.NoError(t, err)
	host.keep(other)
	started, err := log.Append(ctx, events.Event{Type: events.ActivityStarted, RunID: run, StepKey: "s"},
		events.ActivityStartedData{Attempt: 1, ActivityType: "shell"})
	require.NoError(t, err)
	host.keep(started)
	_, ok := h.Get("other")
	assert.False(t, ok)
	_, ok = h.Get(started.Stored.ID)
	assert.False(t, ok)

	read, err := log.EventAt(ctx, res.Seq)
	require.NoError(t, err)
	h.push(read)
	require.NoError(t, h.waitSeq(wctx, res.Seq))
	assert.Equal(t, []string{id}, seen(&observed, func(ev events.Event) string { return ev.ID }), "onEvent sees the event once")
}

// seenEvents records the events a history's onEvent is called with.
type seenEvents struct {
	mu  sync.Mutex
	evs []events.Event
}

func (s *seenEvents) add(ev events.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.evs = append(s.evs, ev)
}

// seen is a field of each event seenEvents holds, in order.
func seen[T any](s *seenEvents, field func(events.Event) T) []T {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]T, len(s.evs))
	for i, ev := range s.evs {
		out[i] = field(ev)
	}
	return out
}
