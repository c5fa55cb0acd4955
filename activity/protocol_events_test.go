package activity_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/activity"
	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/executor"
	"github.com/orbitrun/orbit/internal/runrig"
	"github.com/orbitrun/orbit/internal/testkit"
	"github.com/orbitrun/orbit/interpreter"
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

// protocolJob has a step of a pure built-in action, a deterministic step
// a worker runs and a shell step.
const protocolJob = `
schemaVersion: 2
kind: Job
metadata: {name: protocol}
spec:
  steps:
    - id: pure
      spec: {type: deterministic, action: echo, config: {a: 1}}
    - id: waited
      spec: {type: deterministic, action: sleep, config: {ms: 0}}
    - id: forked
      spec: {type: shell, program: echo, args: [hi], allowed_programs: [echo]}
`

// Under step protocol 5 on an embedded store a step of a pure built-in
// action is one event, its step.finished, written by the orchestrator,
// which names its engine as the worker and no delivery and carries what
// the step.started would have (the activity type and the input); any
// other step a worker ran first time is its step.started and its
// step.finished, which names the worker and delivery (and a shell step's
// shell.exited between them): no activity.started, no activity.finished.
func TestProtocol5StepEvents(t *testing.T) {
	t.Parallel()
	log := runrig.EngineLog(t)
	runID, fin := runrig.RunYAML(t, log, protocolJob)
	require.Equal(t, events.StateSuccess, fin.State, "%+v", fin.Error)
	evs := runrig.History(t, log, runID)
	var req events.RunRequestedData
	require.NoError(t, runrig.OfType(evs, events.RunRequested)[0].Decode(&req))
	assert.Equal(t, 5, req.Protocol)
	assert.Equal(t, map[string][]string{
		"pure":   {events.StepFinished},
		"waited": {events.StepStarted, events.StepFinished},
		"forked": {events.StepStarted, events.ShellExited, events.StepFinished},
	}, stepTypes(evs))

	ends := runrig.DecodeAll[events.StepFinishedData](t, runrig.OfType(evs, events.StepFinished))
	require.Len(t, ends, 3)
	for _, d := range ends {
		assert.NotEmpty(t, d.Worker, "step.finished names who ran it")
		assert.Equal(t, events.StateSuccess, d.State)
	}
	assert.Equal(t, 0, ends[0].Delivery, "the orchestrator decided the pure step: no command was delivered")
	require.NotNil(t, ends[0].Started, "the decided step's one event says how it started")
	assert.Equal(t, "deterministic", ends[0].Started.ActivityType)
	assert.Nil(t, ends[1].Started)
	assert.Equal(t, 1, ends[1].Delivery)
	assert.Equal(t, 1, ends[2].Delivery)
	var started events.RunStartedData
	require.NoError(t, runrig.OfType(evs, events.RunStarted)[0].Decode(&started))
	assert.Equal(t, started.Engine, ends[0].Worker, "the pure step names the engine whose orchestrator decided it")
}

// A run requested under step protocol 4 keeps its events on today's
// engine: a step with effects outside the log has its activity.started,
// stored before the effect, naming the worker that then names itself in
// the step.finished.
func TestProtocol4StepEvents(t *testing.T) {
	t.Parallel()
	log := testkit.StartLog(t, events.Config{})
	runID := runrig.RequestUnder(t, log, runrig.ParseJob(t, protocolJob), nil, 4)
	runrig.StartEngine(t, log, t.TempDir(), func(context.Context) ([]string, error) { return []string{runID}, nil })
	fin := runrig.WaitFinished(t, log, runID)
	require.Equal(t, events.StateSuccess, fin.State, "%+v", fin.Error)
	evs := runrig.History(t, log, runID)
	assert.Equal(t, map[string][]string{
		"pure":   {events.StepFinished},
		"waited": {events.StepStarted, events.StepFinished},
		"forked": {events.StepStarted, events.ActivityStarted, events.ShellExited, events.StepFinished},
	}, stepTypes(evs))
	ends := runrig.DecodeAll[events.StepFinishedData](t, runrig.OfType(evs, events.StepFinished))
	starts := runrig.DecodeAll[events.ActivityStartedData](t, runrig.OfType(evs, events.ActivityStarted))
	require.Len(t, ends, 3)
	require.Len(t, starts, 1)
	assert.Equal(t, starts[0].Worker, ends[2].Worker)
	assert.False(t, starts[0].Redelivered)
}

// Under step protocol 4 a job of pure steps runs on an orchestrator with
// no worker at all, and queues no command: its steps, a failing one's
// retries among them, are decided where the run is.
func TestPureStepsNeedNoWorker(t *testing.T) {
	t.Parallel()
	log := testkit.StartLog(t, events.Config{})
	ctx, cancel := context.WithCancel(testkit.Context(t))
	orch := executor.NewOrchestrator(executor.Config{Log: log, Root: t.TempDir()})
	done := make(chan error, 1)
	go func() { done <- orch.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		assert.NoError(t, <-done)
	})
	before, err := log.CommandsLastSeq(ctx, interpreter.CmdStepPrefix+">")
	require.NoError(t, err)
	runID, fin := runrig.RunJob(t, log, runrig.ParseJob(t, `
schemaVersion: 2
kind: Job
metadata: {name: pure}
spec:
  steps:
    - id: first
      spec: {type: deterministic, action: echo, config: {a: 1}}
    - id: second
      spec: {type: deterministic, action: echo, config: {b: "{{ steps.first.output.a }}"}}
    - id: third
      retry: {max_attempts: 3, initial_backoff_ms: 1}
      spec: {type: deterministic, action: fail, config: {message: no luck, retryable: true}}
`), map[string]any{"given": "in"})
	require.Equal(t, events.StateFailed, fin.State)
	require.NotNil(t, fin.Error)
	assert.Contains(t, fin.Error.Message, "no luck")
	assert.Equal(t, map[string]any{"given": "in", "b": float64(1)}, runrig.StepOutput(t, log, runID, "second"))
	evs := runrig.History(t, log, runID)
	ends := runrig.DecodeAll[events.StepFinishedData](t, runrig.OfType(evs, events.StepFinished))
	require.Len(t, ends, 5, "two echo steps and three attempts of the failing one")
	for _, d := range ends[2:] {
		assert.Equal(t, events.StateFailed, d.State)
	}
	after, err := log.CommandsLastSeq(ctx, interpreter.CmdStepPrefix+">")
	require.NoError(t, err)
	assert.Equal(t, before, after, "no step command was sent")
}

// A pure step whose config reads a secret is run by a worker, which puts
// the secret in from its engine's environment: the orchestrator never
// holds the value.
func TestAPureStepThatReadsASecretGoesToAWorker(t *testing.T) {
	t.Setenv("ORBIT_TEST_DEPLOY_TOKEN", "s3cr3t-value-for-the-test")
	log := testkit.StartLog(t, events.Config{})
	runrig.Start(t, executor.Config{Log: log, Root: t.TempDir(), Env: os.LookupEnv}, activity.WorkerConfig{Log: log})
	runID, fin := runrig.RunYAML(t, log, `
schemaVersion: 2
kind: Job
metadata: {name: secretive}
spec:
  steps:
    - id: use
      spec: {type: deterministic, action: echo, config: {token: "{{ env.ORBIT_TEST_DEPLOY_TOKEN }}"}}
`)
	require.Equal(t, events.StateSuccess, fin.State, "%+v", fin.Error)
	ends := runrig.DecodeAll[events.StepFinishedData](t, runrig.OfType(runrig.History(t, log, runID), events.StepFinished))
	require.Len(t, ends, 1)
	assert.Equal(t, 1, ends[0].Delivery, "a worker ran it")
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

// The recovery activity of a step the orchestrator decided gets the input
// the step's one event recorded as its start: default_input merged over
// the scope's input, which only that record holds.
func TestARecoveryOfADecidedStepGetsItsRecordedInput(t *testing.T) {
	t.Parallel()
	log := runrig.EngineLog(t)
	note, err := assets.ParseActivity("note.yaml", []byte(`
schemaVersion: 2
kind: Activity
metadata: {name: note}
spec: {type: deterministic, action: echo}
`))
	require.NoError(t, err)
	job, err := assets.ParseJob("rec.yaml", []byte(`
schemaVersion: 2
kind: Job
metadata: {name: rec}
spec:
  recovery_activity: note
  steps:
    - id: broken
      default_input: {want: ready}
      spec: {type: deterministic, action: fail, config: {message: broken}}
`), func(string) (*assets.Activity, error) { return note, nil })
	require.NoError(t, err)
	runID, fin := runrig.RunJob(t, log, job, map[string]any{"given": "in"})
	require.Equal(t, events.StateFailed, fin.State)
	out := runrig.StepOutput(t, log, runID, "broken/recovery")
	assert.Equal(t, map[string]any{"given": "in", "want": "ready"}, out["input"])
}

// A command the orchestrator sends again from the log is marked resent,
// and its worker records its execution as a possible repeat: the engine
// stops while a shell step runs its first execution (which under step
// protocol 5 on an embedded store has no activity.started) and the
// step's command is lost with it, as ORBIT_STEPS, persisted
// asynchronously, may lose it in a crash. The next engine finds the
// step.started with no command queued, sends it again, and the execution
// that runs then has its activity.started, redelivered, though its
// command is on its first delivery.
func TestAResentCommandIsRecordedAsAPossibleRepeat(t *testing.T) {
	t.Parallel()
	ctx := testkit.Context(t)
	store := filepath.Join(t.TempDir(), "nats")
	log, err := events.Open(ctx, events.Config{StoreDir: store, Listen: "127.0.0.1:0", Redactor: &events.Redactor{}})
	require.NoError(t, err)
	dir := t.TempDir()
	ran, gate := filepath.Join(dir, "ran.txt"), filepath.Join(dir, "gate")
	job := runrig.ParseJob(t, `
schemaVersion: 2
kind: Job
metadata: {name: lost}
spec:
  steps:
    - id: work
      spec:
        type: shell
        program: sh
        args: ["-c", "echo ran >> `+ran+`; while [ ! -e `+gate+` ]; do sleep 0.05; done"]
        allowed_programs: [sh]
`)
	runs := func() int {
		data, _ := os.ReadFile(ran)
		return strings.Count(string(data), "ran")
	}
	first := runrig.StartEngine(t, log, dir, nil)
	runID := runrig.Submit(t, log, job, nil)
	runrig.WaitFor(t, "the first execution", func() bool { return runs() == 1 })
	assert.False(t, runrig.Has(t, log, runID, events.ActivityStarted, "work"), "a first execution on an embedded store has no activity.started")
	first.Stop()
	// The command is lost, and with the server goes the memory of its id
	// that would drop a copy sent again.
	nc := testkit.DialEngine(t, log.ClientURL(), log.CredsDir())
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	steps, err := js.Stream(ctx, events.StepsStream)
	require.NoError(t, err)
	require.NoError(t, steps.Purge(ctx))
	nc.Close()
	require.NoError(t, log.Close())
	log = testkit.StartLog(t, events.Config{StoreDir: store})

	runrig.StartEngine(t, log, dir, func(context.Context) ([]string, error) { return []string{runID}, nil })
	runrig.WaitFor(t, "the execution of the resent command", func() bool { return runs() == 2 })
	require.NoError(t, os.WriteFile(gate, nil, 0o600))
	fin := runrig.WaitFinished(t, log, runID)
	require.Equal(t, events.StateSuccess, fin.State, "%+v", fin.Error)
	evs := runrig.History(t, log, runID)
	starts := runrig.DecodeAll[events.ActivityStartedData](t, runrig.OfType(evs, events.ActivityStarted))
	require.Len(t, starts, 1, "the repeat, and only it, is on record")
	assert.True(t, starts[0].Redelivered)
	assert.Equal(t, 1, starts[0].Delivery, "the resent command's first delivery")
	ends := runrig.DecodeAll[events.StepFinishedData](t, runrig.OfType(evs, events.StepFinished))
	require.Len(t, ends, 1)
	assert.Equal(t, 1, ends[0].Delivery)
}
