package executor_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/executor"
	"github.com/orbitrun/orbit/internal/runrig"
	"github.com/orbitrun/orbit/internal/testkit"
)

const gateJob = `
schemaVersion: 2
kind: Job
metadata: {name: gate}
spec:
  steps:
    - id: approve
      wait: {signal: approved}
    - id: after
      spec: {type: deterministic, action: echo, config: {by: "{{ steps.approve.output.by }}"}}
`

func TestSignalOpensAGateAndPassesItsData(t *testing.T) {
	t.Parallel()
	log := runrig.EngineLog(t)
	ctx := testkit.Context(t)

	runID := runrig.Submit(t, log, runrig.ParseJob(t, gateJob), nil)
	runrig.WaitFor(t, "the gate to wait", func() bool { return runrig.Has(t, log, runID, events.StepStarted, "approve") })

	_, err := executor.Signal(ctx, log, runID, "rejected", nil, "test")
	require.ErrorIs(t, err, executor.ErrNotWaiting)
	assert.ErrorIs(t, err, events.ErrInvalidRequest)
	assert.Contains(t, err.Error(), "run "+runID+" is not waiting for signal rejected; it is waiting for signal approved (step approve, no deadline)")
	assert.False(t, runrig.Has(t, log, runID, events.RunSignalled, ""), "a refused signal is not recorded")

	res, err := executor.Signal(ctx, log, runID, "approved", map[string]any{"by": "ada"}, "test")
	require.NoError(t, err)
	assert.Equal(t, []executor.Gate{{StepKey: "approve", Attempt: 1, Signal: "approved"}}, res.Gates)
	fin := runrig.WaitFinished(t, log, runID)
	require.Equal(t, events.StateSuccess, fin.State, "%+v", fin.Error)
	assert.Equal(t, map[string]any{"by": "ada"}, fin.Output)

	_, err = executor.Signal(ctx, log, runID, "approved", nil, "test")
	require.ErrorIs(t, err, executor.ErrNotWaiting)
	assert.Contains(t, err.Error(), "it has finished (success) and waits for nothing")
	_, err = executor.Signal(ctx, log, "no-such-run", "approved", nil, "test")
	assert.ErrorIs(t, err, events.ErrNotFound)
}

func TestAGateTimesOutAndCanBeCancelled(t *testing.T) {
	t.Parallel()
	log := runrig.EngineLog(t)
	ctx := testkit.Context(t)

	runID, fin := runSpec(t, log, "brief", `
  steps:
    - id: approve
      wait: {signal: approved, timeout_seconds: 1}
`)
	require.Equal(t, events.StateFailed, fin.State)
	require.NotNil(t, fin.Error)
	assert.Equal(t, events.KindTimeout, fin.Error.Kind)
	assert.Equal(t, "approve", fin.Error.StepKey)
	assert.Equal(t, "no signal approved within 1s", fin.Error.Message)
	var started events.StepStartedData
	require.NoError(t, runrig.OfType(runrig.History(t, log, runID), events.StepStarted)[0].Decode(&started))
	require.NotNil(t, started.Wait.Deadline, "the deadline is recorded when the wait begins")
	finished := runrig.OfType(runrig.History(t, log, runID), events.StepFinished)[0]
	assert.False(t, finished.Time.Before(*started.Wait.Deadline), "the step times out at its deadline, not before")

	waiting := runrig.Submit(t, log, runrig.ParseJob(t, gateJob), nil)
	runrig.WaitFor(t, "the gate to wait", func() bool { return runrig.Has(t, log, waiting, events.StepStarted, "approve") })
	require.NoError(t, executor.RequestCancel(ctx, log, waiting, "test", ""))
	fin = runrig.WaitFinished(t, log, waiting)
	assert.Equal(t, events.StateCancelled, fin.State)
	assert.True(t, runrig.Has(t, log, waiting, events.StepFinished, "approve"), "the cancelled gate is finished on record")
}

// TestRestartDuringAGateCountsTheTimeoutFromTheRecordedStart stops the
// engine one second into a 3 s gate and starts a new one: the gate times
// out at the deadline recorded when it began, not 3 s after the restart.
func TestRestartDuringAGateCountsTheTimeoutFromTheRecordedStart(t *testing.T) {
	t.Parallel()
	r := newRestartRig(t)
	log := r.log
	job := jobSpec(t, "gated", `
  steps:
    - id: approve
      wait: {signal: approved, timeout_seconds: 3}
`)
	runID := r.submit(t, job, nil)
	runrig.WaitFor(t, "the gate to wait", func() bool { return runrig.Has(t, log, runID, events.StepStarted, "approve") })
	time.Sleep(time.Second)
	r.restart(t)
	fin := runrig.WaitFinished(t, log, runID)
	require.Equal(t, events.StateFailed, fin.State)
	assert.Equal(t, events.KindTimeout, fin.Error.Kind)

	evs := runrig.History(t, log, runID)
	var started events.StepStartedData
	require.Len(t, runrig.OfType(evs, events.StepStarted), 1, "the wait began once")
	require.NoError(t, runrig.OfType(evs, events.StepStarted)[0].Decode(&started))
	finished := runrig.OfType(evs, events.StepFinished)[0]
	assert.False(t, finished.Time.Before(*started.Wait.Deadline))
	assert.Less(t, finished.Time.Sub(*started.Wait.Deadline), 700*time.Millisecond, "only the remainder was waited after the restart")
	assert.Len(t, runrig.OfType(evs, events.RunResumed), 1)
}
