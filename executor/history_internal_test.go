package executor

import (
	"context"
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
	h, err := openHistory(octx, log, run, nil)
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
