package main_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/projector"
)

// resumeParentJob waits for a run of resumable, whose budget stops it.
const resumeParentJob = `
schemaVersion: 2
kind: Job
metadata: {name: waits_for_resumable}
spec:
  steps:
    - id: call
      spec: {type: deterministic, action: job.invoke, config: {job: resumable}}
`

// TestResumingAChildRunResumesItsParent: through the binary. A parent
// waits for a child whose budget stops it, and stops budget_exhausted with
// it. orbit run resume of the parent is refused (exit 2) naming the child;
// orbit run resume of the child goes on with the child and says the parent
// goes on too; the parent's step waits for the same child again, and both
// end success. The scripted server is asked each turn once: the child did
// not start over.
func TestResumingAChildRunResumesItsParent(t *testing.T) {
	t.Parallel()
	p, srv := resumeProject(t)
	p.WriteFile(".orbit/jobs/waits_for_resumable.yaml", resumeParentJob)

	r := p.Orbit("job", "run", "waits_for_resumable")
	require.Equal(t, 1, r.Code, r.String())
	parent := strings.TrimSpace(r.Stdout)
	v := runView(t, p, parent)
	require.Equal(t, events.StateBudgetExhausted, v.State)
	var child string
	for _, ev := range runEvents(t, p, parent, "--type", events.StepStarted) {
		var d events.StepStartedData
		require.NoError(t, ev.Decode(&d))
		child = d.ChildRunID
	}
	require.NotEmpty(t, child)

	r = p.Orbit("run", "resume", parent, "--max-tokens", "5000")
	assert.Equal(t, 2, r.Code, r.String())
	assert.Contains(t, r.Stderr, "child run "+child)
	assert.Contains(t, r.Stderr, "orbit run resume "+child)

	r = p.Orbit("run", "resume", child, "--max-tokens", "5000")
	require.Equal(t, 0, r.Code, r.String())
	assert.Contains(t, r.Stderr, "run "+parent+", which stopped waiting for it, goes on too")
	waitForLong(t, "the parent to end", func() bool { return events.Terminal(runView(t, p, parent).State) })
	v = runView(t, p, parent)
	assert.Equal(t, events.StateSuccess, v.State, "%+v", v.Error)
	require.Len(t, v.BudgetRaises, 1)
	assert.Equal(t, child, v.BudgetRaises[0].ChildRunID)
	assert.Equal(t, events.StateSuccess, runView(t, p, child).State)
	assert.Len(t, srv.Scripted(), 3, "every scripted turn was asked for, once")
	started := runEvents(t, p, parent, "--type", events.StepStarted)
	require.Len(t, started, 2)
	var d events.StepStartedData
	require.NoError(t, started[1].Decode(&d))
	assert.Equal(t, child, d.ChildRunID, "the parent's second attempt waits for the same child")

	// Each run counts once, by its last end.
	m := orbitJSON[projector.Metrics](t, p, "metrics", "--json")
	for _, job := range []string{"resumable", "waits_for_resumable"} {
		assert.Equal(t, int64(1), m.Jobs[job].Runs, job)
		assert.Equal(t, map[string]int64{events.StateSuccess: 1}, m.Jobs[job].States, job)
	}

	r = p.Orbit("replay", "--verify")
	assert.Equal(t, 0, r.Code, r.String())
}
