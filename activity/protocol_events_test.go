package activity_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/activity"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/executor"
	"github.com/orbitrun/orbit/internal/runrig"
	"github.com/orbitrun/orbit/internal/testkit"
)

func init() { activity.Declare("protocol_test_hang") }

// stepTypes lists the types of a run's events about each step key, in log
// order.
func stepTypes(evs []events.Event) map[string][]string {
	types := map[string][]string{}
	for _, ev := range evs {
		if ev.StepKey != "" {
			types[ev.StepKey] = append(types[ev.StepKey], ev.Type)
		}
	}
	return types
}

// Under step protocol 3 a deterministic step is its step.started and its
// step.finished, which carries the execution's outcome, duration, worker
// and delivery; a step with effects outside the log keeps its
// activity.started, stored before the effect; no step has an
// activity.finished.
func TestProtocol3StepEvents(t *testing.T) {
	t.Parallel()
	log := runrig.EngineLog(t)
	runID, fin := runrig.RunYAML(t, log, `
schemaVersion: 2
kind: Job
metadata: {name: protocol3}
spec:
  steps:
    - id: pure
      spec: {type: deterministic, action: echo, config: {a: 1}}
    - id: forked
      spec: {type: shell, program: echo, args: [hi], allowed_programs: [echo]}
`)
	require.Equal(t, events.StateSuccess, fin.State, "%+v", fin.Error)
	evs := runrig.History(t, log, runID)
	var req events.RunRequestedData
	require.NoError(t, runrig.OfType(evs, events.RunRequested)[0].Decode(&req))
	assert.GreaterOrEqual(t, req.Protocol, 3, "protocol 4 changed a fan-out item's input only")
	assert.Equal(t, map[string][]string{
		"pure":   {events.StepStarted, events.StepFinished},
		"forked": {events.StepStarted, events.ActivityStarted, events.ShellExited, events.StepFinished},
	}, stepTypes(evs))

	ends := runrig.DecodeAll[events.StepFinishedData](t, runrig.OfType(evs, events.StepFinished))
	starts := runrig.DecodeAll[events.ActivityStartedData](t, runrig.OfType(evs, events.ActivityStarted))
	require.Len(t, ends, 2)
	for _, d := range ends {
		assert.NotEmpty(t, d.Worker, "step.finished names the worker that ran it")
		assert.Equal(t, 1, d.Delivery)
		assert.Equal(t, events.StateSuccess, d.State)
	}
	assert.Equal(t, starts[0].Worker, ends[1].Worker)
}

// A deterministic action's execution that a crash interrupted runs again
// on the command's redelivery, and that one has its activity.started
// (redelivered): the record of a possible repeat that the first,
// unrecorded execution does not need.
func TestProtocol3RecordsARedeliveredDeterministicStart(t *testing.T) {
	t.Parallel()
	log := testkit.StartLog(t, events.Config{})
	root := t.TempDir()
	calls := make(chan struct{}, 2)
	hang := activity.Action{Run: func(ctx context.Context, c *activity.ActionCall) (any, error) {
		calls <- struct{}{}
		if len(calls) == 1 {
			<-ctx.Done() // the first execution lasts until its engine stops
			return nil, ctx.Err()
		}
		return map[string]any{"ran": true}, nil
	}}
	start := func(active func(context.Context) ([]string, error)) *runrig.Engine {
		return runrig.Start(t, executor.Config{Log: log, Root: root, ActiveRuns: active},
			activity.WorkerConfig{Log: log, Actions: map[string]activity.Action{"protocol_test_hang": hang}})
	}
	first := start(nil)
	runID := runrig.Submit(t, log, runrig.ParseJob(t, `
schemaVersion: 2
kind: Job
metadata: {name: hanging}
spec:
  steps:
    - id: hang
      spec: {type: deterministic, action: protocol_test_hang}
`), nil)
	runrig.WaitFor(t, "the first execution", func() bool { return len(calls) == 1 })
	first.Stop()
	assert.False(t, runrig.Has(t, log, runID, events.ActivityStarted, "hang"), "a first execution without effects outside the log has no activity.started")

	start(func(context.Context) ([]string, error) { return []string{runID}, nil })
	require.Equal(t, events.StateSuccess, runrig.WaitFinished(t, log, runID).State)
	evs := runrig.History(t, log, runID)
	starts := runrig.DecodeAll[events.ActivityStartedData](t, runrig.OfType(evs, events.ActivityStarted))
	require.Len(t, starts, 1)
	assert.True(t, starts[0].Redelivered)
	assert.Empty(t, runrig.OfType(evs, events.ActivityFinished))
}
