package events_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

// TestAnEventStoredLateIsReadByEveryReader: a run's step.finished reaches
// the server two minutes after its time, as one does when the engine is
// suspended between stamping and storing it (the time is the caller's
// here, which the group commit keeps as it is; the Log stamps its own at
// the same place). It is the first message under its id: every reader
// reads it, nothing is recorded as rejected, and audit notes it as late
// without calling it a problem.
func TestAnEventStoredLateIsReadByEveryReader(t *testing.T) {
	t.Parallel()
	ctx := testkit.Context(t)
	l, _ := signedLog(t)
	app := func(ev events.Event, payload any) uint64 {
		ev.RunID = "R"
		res, err := l.Append(ctx, ev, payload)
		require.NoError(t, err)
		require.False(t, res.Duplicate)
		return res.Seq
	}
	app(events.Event{ID: events.DecisionID(events.RunRequested, "R"), Type: events.RunRequested}, events.RunRequestedData{JobName: "j"})
	app(events.Event{ID: events.DecisionID(events.StepStarted, "R", "s", "1"), Type: events.StepStarted, StepKey: "s"}, events.StepStartedData{Attempt: 1})
	made := time.Now().Add(-2 * time.Minute).UTC()
	late := app(events.Event{ID: events.DecisionID(events.StepFinished, "R", "s", "1"), Type: events.StepFinished, StepKey: "s", Time: made},
		events.StepFinishedData{Attempt: 1, State: events.StateSuccess, Output: "real"})
	app(events.Event{ID: events.RunFinishedID("R", 0), Type: events.RunFinished}, events.RunFinishedData{State: events.StateSuccess})
	// And one made by a clock two minutes ahead, which was set right
	// before the next event of its run was made.
	early, err := l.Append(ctx, events.Event{Type: events.RunRequested, RunID: "E", Time: time.Now().Add(2 * time.Minute).UTC()}, events.RunRequestedData{JobName: "j"})
	require.NoError(t, err)
	_, err = l.Append(ctx, events.Event{Type: events.RunStarted, RunID: "E"}, events.RunStartedData{})
	require.NoError(t, err)

	types := func(evs []events.Event) []string {
		var out []string
		for _, ev := range evs {
			out = append(out, ev.Type)
		}
		return out
	}
	want := []string{events.RunRequested, events.StepStarted, events.StepFinished, events.RunFinished}

	read, err := l.Read(ctx, events.FollowOptions{Filters: []string{events.RunFilter("R")}})
	require.NoError(t, err)
	assert.Equal(t, want, types(read), "Read")

	feed, err := l.Follow(ctx, events.FollowOptions{Filters: []string{events.RunFilter("R")}})
	require.NoError(t, err)
	defer feed.Stop()
	var followed []events.Event
	for len(followed) < len(want) {
		select {
		case ev := <-feed.Events():
			followed = append(followed, ev)
		case <-ctx.Done():
			t.Fatalf("Follow delivered %v, want %v", types(followed), want)
		}
	}
	assert.Equal(t, want, types(followed), "Follow")

	var scanned []events.Event
	require.NoError(t, l.Scan(ctx, 1, late+1, 16, func(evs []events.Event) error {
		scanned = append(scanned, evs...)
		return nil
	}))
	assert.Equal(t, want, types(scanned), "Scan")

	ev, err := l.EventAt(ctx, late)
	require.NoError(t, err, "EventAt")
	assert.True(t, ev.Time.Equal(made))
	_, err = l.EventAt(ctx, early.Seq)
	require.NoError(t, err, "EventAt of the early event")

	assert.Empty(t, rejections(t, l, "R"))
	assert.Empty(t, rejections(t, l, "E"))
	rep, err := l.Audit(ctx)
	require.NoError(t, err)
	assert.Empty(t, rep.Problems, "neither the late event nor the events around the early one are problems")
	require.Len(t, rep.Notes, 2, "%v", rep.Notes)
	assert.Equal(t, events.AuditProblem{Kind: events.ProblemLate, Seq: late, Subject: events.EventSubject(events.AggregateRun, "R", events.StepFinished)},
		events.AuditProblem{Kind: rep.Notes[0].Kind, Seq: rep.Notes[0].Seq, Subject: rep.Notes[0].Subject})
	assert.Contains(t, rep.Notes[0].Detail, "the first message under its id")
	assert.Equal(t, events.ProblemEarly, rep.Notes[1].Kind)
	assert.Equal(t, early.Seq, rep.Notes[1].Seq)
}
