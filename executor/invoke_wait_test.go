package executor_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/executor"
	"github.com/orbitrun/orbit/internal/runrig"
	"github.com/orbitrun/orbit/internal/testkit"
)

// startWithAdmission starts an orchestrator and a worker that find jobs by
// name and answer invoke_and_wait's admission check with admit.
func startWithAdmission(t *testing.T, log *events.Log, admit func([]string, string) *executor.Admission, jobs ...*assets.Job) {
	t.Helper()
	startWithConfig(t, executor.Config{Log: log,
		Admission: func(_ context.Context, ids []string, workflow string) (*executor.Admission, error) {
			return admit(ids, workflow), nil
		}}, jobs...)
}

const gate = `
schemaVersion: 2
kind: Job
metadata: {name: gate}
spec:
  default_input: {child: good, timeout: 0}
  steps:
    - id: dispatch
      default_input:
        job_name: "{{ input.child }}"
        run_input: {word: hello}
        timeout_seconds: "{{ input.timeout }}"
        admission_task_ids: [T-1]
        admission_workflow: worktree_setup
      spec: {type: deterministic, action: invoke_and_wait}
    - id: cleanup
      spec: {type: deterministic, action: echo, config: {status: "{{ steps.dispatch.output.status }}"}}
    - id: guard
      default_input: {context: gate child, result: "{{ steps.dispatch.output }}"}
      spec: {type: deterministic, action: pipeline_success_guard}
`

const childJobs = `
schemaVersion: 2
kind: Job
metadata: {name: good}
spec:
  steps:
    - id: say
      spec: {type: deterministic, action: echo, config: {said: "{{ input.word }}"}}
`

func TestInvokeAndWaitReturnsTheChildsEndAsData(t *testing.T) {
	t.Parallel()
	log := testkit.StartLog(t, events.Config{})
	bad := jobSpec(t, "bad", `
  steps:
    - id: boom
      spec: {type: deterministic, action: fail, config: {message: "it broke"}}
`)
	slow := jobSpec(t, "slow", `
  steps:
    - id: nap
      spec: {type: deterministic, action: sleep, config: {ms: 3000}}
`)
	var checks atomic.Int32
	startWithAdmission(t, log, func([]string, string) *executor.Admission { checks.Add(1); return &executor.Admission{} },
		runrig.ParseJob(t, childJobs), bad, slow)
	g := runrig.ParseJob(t, gate)

	runID, fin := runrig.RunJob(t, log, g, map[string]any{"child": "good"})
	require.Equal(t, events.StateSuccess, fin.State, "%+v", fin.Error)
	out := runrig.StepOutput(t, log, runID, "dispatch")
	assert.Equal(t, "succeeded", out["status"])
	assert.Equal(t, map[string]any{"said": "hello", "word": "hello"}, out["pipeline"])
	assert.NotEmpty(t, out["run_id"])
	assert.Equal(t, int32(1), checks.Load())

	runID, fin = runrig.RunJob(t, log, g, map[string]any{"child": "bad"})
	require.Equal(t, events.StateFailed, fin.State)
	out = runrig.StepOutput(t, log, runID, "dispatch")
	assert.Equal(t, "failed", out["status"], "the child's failure is data")
	assert.Contains(t, out["error"], "it broke")
	assert.Equal(t, "failed", runrig.StepOutput(t, log, runID, "cleanup")["status"], "the step after it ran")
	assert.Equal(t, "guard", fin.Error.StepKey, "the guard fails the run")
	assert.Contains(t, fin.Error.Message, "gate child: 1 of 1 did not succeed: run "+out["run_id"].(string)+" failed")

	runID, fin = runrig.RunJob(t, log, g, map[string]any{"child": "slow", "timeout": 1})
	require.Equal(t, events.StateFailed, fin.State)
	out = runrig.StepOutput(t, log, runID, "dispatch")
	assert.Equal(t, "timeout", out["status"])
	child := out["run_id"].(string)
	assert.Equal(t, events.StateSuccess, runrig.WaitFinished(t, log, child).State, "the child goes on after the wait gave up")
}

func TestInvokeAndWaitSkipsTasksTheAdmissionCheckTurnsAway(t *testing.T) {
	t.Parallel()
	log := testkit.StartLog(t, events.Config{})
	var asked []string
	startWithAdmission(t, log, func(ids []string, workflow string) *executor.Admission {
		asked = append(asked, fmt.Sprint(ids, " ", workflow))
		return &executor.Admission{Skip: "T-1 is in review already", Statuses: []executor.TaskStatus{{TaskID: "T-1", Status: "review"}}}
	}, runrig.ParseJob(t, childJobs))

	runID, fin := runrig.RunJob(t, log, runrig.ParseJob(t, gate), nil)
	require.Equal(t, events.StateSuccess, fin.State, "%+v", fin.Error)
	out := runrig.StepOutput(t, log, runID, "dispatch")
	assert.Equal(t, map[string]any{"status": "succeeded", "run_id": "", "skipped": true, "reason": "T-1 is in review already",
		"task_statuses": []any{map[string]any{"task_id": "T-1", "status": "review"}}}, out)
	assert.Equal(t, []string{"[T-1] worktree_setup"}, asked)
	assert.Empty(t, runsOf(t, log, "good"), "no child was started")
}

func TestSuccessGuardNamesEveryChildThatDidNotSucceed(t *testing.T) {
	t.Parallel()
	log := runrig.EngineLog(t)
	_, fin := runSpec(t, log, "guard", `
  steps:
    - id: guard
      default_input:
        context: auto gates
        results:
          - {status: succeeded, run_id: A}
          - {status: failed, run_id: B, error: "child run B failed: merge: base moved"}
          - {status: timeout, run_id: C}
      spec: {type: deterministic, action: pipeline_success_guard}
`)
	require.Equal(t, events.StateFailed, fin.State)
	assert.Equal(t, "auto gates: 2 of 3 did not succeed: run B failed: child run B failed: merge: base moved; run C timeout", fin.Error.Message)
	assert.False(t, fin.Error.Retryable)

	_, fin = runSpec(t, log, "guard_none", `
  steps:
    - id: guard
      default_input: {results: []}
      spec: {type: deterministic, action: pipeline_success_guard}
`)
	require.Equal(t, events.StateFailed, fin.State)
	assert.Contains(t, fin.Error.Message, "names no child run")
}

func TestSleepTakesTheUpstreamSeconds(t *testing.T) {
	t.Parallel()
	log := runrig.EngineLog(t)
	runID, fin := runSpec(t, log, "nap", `
  steps:
    - id: nap
      default_input: {seconds: 0.05}
      spec: {type: deterministic, action: sleep}
`)
	require.Equal(t, events.StateSuccess, fin.State, "%+v", fin.Error)
	out := runrig.StepOutput(t, log, runID, "nap")
	assert.Equal(t, 0.05, out["slept_seconds"])

	_, fin = runSpec(t, log, "nap_long", `
  steps:
    - id: nap
      default_input: {seconds: 7200}
      spec: {type: deterministic, action: sleep}
`)
	require.Equal(t, events.StateFailed, fin.State)
	assert.Contains(t, fin.Error.Message, "input.seconds")
}
