package executor_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/executor"
	"github.com/orbitrun/orbit/internal/runrig"
	"github.com/orbitrun/orbit/internal/testkit"
)

// sideEffects has three shell steps that each append their name to
// side.log; the second fails until the file ok exists, and the third
// reports what the first one output.
const sideEffects = `
schemaVersion: 2
kind: Job
metadata: {name: side_effects}
spec:
  default_input: {tag: first}
  steps:
    - id: one
      spec:
        type: shell
        program: sh
        args: ["-c", "echo one >> side.log; printf 'one-%s' \"$1\"", "sh", "{{ input.tag }}"]
        allowed_programs: [sh]
    - id: two
      spec:
        type: shell
        program: sh
        args: ["-c", "test -f ok || { echo not yet >&2; exit 1; }; echo two >> side.log"]
        allowed_programs: [sh]
    - id: three
      default_input: {from_one: "{{ steps.one.output.stdout }}"}
      spec:
        type: shell
        program: sh
        args: ["-c", "echo three >> side.log; printf '%s' \"$1\"", "sh", "{{ input.from_one }}"]
        allowed_programs: [sh]
`

func TestRetryFromAStepRunsOnlyThatStepAndTheOnesAfter(t *testing.T) {
	t.Parallel()
	log, root := engineOver(t)
	ctx := testkit.Context(t)
	job := runrig.ParseJob(t, sideEffects)

	first, fin := runrig.RunJob(t, log, job, nil)
	require.Equal(t, events.StateFailed, fin.State)
	require.Equal(t, "two", fin.Error.StepKey)
	sideLog := func() string {
		data, err := os.ReadFile(filepath.Join(root, "side.log"))
		require.NoError(t, err)
		return string(data)
	}
	require.Equal(t, "one\n", sideLog())

	// --from three: two did not succeed, so there is nothing to reuse for it.
	_, err := executor.NewRetryRequest(ctx, log, first, executor.RetryOptions{From: "three"})
	require.ErrorIs(t, err, executor.ErrNotRetryable)
	assert.ErrorIs(t, err, events.ErrInvalidRequest)
	assert.Contains(t, err.Error(), "step two did not succeed")

	require.NoError(t, os.WriteFile(filepath.Join(root, "ok"), nil, 0o644))
	req, err := executor.NewRetryRequest(ctx, log, first, executor.RetryOptions{From: "two", Requester: "test"})
	require.NoError(t, err)
	require.NoError(t, executor.Submit(ctx, log, req))
	fin = runrig.WaitFinished(t, log, req.RunID)
	require.Equal(t, events.StateSuccess, fin.State, "%+v", fin.Error)
	assert.Equal(t, "one\ntwo\nthree\n", sideLog(), "step one must not run again")
	assert.Equal(t, "one-first", fin.Output.(map[string]any)["stdout"], "step three sees step one's recorded output")

	evs := runrig.History(t, log, req.RunID)
	var requested events.RunRequestedData
	require.NoError(t, runrig.OfType(evs, events.RunRequested)[0].Decode(&requested))
	assert.Equal(t, first, requested.RetryOf)
	assert.Equal(t, "two", requested.From)
	for _, ev := range runrig.OfType(evs, events.StepStarted) {
		assert.NotEqual(t, "one", ev.StepKey, "a reused step is not started")
	}
	var reused events.StepFinishedData
	for _, ev := range runrig.OfType(evs, events.StepFinished) {
		if ev.StepKey == "one" {
			require.NoError(t, ev.Decode(&reused))
		}
	}
	assert.Equal(t, first, reused.ReusedFrom)
	assert.Equal(t, "one-first", reused.Output.(map[string]any)["stdout"])

	// A retry without --from runs every step again, with a new input.
	req, err = executor.NewRetryRequest(ctx, log, req.RunID, executor.RetryOptions{Input: map[string]any{"tag": "second"}, HasInput: true})
	require.NoError(t, err)
	require.NoError(t, executor.Submit(ctx, log, req))
	fin = runrig.WaitFinished(t, log, req.RunID)
	require.Equal(t, events.StateSuccess, fin.State, "%+v", fin.Error)
	assert.Equal(t, "one\ntwo\nthree\none\ntwo\nthree\n", sideLog())
	assert.Equal(t, "one-second", fin.Output.(map[string]any)["stdout"])
}

func TestRetryRefusals(t *testing.T) {
	t.Parallel()
	log := runrig.EngineLog(t)
	ctx := testkit.Context(t)

	_, err := executor.NewRetryRequest(ctx, log, "no-such-run", executor.RetryOptions{})
	assert.ErrorIs(t, err, events.ErrNotFound)

	done, _ := runrig.RunJob(t, log, runrig.ParseJob(t, sideEffects), nil)
	_, err = executor.NewRetryRequest(ctx, log, done, executor.RetryOptions{From: "four"})
	require.ErrorIs(t, err, executor.ErrNotRetryable)
	assert.Contains(t, err.Error(), "its top-level steps are: one, two, three")

	running := runrig.Submit(t, log, runrig.ParseJob(t, sleeper), map[string]any{"name": "a"})
	runrig.WaitFor(t, "the sleeper runs", func() bool { return runrig.Has(t, log, running, events.StepStarted, "nap") })
	_, err = executor.NewRetryRequest(ctx, log, running, executor.RetryOptions{})
	require.ErrorIs(t, err, executor.ErrNotRetryable)
	assert.Contains(t, err.Error(), "is running")
	require.NoError(t, executor.RequestCancel(ctx, log, running, "test", ""))
	runrig.WaitFinished(t, log, running)
	_, err = executor.NewRetryRequest(ctx, log, running, executor.RetryOptions{})
	assert.NoError(t, err, "a cancelled run can be retried")
}

// TestRetryFromAfterStructuralStepsKeepsWhatTheyExposed: the steps after
// a reused parallel step and loop still see the branches' and the loop
// body's results under their own ids, as in the old run.
func TestRetryFromAfterStructuralStepsKeepsWhatTheyExposed(t *testing.T) {
	t.Parallel()
	log, root := engineOver(t)
	ctx := testkit.Context(t)
	job := jobSpec(t, "shapes", `
  steps:
    - id: both
      parallel:
        branches:
          - {id: left, spec: {type: deterministic, action: echo, config: {v: L}}}
          - {id: right, spec: {type: deterministic, action: echo, config: {v: R}}}
    - id: twice
      loop:
        max_iterations: 2
        steps:
          - {id: body, spec: {type: deterministic, action: echo, config: {i: "{{ iteration }}"}}}
    - id: use
      spec:
        type: shell
        program: sh
        args: ["-c", "test -f ok && printf '%s-%s' \"$1\" \"$2\"", "sh", "{{ steps.right.output.v }}", "{{ steps.body.output.i }}"]
        allowed_programs: [sh]
`)
	first, fin := runrig.RunJob(t, log, job, nil)
	require.Equal(t, events.StateFailed, fin.State)

	require.NoError(t, os.WriteFile(filepath.Join(root, "ok"), nil, 0o644))
	req, err := executor.NewRetryRequest(ctx, log, first, executor.RetryOptions{From: "use"})
	require.NoError(t, err)
	require.NoError(t, executor.Submit(ctx, log, req))
	fin = runrig.WaitFinished(t, log, req.RunID)
	require.Equal(t, events.StateSuccess, fin.State, "%+v", fin.Error)
	assert.Equal(t, "R-2", fin.Output.(map[string]any)["stdout"])
	for _, ev := range runrig.OfType(runrig.History(t, log, req.RunID), events.StepStarted) {
		assert.Equal(t, "use", ev.StepKey, "only the step retried from starts")
	}
}

// TestRetryWithANewInputReusesOnlyWhatDidNotRestOnIt: on a new input a
// retry from the last step re-runs a skipped step, a structural step and
// a step that uses the result of one that runs again, and reuses a step
// whose rendered input is unchanged. The run records the plan it followed.
func TestRetryWithANewInputReusesOnlyWhatDidNotRestOnIt(t *testing.T) {
	t.Parallel()
	log := runrig.EngineLog(t)
	ctx := testkit.Context(t)
	job := jobSpec(t, "plan", `
  default_input: {env: dev}
  steps:
    - id: pinned
      default_input: {env: fixed}
      spec: {type: deterministic, action: echo, config: {v: same}}
    - id: prod_only
      when: "{{ input.env }} == prod"
      spec: {type: deterministic, action: echo, config: {v: p}}
    - id: both
      parallel:
        branches:
          - {id: left, default_input: {env: fixed}, spec: {type: deterministic, action: echo, config: {v: L}}}
    - id: uses_left
      default_input: {env: fixed}
      spec: {type: deterministic, action: echo, config: {v: "{{ steps.left.output.v }}"}}
    - id: uses_pinned
      default_input: {env: fixed}
      spec: {type: deterministic, action: echo, config: {v: "{{ steps.pinned.output.v }}"}}
    - id: last
      spec: {type: deterministic, action: echo, config: {env: "{{ input.env }}"}}
`)
	first, fin := runrig.RunJob(t, log, job, nil)
	require.Equal(t, events.StateSuccess, fin.State, "%+v", fin.Error)

	req, err := executor.NewRetryRequest(ctx, log, first, executor.RetryOptions{From: "last", Input: map[string]any{"env": "prod"}, HasInput: true})
	require.NoError(t, err)
	want := []events.RetryStep{
		{Step: "pinned", Action: events.RetryReused, Reason: "its rendered input is unchanged"},
		{Step: "prod_only", Action: events.RetryRerun, Reason: "its when was false on the old input; it is evaluated again on the new one"},
		{Step: "both", Action: events.RetryRerun, Reason: "the input changed, and the inputs of the steps inside a parallel step are rendered as it runs"},
		{Step: "uses_left", Action: events.RetryRerun, Reason: "it uses steps.left, which step both runs again"},
		{Step: "uses_pinned", Action: events.RetryReused, Reason: "its rendered input is unchanged"},
	}
	assert.Equal(t, want, req.RetrySteps)
	require.NoError(t, executor.Submit(ctx, log, req))
	fin = runrig.WaitFinished(t, log, req.RunID)
	require.Equal(t, events.StateSuccess, fin.State, "%+v", fin.Error)
	assert.Equal(t, "prod", fin.Output.(map[string]any)["env"])

	reusedFrom := map[string]string{}
	for _, ev := range runrig.OfType(runrig.History(t, log, req.RunID), events.StepFinished) {
		var d events.StepFinishedData
		require.NoError(t, ev.Decode(&d))
		reusedFrom[ev.StepKey] = d.ReusedFrom
	}
	assert.Equal(t, map[string]string{"pinned": first, "prod_only": "", "both/left": "", "both": "", "uses_left": "", "uses_pinned": first, "last": ""}, reusedFrom,
		"prod_only runs now that its when holds")
	var requested events.RunRequestedData
	require.NoError(t, runrig.OfType(runrig.History(t, log, req.RunID), events.RunRequested)[0].Decode(&requested))
	assert.Equal(t, want, requested.RetrySteps)

	// Asked again, the plan is the same.
	again, err := executor.NewRetryRequest(ctx, log, first, executor.RetryOptions{From: "last", Input: map[string]any{"env": "prod"}, HasInput: true})
	require.NoError(t, err)
	assert.Equal(t, want, again.RetrySteps)

	// A retry recorded before run.requested held the plan reused every
	// step before From; its run does so still.
	old := *again
	old.RunID, old.RetrySteps = events.NewID(), nil
	require.NoError(t, executor.Submit(ctx, log, &old))
	fin = runrig.WaitFinished(t, log, old.RunID)
	require.Equal(t, events.StateSuccess, fin.State, "%+v", fin.Error)
	for _, ev := range runrig.OfType(runrig.History(t, log, old.RunID), events.StepStarted) {
		assert.Equal(t, "last", ev.StepKey, "only the step retried from starts")
	}
}
