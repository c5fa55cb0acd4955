package runrig

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/executor"
	"github.com/orbitrun/orbit/internal/testkit"
	"github.com/orbitrun/orbit/interpreter"
)

// ParseJob parses a job from yaml, as test.yaml.
func ParseJob(t *testing.T, yaml string) *assets.Job {
	t.Helper()
	job, err := assets.ParseJob("test.yaml", []byte(yaml), nil)
	require.NoError(t, err)
	return job
}

// Submit submits a run of job on input and returns its id.
func Submit(t *testing.T, log *events.Log, job *assets.Job, input any) string {
	t.Helper()
	req, err := executor.NewRunRequest(job, input, "test")
	require.NoError(t, err)
	require.NoError(t, executor.Submit(testkit.Context(t), log, req))
	return req.RunID
}

// RunJob submits a job and waits for its run.finished event.
func RunJob(t *testing.T, log *events.Log, job *assets.Job, input any) (string, events.RunFinishedData) {
	t.Helper()
	req, err := executor.NewRunRequest(job, input, "test")
	require.NoError(t, err)
	ctx := testkit.Context(t)
	require.NoError(t, executor.Submit(ctx, log, req))
	return req.RunID, WaitFinished(t, log, req.RunID)
}

// RunYAML runs the job written in yaml, on its default input, and waits
// for its run.finished event.
func RunYAML(t *testing.T, log *events.Log, yaml string) (string, events.RunFinishedData) {
	t.Helper()
	return RunJob(t, log, ParseJob(t, yaml), nil)
}

// WaitFinished waits for run runID's run.finished event.
func WaitFinished(t *testing.T, log *events.Log, runID string) events.RunFinishedData {
	t.Helper()
	ctx := testkit.Context(t)
	feed, err := log.Follow(ctx, events.FollowOptions{Filters: []string{events.EventSubject(events.AggregateRun, runID, events.RunFinished)}})
	require.NoError(t, err)
	defer feed.Stop()
	select {
	case ev := <-feed.Events():
		var d events.RunFinishedData
		require.NoError(t, ev.Decode(&d))
		return d
	case <-ctx.Done():
		t.Fatalf("run %s did not finish", runID)
	}
	return events.RunFinishedData{}
}

// WaitFor waits until cond holds, failing the test with what if it does
// not within 20 seconds.
func WaitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	require.Eventually(t, cond, 20*time.Second, 10*time.Millisecond, what)
}

// History reads every event of run runID.
func History(t *testing.T, log *events.Log, runID string) []events.Event {
	t.Helper()
	evs, err := log.Read(testkit.Context(t), events.FollowOptions{Filters: []string{events.RunFilter(runID)}})
	require.NoError(t, err)
	return evs
}

// OfType is the events of evs of type typ.
func OfType(evs []events.Event, typ string) []events.Event {
	var out []events.Event
	for _, ev := range evs {
		if ev.Type == typ {
			out = append(out, ev)
		}
	}
	return out
}

// Starts returns the events of evs that start a step attempt, in order:
// its step.started, or the one step.finished of a step the orchestrator
// decided (events.StepStart).
func Starts(evs []events.Event) []events.Event {
	var out []events.Event
	for _, ev := range evs {
		if _, ok := events.StepStart(ev); ok {
			out = append(out, ev)
		}
	}
	return out
}

// Has reports whether run runID has an event of type typ, of step key
// (any step or none when key is empty).
func Has(t *testing.T, log *events.Log, runID, typ, key string) bool {
	for _, ev := range OfType(History(t, log, runID), typ) {
		if key == "" || ev.StepKey == key {
			return true
		}
	}
	return false
}

// DecodeAll decodes the payloads of evs.
func DecodeAll[T any](t *testing.T, evs []events.Event) []T {
	t.Helper()
	out := make([]T, len(evs))
	for i, ev := range evs {
		require.NoError(t, ev.Decode(&out[i]))
	}
	return out
}

// StepOutput is the output of step key's last step.finished in run runID.
func StepOutput(t *testing.T, log *events.Log, runID, key string) map[string]any {
	t.Helper()
	var out map[string]any
	for _, ev := range OfType(History(t, log, runID), events.StepFinished) {
		if ev.StepKey != key {
			continue
		}
		var d events.StepFinishedData
		require.NoError(t, ev.Decode(&d))
		out, _ = d.Output.(map[string]any)
	}
	require.NotNil(t, out, "no output of %s", key)
	return out
}

// CLIJob is a one-step agent job on the cli backend with the given
// executor script.
func CLIJob(t *testing.T, script, output string, timeout int) *assets.Job {
	t.Helper()
	job := ParseJob(t, `
schemaVersion: 2
kind: Job
metadata: {name: cli_agent}
spec:
  steps:
    - id: agent
      default_input: {prompt: "Fix the build.", ticket: 42}
      spec:
        type: agent_loop
        provider: claude
        model: claude-x
        instruction: "You fix builds for {{ input.ticket }}."
        tools: [fs.read, shell.exec]
        wall_clock_timeout_seconds: `+strconv.Itoa(timeout)+`
`)
	spec := job.Spec.Steps[0].Activity
	spec.Backend = assets.BackendCLI
	spec.Executor = "fake"
	spec.ExecutorSpec = &assets.ExecutorSpec{Command: script, Output: output}
	return job
}

// WriteScript writes an executable sh script of body in a temp dir of
// the test's and returns its path.
func WriteScript(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "fake-agent")
	require.NoError(t, os.WriteFile(path, []byte("#!/bin/sh\n"+body), 0o755))
	return path
}

// FixerActivity is a shell recovery activity that appends the step id and
// key, the error kind and the step's input want to recovery.log and
// touches ready.txt.
const FixerActivity = `
schemaVersion: 2
kind: Activity
metadata: {name: fixer}
spec:
  type: shell
  program: sh
  args: ["-c", "printf '%s|%s|%s|%s' \"$1\" \"$2\" \"$3\" \"$4\" >> recovery.log; touch ready.txt", "sh",
         "{{ input.step_id }}", "{{ input.step_key }}", "{{ input.error.kind }}", "{{ input.input.want }}"]
  allowed_programs: [sh]
`

// ResendStepCommand stores the command of one attempt of a top-level step
// again, under a fresh message id, as if it had never been acknowledged.
func ResendStepCommand(ctx context.Context, log *events.Log, runID, key string, attempt int, job *assets.Job, root string) (string, error) {
	cmd, err := interpreter.Command(interpreter.Config{RunID: runID, Job: job, Workspace: root, Env: os.LookupEnv}, key, attempt, nil)
	if err != nil {
		return "", err
	}
	name := interpreter.StepCommandName(cmd.Activity.Type, runID, key, attempt)
	return name, log.Send(ctx, name, events.NewID(), cmd)
}

// RequestUnder appends the run.requested of a run of job on input under
// step protocol protocol, as an engine of that protocol recorded it, and
// returns its id: an engine started on the log with the run among its
// active runs runs it.
func RequestUnder(t *testing.T, log *events.Log, job *assets.Job, input any, protocol int) string {
	t.Helper()
	raw, err := json.Marshal(job)
	require.NoError(t, err)
	runID := events.NewID()
	_, err = log.Append(testkit.Context(t), events.Event{ID: events.DecisionID(events.RunRequested, runID), Type: events.RunRequested, RunID: runID, Job: job.Name},
		events.RunRequestedData{JobName: job.Name, Job: raw, Input: input, Requester: "test", Protocol: protocol})
	require.NoError(t, err)
	return runID
}
