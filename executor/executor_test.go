package executor_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/executor"
	"github.com/orbitrun/orbit/internal/runrig"
	"github.com/orbitrun/orbit/internal/testkit"
)

const pipeline = `
schemaVersion: 2
kind: Job
metadata: {name: pipeline}
spec:
  default_input: {name: world, count: 2}
  steps:
    - id: first
      default_input: {who: "{{ input.name }}", twice: "{{ input.count }}"}
      spec: {type: deterministic, action: echo, config: {greeting: "{{ env.ORBIT_TEST_GREETING }} {{ input.who }}"}}
    - id: nap
      spec: {type: deterministic, action: sleep, config: {ms: 10}}
    - id: last
      spec:
        type: shell
        program: sh
        args: ["-c", "printf '%s|%s|%s' \"$1\" \"$2\" \"$3\"", "sh", "{{ steps.first.output.greeting }}", "{{ steps.first.state }}", '{{ "{{" }}.State}}']
        allowed_programs: [sh]
`

func TestSequentialJobPassesDataBetweenSteps(t *testing.T) {
	t.Parallel()
	log := runrig.EngineLog(t)

	runID, fin := runrig.RunJob(t, log, runrig.ParseJob(t, pipeline), map[string]any{"name": "Ada"})
	require.Equal(t, events.StateSuccess, fin.State, "%+v", fin.Error)
	out := fin.Output.(map[string]any)
	assert.Equal(t, "hi Ada|success|{{.State}}", out["stdout"])

	evs := runrig.History(t, log, runID)
	started := runrig.Starts(evs)
	require.Len(t, started, 3)
	first, ok := events.StepStart(started[0])
	require.True(t, ok)
	assert.Equal(t, map[string]any{"name": "Ada", "count": float64(2), "who": "Ada", "twice": float64(2)}, first.Input,
		"the step input is the job input (caller merged over default_input) with the rendered default_input merged over it")
	for _, ev := range runrig.OfType(evs, events.StepFinished) {
		assert.Equal(t, events.DecisionID(events.StepFinished, runID, ev.StepKey, "1"), ev.ID)
	}
}

func TestFailuresCarryTheFirstConcreteError(t *testing.T) {
	t.Parallel()
	log := runrig.EngineLog(t)

	cases := []struct {
		name, job string
		kind, msg string
		retryable bool
	}{
		{"fail action", `
schemaVersion: 2
kind: Job
metadata: {name: f}
spec:
  steps:
    - id: ok
      spec: {type: deterministic, action: echo}
    - id: broken
      spec: {type: deterministic, action: fail, config: {message: "it broke", retryable: true}}
    - id: after
      spec: {type: deterministic, action: echo}
`, events.KindActivity, "it broke", true},
		{"missing input", `
schemaVersion: 2
kind: Job
metadata: {name: m}
spec:
  steps:
    - id: needs
      default_input: {x: "{{ input.absent }}"}
      spec: {type: deterministic, action: echo}
`, events.KindValidation, `{{ input.absent }}`, false},
		{"program outside the allowlist after rendering", `
schemaVersion: 2
kind: Job
metadata: {name: a}
spec:
  default_input: {prog: rm}
  steps:
    - id: sneaky
      spec: {type: shell, program: "{{ input.prog }}", allowed_programs: [echo]}
`, events.KindAllowlist, `"rm" is not in allowed_programs`, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			runID, fin := runrig.RunJob(t, log, runrig.ParseJob(t, tc.job), nil)
			assert.Equal(t, events.StateFailed, fin.State)
			require.NotNil(t, fin.Error)
			assert.Equal(t, tc.kind, fin.Error.Kind)
			assert.Contains(t, fin.Error.Message, tc.msg)
			assert.Equal(t, tc.retryable, fin.Error.Retryable)
			assert.NotEmpty(t, fin.Error.StepKey)
			for _, ev := range runrig.OfType(runrig.History(t, log, runID), events.StepStarted) {
				assert.NotEqual(t, "after", ev.StepKey, "nothing runs after a failed step")
			}
		})
	}
}

func TestSubmittingTheSameRequestTwiceRunsOnce(t *testing.T) {
	t.Parallel()
	log := runrig.EngineLog(t)
	req, err := executor.NewRunRequest(runrig.ParseJob(t, pipeline), nil, "test")
	require.NoError(t, err)
	ctx := testkit.Context(t)
	require.NoError(t, executor.Submit(ctx, log, req))
	require.NoError(t, executor.Submit(ctx, log, req))
	runrig.WaitFinished(t, log, req.RunID)
	evs := runrig.History(t, log, req.RunID)
	assert.Len(t, runrig.OfType(evs, events.RunRequested), 1)
	assert.Len(t, runrig.OfType(evs, events.RunStarted), 1)
	assert.Len(t, runrig.Starts(evs), 3)
}

// TestARequestSentAgainPastTheDedupeWindowRunsOnce: a run's request sent
// again as a new command — the server's Nats-Msg-Id window (2 min) long
// past, as when a resumed parent sends its child's request again or a
// routine fires a tick again after a restart — reaches the orchestrator on
// its first delivery. The orchestrator's look for an earlier run.requested
// is what keeps the run from being requested and run a second time, which
// is why a first delivery does not skip it.
func TestARequestSentAgainPastTheDedupeWindowRunsOnce(t *testing.T) {
	t.Parallel()
	log := testkit.StartLog(t, events.Config{Listen: "127.0.0.1:0"})
	runrig.StartEngine(t, log, t.TempDir(), nil)
	req, err := executor.NewRunRequest(runrig.ParseJob(t, pipeline), nil, "test")
	require.NoError(t, err)
	ctx := testkit.Context(t)
	require.NoError(t, executor.Submit(ctx, log, req))
	runrig.WaitFinished(t, log, req.RunID)
	before := runrig.History(t, log, req.RunID)

	// The window past: the server no longer drops an event with the id
	// of one it stored as a duplicate.
	js, err := jetstream.New(testkit.DialEngine(t, log.ClientURL(), log.CredsDir()))
	require.NoError(t, err)
	stream, err := js.Stream(ctx, events.EventsStream)
	require.NoError(t, err)
	cfg := stream.CachedInfo().Config
	cfg.Duplicates = 100 * time.Millisecond
	_, err = js.UpdateStream(ctx, cfg)
	require.NoError(t, err)
	time.Sleep(300 * time.Millisecond)
	// Another command id: not a duplicate of the first command either.
	require.NoError(t, log.Send(ctx, "run.request", "sent-again-"+req.RunID, req))
	runrig.WaitFor(t, "the request to be taken", func() bool {
		pending, err := log.Pending(ctx, "run.request")
		require.NoError(t, err)
		return !pending
	})
	time.Sleep(200 * time.Millisecond)
	assert.Equal(t, len(before), len(runrig.History(t, log, req.RunID)), "nothing recorded for the request sent again")
}

// TestRedeliveredCommandOfAFinishedStepIsNotRunAgain leaves a step command
// in the queue after its step.finished was recorded — what a crash between
// the finished event and the ack leaves behind — and starts a worker: the
// command is acknowledged without the activity running.
func TestRedeliveredCommandOfAFinishedStepIsNotRunAgain(t *testing.T) {
	t.Parallel()
	log := testkit.StartLog(t, events.Config{})
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	job := jobSpec(t, "once", `
  steps:
    - id: touch
      spec: {type: shell, program: touch, args: [ran], allowed_programs: [touch]}
`)
	e := runrig.StartEngine(t, log, dir, nil)
	runID, fin := runrig.RunJob(t, log, job, nil)
	require.Equal(t, events.StateSuccess, fin.State)
	e.Stop()
	require.NoError(t, os.Remove(marker))

	// The command as the orchestrator sent it, back in the queue, as a crash
	// between step.finished and the ack leaves it.
	ctx := testkit.Context(t)
	name, err := runrig.ResendStepCommand(ctx, log, runID, "touch", 1, job, dir)
	require.NoError(t, err)

	runrig.StartEngine(t, log, dir, nil)
	require.Eventually(t, func() bool {
		pending, err := log.Pending(ctx, name)
		return err == nil && !pending
	}, 10*time.Second, 20*time.Millisecond, "the command is acknowledged")
	_, err = os.Stat(marker)
	assert.True(t, os.IsNotExist(err), "the finished step must not run again")
	assert.Empty(t, runrig.OfType(runrig.History(t, log, runID), events.ActivityStarted), "nothing ran but the first execution, which has none")
}
