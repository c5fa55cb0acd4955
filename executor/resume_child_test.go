package executor_test

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/assets"
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

// stoppedChild is a parent run and the resume_slot child it invoked, which
// stopped budget_exhausted.
type stoppedChild struct {
	log               *events.Log
	child             *assets.Job
	parentID, childID string
}

// runParentOfAStoppedChild runs parentYAML, whose step callKey invokes
// resume_slot, on an engine with both jobs, and requires the parent to
// end in parentState and its child budget_exhausted.
func runParentOfAStoppedChild(t *testing.T, parentYAML, parentState, callKey string) stoppedChild {
	t.Helper()
	r := stoppedChild{log: testkit.StartLog(t, events.Config{}), child: resumeSlotJob(t, filepath.Join(t.TempDir(), "no-hold"))}
	parent := runrig.ParseJob(t, parentYAML)
	startWithJobs(t, r.log, 3, parent, r.child)

	var fin events.RunFinishedData
	r.parentID, fin = runrig.RunJob(t, r.log, parent, nil)
	require.Equal(t, parentState, fin.State, "%+v", fin.Error)
	r.childID = childOf(t, r.log, r.parentID, callKey, 1)
	require.NotEmpty(t, r.childID)
	require.Equal(t, events.StateBudgetExhausted, runrig.WaitFinished(t, r.log, r.childID).State)
	return r
}

// refusedResume asks to resume runID with more tokens and requires the
// refusal, ErrNotResumable, with no raise written to the run's log; it
// returns the refusal's message.
func refusedResume(t *testing.T, log *events.Log, runID string) string {
	t.Helper()
	_, err := executor.ResumeRun(testkit.Context(t), log, runID, executor.Raise{MaxTokens: 5000}, "test")
	require.Error(t, err)
	assert.True(t, errors.Is(err, executor.ErrNotResumable), "%v", err)
	assert.Empty(t, runrig.OfType(runrig.History(t, log, runID), events.RunBudgetRaised), "a refused raise wrote to the log")
	return err.Error()
}

// TestAResumedChildRunTellsItsParent: a parent waits for a child whose
// budget stops it; the parent stops budget_exhausted with it. Resuming the
// parent is refused naming the child (where the budget was spent).
// Resuming the child reopens the parent too: the child goes on from its
// stopped step, the parent's step waits for the child's next end (it does
// not start a new child) and the parent finishes with it.
func TestAResumedChildRunTellsItsParent(t *testing.T) {
	t.Parallel()
	r := runParentOfAStoppedChild(t, resumeParentJob, events.StateBudgetExhausted, "call")
	log, child, parentID, childID := r.log, r.child, r.parentID, r.childID

	refusal := refusedResume(t, log, parentID)
	assert.Contains(t, refusal, "child run "+childID)
	assert.Contains(t, refusal, "orbit run resume "+childID)

	raised, err := executor.ResumeRun(testkit.Context(t), log, childID, executor.Raise{MaxTokens: 5000}, "test")
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
	r := runParentOfAStoppedChild(t, resumeAnyParentJob, events.StateSuccess, "either/call")
	assert.Contains(t, refusedResume(t, r.log, r.childID), "parent run "+r.parentID+" took that end in step either/call and went on (it is success)")
}
