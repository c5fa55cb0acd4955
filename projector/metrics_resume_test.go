package projector_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/projector"
)

// TestMetricsCountAResumedRunOnceByItsLastEnd: a run stopped by its budget
// twice, raised each time, that then succeeds is one run of its job,
// counted under success, and its duration is counted once (each end
// measures from run.started). While it runs again it is in no finished
// count; a run stopped and never raised stays budget_exhausted. A replay
// folds the same.
func TestMetricsCountAResumedRunOnceByItsLastEnd(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p := e.open(projector.Config{})
	e.start(p)
	resumed, stopped := runID(1), runID(2)
	add := func(run, typ string, payload any) uint64 {
		return e.append(events.Event{Type: typ, RunID: run, Job: "agent"}, payload)
	}
	jobAt := func(seq uint64) projector.JobMetrics {
		t.Helper()
		require.NoError(t, p.WaitFor(e.ctx, seq))
		m, err := p.Metrics(e.ctx)
		require.NoError(t, err)
		return m.Jobs["agent"]
	}
	exhausted := events.RunFinishedData{State: events.StateBudgetExhausted}

	add(resumed, events.RunRequested, events.RunRequestedData{JobName: "agent"})
	add(resumed, events.RunStarted, events.RunStartedData{Engine: "e1"})
	exhausted.DurationMS = 1000
	seq := add(resumed, events.RunFinished, exhausted)
	assert.Equal(t, projector.JobMetrics{Runs: 1, States: map[string]int64{events.StateBudgetExhausted: 1}, TotalDurationMS: 1000}, jobAt(seq))

	seq = add(resumed, events.RunBudgetRaised, events.RunBudgetRaisedData{Raise: 1, MaxTokens: 2000, Tokens: 1000})
	assert.Equal(t, projector.JobMetrics{TotalDurationMS: 1000}, jobAt(seq), "a raised run is running, not finished")

	add(resumed, events.RunResumed, events.RunResumedData{Engine: "e2"})
	exhausted.DurationMS = 2500
	add(resumed, events.RunFinished, exhausted)
	add(resumed, events.RunBudgetRaised, events.RunBudgetRaisedData{Raise: 2, MaxTokens: 4000, Tokens: 2000})
	add(resumed, events.RunResumed, events.RunResumedData{Engine: "e1"})
	add(resumed, events.RunFinished, events.RunFinishedData{State: events.StateSuccess, DurationMS: 4000})

	add(stopped, events.RunRequested, events.RunRequestedData{JobName: "agent"})
	add(stopped, events.RunStarted, events.RunStartedData{Engine: "e1"})
	exhausted.DurationMS = 300
	last := add(stopped, events.RunFinished, exhausted)

	assert.Equal(t, projector.JobMetrics{Runs: 2,
		States:          map[string]int64{events.StateSuccess: 1, events.StateBudgetExhausted: 1},
		TotalDurationMS: 4300}, jobAt(last))

	report, err := p.Replay(e.ctx, true)
	require.NoError(t, err)
	assert.Zero(t, report.TotalDifferences, "%+v", report.Differences)
}
