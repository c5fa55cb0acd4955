package executor_test

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/executor"
	"github.com/orbitrun/orbit/internal/runrig"
	"github.com/orbitrun/orbit/internal/testkit"
)

const resumeParentJob = `
schemaVersion: 2
kind: Job
metadata: {name: resume_parent}
spec:
  steps:
    - id: call
      spec: {type: deterministic, action: job.invoke, config: {job: resume_slot}}
    - id: after
      spec: {type: deterministic, action: echo, config: {text: "after {{ steps.call.state }}"}}
`

// childOf returns the child run id a step attempt of run named.
func childOf(t *testing.T, log *events.Log, run, key string, attempt int) string {
	t.Helper()
	for _, ev := range runrig.OfType(runrig.History(t, log, run), events.StepStarted) {
		var d events.StepStartedData
		require.NoError(t, ev.Decode(&d))
		if ev.StepKey == key && d.Attempt == attempt {
			return d.ChildRunID
		}
	}
	return ""
}

// TestAResumedChildRunTellsItsParent: a parent waits for a child whose
// budget stops it; the parent stops budget_exhausted with it. Resuming the
// parent is refused naming the child (where the budget was spent).
// Resuming the child reopens the parent too: the child goes on from its
// stopped step, the parent's step waits for the child's next end (it does
// not start a new child) and the parent finishes with it.
func TestAResumedChildRunTellsItsParent(t *testing.T) {
	t.Parallel()
	log := testkit.StartLog(t, events.Config{})
	ctx := testkit.Context(t)
	child := resumeSlotJob(t, filepath.Join(t.TempDir(), "no-hold"))
	parent := runrig.ParseJob(t, resumeParentJob)
	startWithJobs(t, log, 3, parent, child)

	parentID, fin := runrig.RunJob(t, log, parent, nil)
	require.Equal(t, events.StateBudgetExhausted, fin.State, "%+v", fin.Error)
	childID := childOf(t, log, parentID, "call", 1)
	require.NotEmpty(t, childID)
	require.Equal(t, events.StateBudgetExhausted, runrig.WaitFinished(t, log, childID).State)

	_, err := executor.ResumeRun(ctx, log, parentID, executor.Raise{MaxTokens: 5000}, "test")
	require.Error(t, err)
	assert.True(t, errors.Is(err, executor.ErrNotResumable), "%v", err)
	assert.Contains(t, err.Error(), "child run "+childID)
	assert.Contains(t, err.Error(), "orbit run resume "+childID)
	assert.Empty(t, runrig.OfType(runrig.History(t, log, parentID), events.RunBudgetRaised), "a refused raise wrote to the log")

	raised, err := executor.ResumeRun(ctx, log, childID, executor.Raise{MaxTokens: 5000}, "test")
	require.NoError(t, err)
	assert.Equal(t, []string{parentID}, raised.Parents)

	runrig.WaitFor(t, "the parent to finish again", func() bool { return len(runrig.OfType(runrig.History(t, log, parentID), events.RunFinished)) == 2 })
	var end events.RunFinishedData
	require.NoError(t, runrig.OfType(runrig.History(t, log, parentID), events.RunFinished)[1].Decode(&end))
	assert.Equal(t, events.StateSuccess, end.State, "%+v", end.Error)
	assert.Equal(t, map[string]any{"text": "after success"}, end.Output)
	assert.Len(t, runsOf(t, log, child.Name), 1, "the parent started a new child")
	assert.Equal(t, childID, childOf(t, log, parentID, "call", 2))
	childEnds := runrig.OfType(runrig.History(t, log, childID), events.RunFinished)
	require.Len(t, childEnds, 2)
	require.NoError(t, childEnds[1].Decode(&end))
	assert.Equal(t, events.StateSuccess, end.State)
	// The child went on: its first step ran once, then its second.
	executions := 0
	for _, d := range runrig.DecodeAll[events.StepFinishedData](t, runrig.OfType(runrig.History(t, log, childID), events.StepFinished)) {
		if d.Worker != "" {
			executions++
		}
	}
	assert.Equal(t, 2, executions, "step.finished events naming the worker that ran the step")
}

const resumeAnyParentJob = `
schemaVersion: 2
kind: Job
metadata: {name: resume_any_parent}
spec:
  steps:
    - id: either
      parallel:
        join: {mode: any}
        branches:
          - id: call
            spec: {type: deterministic, action: job.invoke, config: {job: resume_slot}}
          - id: other
            spec: {type: deterministic, action: echo, config: {text: fine}}
`

// TestAChildWhoseEndItsParentWentOnFromIsNotResumed: a parent whose
// parallel step needs any one branch takes its child's budget_exhausted end
// and succeeds with the other branch. Resuming the child alone could not
// change what the parent did: it is refused naming the parent.
func TestAChildWhoseEndItsParentWentOnFromIsNotResumed(t *testing.T) {
	t.Parallel()
	log := testkit.StartLog(t, events.Config{})
	ctx := testkit.Context(t)
	child := resumeSlotJob(t, filepath.Join(t.TempDir(), "no-hold"))
	parent := runrig.ParseJob(t, resumeAnyParentJob)
	startWithJobs(t, log, 3, parent, child)

	parentID, fin := runrig.RunJob(t, log, parent, nil)
	require.Equal(t, events.StateSuccess, fin.State, "%+v", fin.Error)
	childID := childOf(t, log, parentID, "either/call", 1)
	require.NotEmpty(t, childID)
	require.Equal(t, events.StateBudgetExhausted, runrig.WaitFinished(t, log, childID).State)

	_, err := executor.ResumeRun(ctx, log, childID, executor.Raise{MaxTokens: 5000}, "test")
	require.Error(t, err)
	assert.True(t, errors.Is(err, executor.ErrNotResumable), "%v", err)
	assert.Contains(t, err.Error(), "parent run "+parentID+" took that end in step either/call and went on (it is success)")
	assert.Empty(t, runrig.OfType(runrig.History(t, log, childID), events.RunBudgetRaised), "a refused raise wrote to the log")
}
