package projector_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/projector"
)

func at(sec int) *time.Time {
	t := time.Date(2026, 3, 1, 9, 0, sec, 0, time.UTC)
	return &t
}

func intp(i int) *int { return &i }

func TestRunsViewFoldsARun(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id, child := runID(1), runID(2)
	finished := e.history(id, child)
	require.Equal(t, uint64(21), finished)

	// After run.finished: run-level events are ignored, step events still
	// reach the steps but not the frozen run record, and a child requested
	// late is listed without moving the record's LastSeq.
	e.append(events.Event{Type: events.RunStarted, RunID: id}, events.RunStartedData{Engine: "engine-late"})
	e.append(events.Event{Type: events.RunRequested, RunID: runID(3)}, events.RunRequestedData{
		JobName: "review", Parent: &events.RunLink{RunID: id, StepKey: "cleanup"}})
	e.append(events.Event{Type: events.StepStarted, RunID: id, StepKey: "cleanup"}, events.StepStartedData{Attempt: 1, ActivityType: "shell"})
	// Events that cannot apply are skipped and the cursor moves past them.
	e.append(events.Event{Type: events.RunFinished, RunID: child}, events.RunFinishedData{State: events.StateRunning})
	e.append(events.Event{Type: events.StepStarted, RunID: child}, events.StepStartedData{Attempt: 1})
	e.append(events.Event{Type: events.StepStarted, RunID: "never-requested", StepKey: "x"}, events.StepStartedData{Attempt: 1})
	e.append(events.Event{Type: events.RunQueued, RunID: "never-requested"}, events.RunQueuedData{})
	last := e.append(events.Event{Type: events.RunStarted, RunID: child}, events.RunStartedData{Engine: "engine-b"})

	p := e.running(projector.Config{}, last)
	assert.Equal(t, last, p.Applied())

	got, err := p.RunView(e.ctx, id)
	require.NoError(t, err)
	want := &projector.RunView{
		ID: id, Job: "ci", State: events.StateCancelled,
		Input:           map[string]any{"ref": "main", "big": json.Number("12345678901234567")},
		Error:           &events.ErrorInfo{Kind: events.KindCancelled, Message: "cancelled by bob"},
		Requester:       "alice",
		TraceID:         events.RunTraceID(id, ""),
		Children:        []string{child, runID(3)},
		Engine:          "engine-b",
		Resumes:         1,
		CancelRequested: true,
		Cancel:          &events.RunCancelRequestedData{Reason: "enough", Requester: "bob"},
		QueuedBehind:    []string{runID(0)},
		RequestedAt:     at(1), StartedAt: at(3), FinishedAt: at(21),
		DurationMS:   20000,
		RequestedSeq: 1,
		LastSeq:      21,
		Steps: []projector.StepView{
			{
				Key: "build", ID: "build", State: events.StateSuccess, Attempts: 2,
				ActivityType: "shell", Target: "activity:build",
				Input:      map[string]any{"target": "./..."},
				Output:     map[string]any{"exit_code": json.Number("0")},
				Deliveries: 2, ExitCode: intp(0),
				StartedAt: at(4), FinishedAt: at(13), DurationMS: 900, Order: 4,
			},
			{Key: "deploy", ID: "deploy", State: events.StateSkipped, Order: 14},
			{
				Key: "loop/1/review", ID: "review", State: events.StateSuccess, Attempts: 1,
				ActivityType: "agent_loop", Output: "lgtm",
				StartedAt: at(16), FinishedAt: at(18), Order: 16,
			},
			{Key: "cleanup", ID: "cleanup", State: events.StateRunning, Attempts: 1, ActivityType: "shell", StartedAt: at(24), Order: 24},
		},
	}
	assert.Equal(t, want, got)

	kid, err := p.RunView(e.ctx, child)
	require.NoError(t, err)
	assert.Equal(t, &projector.RunView{
		ID: child, Job: "review", State: events.StateRunning, Engine: "engine-b",
		Parent:      &events.RunLink{RunID: id, StepKey: "loop/1/review"},
		TraceID:     events.RunTraceID(child, ""),
		RequestedAt: at(17), StartedAt: at(int(last)), RequestedSeq: 17, LastSeq: last,
	}, kid)

	active, err := p.ActiveRuns(e.ctx)
	require.NoError(t, err)
	assert.Equal(t, []projector.ActiveRun{
		{ID: child, Job: "review", State: events.StateRunning, RequestedSeq: 17},
		{ID: runID(3), Job: "review", State: events.StatePending, RequestedSeq: 23},
	}, active)

	_, err = p.RunView(e.ctx, "never-requested")
	assert.ErrorIs(t, err, projector.ErrNotFound)
	assert.ErrorIs(t, err, events.ErrNotFound, "the API layer maps it to 404")
}

// TestADetachedChildRequestedAfterItsParentEndsIsListed: a job.invoke with
// wait: false finishes its step at once, so its parent may end before the
// child's run.requested is stored. The parent's record lists the child all
// the same (without its LastSeq moving: the run is over), whatever the
// batch boundaries, and a rebuild of the views agrees.
func TestADetachedChildRequestedAfterItsParentEndsIsListed(t *testing.T) {
	t.Parallel()
	for _, batch := range []int{1, 100} {
		t.Run(fmt.Sprintf("batch=%d", batch), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			parent, child := runID(1), runID(2)
			run := func(id, job, typ string, payload any) uint64 {
				return e.append(events.Event{Type: typ, RunID: id, Job: job}, payload)
			}
			run(parent, "release", events.RunRequested, events.RunRequestedData{JobName: "release"})
			run(parent, "release", events.RunStarted, events.RunStartedData{Engine: "e1"})
			e.append(events.Event{Type: events.StepStarted, RunID: parent, Job: "release", StepKey: "notify"},
				events.StepStartedData{Attempt: 1, ActivityType: "deterministic", ChildRunID: child})
			e.append(events.Event{Type: events.StepFinished, RunID: parent, Job: "release", StepKey: "notify"},
				events.StepFinishedData{Attempt: 1, State: events.StateSuccess, Output: map[string]any{"run_id": child}})
			ended := run(parent, "release", events.RunFinished, events.RunFinishedData{State: events.StateSuccess})
			run(child, "notify", events.RunRequested, events.RunRequestedData{JobName: "notify",
				Parent: &events.RunLink{RunID: parent, StepKey: "notify"}, Root: parent, Depth: 1})
			run(child, "notify", events.RunStarted, events.RunStartedData{Engine: "e1"})
			last := run(child, "notify", events.RunFinished, events.RunFinishedData{State: events.StateSuccess})

			p := e.running(projector.Config{BatchSize: batch}, last)
			got, err := p.RunView(e.ctx, parent)
			require.NoError(t, err)
			assert.Equal(t, []string{child}, got.Children)
			assert.Equal(t, events.StateSuccess, got.State)
			assert.Equal(t, ended, got.LastSeq, "a finished run's last change stays its end")

			report, err := p.Replay(e.ctx, true)
			require.NoError(t, err)
			assert.Equal(t, &projector.ReplayReport{Applied: last, Events: int(last)}, report)
		})
	}
}

func TestStepIDIsTheLastNamedSegment(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id := runID(1)
	e.append(events.Event{Type: events.RunRequested, RunID: id}, events.RunRequestedData{JobName: "j"})
	var last uint64
	for _, key := range []string{"build", "loop/2/review", "per_item/3", "fanned/branch_b", "outer/1/inner/12",
		"loop@2/1/review", "per_item@3/2", "fanned@2/branch_b"} {
		last = e.append(events.Event{Type: events.StepSkipped, RunID: id, StepKey: key}, events.StepSkippedData{})
	}
	p := e.running(projector.Config{}, last)
	v, err := p.RunView(e.ctx, id)
	require.NoError(t, err)
	var ids []string
	for _, s := range v.Steps {
		ids = append(ids, s.ID)
	}
	assert.Equal(t, []string{"build", "review", "per_item", "branch_b", "inner", "review", "per_item", "branch_b"}, ids)
}

func TestRunQueries(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	request := func(i int, job string) uint64 {
		return e.append(events.Event{Type: events.RunRequested, RunID: runID(i), Job: job}, events.RunRequestedData{JobName: job})
	}
	finish := func(i int, state string) uint64 {
		return e.append(events.Event{Type: events.RunFinished, RunID: runID(i)}, events.RunFinishedData{State: state})
	}
	// Requested out of id order, so the active index's order (by request)
	// differs from the id order.
	request(5, "deploy")
	request(3, "ci")
	request(1, "ci")
	request(2, "ci")
	request(4, "deploy")
	e.append(events.Event{Type: events.RunStarted, RunID: runID(3)}, events.RunStartedData{Engine: "e"})
	e.append(events.Event{Type: events.StepStarted, RunID: runID(3), StepKey: "s"}, events.StepStartedData{Attempt: 1})
	finish(1, events.StateSuccess)
	finish(2, events.StateFailed)
	last := finish(4, events.StateSuccess)

	p := e.running(projector.Config{}, last)

	ids := func(runs []projector.RunView) []string {
		var out []string
		for _, r := range runs {
			assert.Empty(t, r.Steps, "history lists runs without steps")
			out = append(out, r.ID)
		}
		return out
	}
	tests := []struct {
		name   string
		filter projector.RunFilter
		want   []string
	}{
		{"all, newest first", projector.RunFilter{}, []string{runID(5), runID(4), runID(3), runID(2), runID(1)}},
		{"one job", projector.RunFilter{Job: "ci"}, []string{runID(3), runID(2), runID(1)}},
		{"limit", projector.RunFilter{Job: "ci", Limit: 2}, []string{runID(3), runID(2)}},
		{"states", projector.RunFilter{States: []string{events.StateSuccess, events.StatePending}}, []string{runID(5), runID(4), runID(1)}},
		{"states and limit", projector.RunFilter{Job: "deploy", States: []string{events.StateSuccess}, Limit: 1}, []string{runID(4)}},
		{"job that sorts before another's prefix", projector.RunFilter{Job: "c"}, nil},
		{"unknown job", projector.RunFilter{Job: "zzz"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runs, err := p.Runs(e.ctx, tt.filter)
			require.NoError(t, err)
			assert.Equal(t, tt.want, ids(runs))
		})
	}

	latest, err := p.LatestRun(e.ctx, "")
	require.NoError(t, err)
	assert.Equal(t, runID(5), latest.ID)
	latest, err = p.LatestRun(e.ctx, "ci")
	require.NoError(t, err)
	assert.Equal(t, runID(3), latest.ID)
	require.Len(t, latest.Steps, 1, "LatestRun fills the steps")
	_, err = p.LatestRun(e.ctx, "nothing")
	assert.ErrorIs(t, err, events.ErrNotFound)

	active, err := p.ActiveRuns(e.ctx)
	require.NoError(t, err)
	assert.Equal(t, []projector.ActiveRun{
		{ID: runID(5), Job: "deploy", State: events.StatePending, RequestedSeq: 1},
		{ID: runID(3), Job: "ci", State: events.StateRunning, RequestedSeq: 2},
	}, active)
}
