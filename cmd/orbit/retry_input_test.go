package main_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/engine"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
	"github.com/orbitrun/orbit/projector"
)

// releaseJob builds (whatever the target: its default_input pins it),
// announces the target, waits for approval and deploys to the target.
const releaseJob = `
schemaVersion: 2
kind: Job
metadata: {name: release}
spec:
  steps:
    - id: build
      default_input: {target: any}
      spec: {type: shell, program: sh, args: ["-c", "echo build >> side.log"], allowed_programs: [sh]}
    - id: announce
      spec: {type: shell, program: sh, args: ["-c", "echo \"announce-$1\" >> side.log", "sh", "{{ input.target }}"], allowed_programs: [sh]}
    - id: approve
      wait: {signal: approved, timeout_seconds: 600}
    - id: deploy
      spec: {type: shell, program: sh, args: ["-c", "echo \"$1\" >> deployed.log", "sh", "{{ input.target }}"], allowed_programs: [sh]}
`

// TestRetryWithANewInputReArmsTheGates: a release approved for staging
// is retried from deploy with target PRODUCTION. The staging approval
// does not carry over: the retry re-arms the gate and deploys nothing
// until a new signal; it reuses build, whose rendered input is the same,
// and runs announce again, whose is not, and says so on stderr, in its
// --json and in run show. A retry with the same input reuses everything,
// and the reuse rule follows a reused step back to the run that ran it.
func TestRetryWithANewInputReArmsTheGates(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	p.WriteFile(".orbit/jobs/release.yaml", releaseJob)
	sideLog, deployed := filepath.Join(p.Root, "side.log"), filepath.Join(p.Root, "deployed.log")
	gateWaits := func(runID string) func() bool {
		return func() bool {
			for _, s := range runView(t, p, runID).Steps {
				if s.Key == "approve" {
					return s.State == projector.StateWaiting
				}
			}
			return false
		}
	}
	approve := func(runID string) projector.RunView {
		t.Helper()
		waitFor(t, "the gate of "+runID+" to wait", gateWaits(runID))
		r := p.Orbit("run", "signal", runID, "approved")
		require.Equal(t, 0, r.Code, r.String())
		waitFor(t, "run "+runID+" to finish", func() bool { return events.Terminal(runView(t, p, runID).State) })
		return runView(t, p, runID)
	}

	first := runJob(t, p, "release", "--input", `{"target":"staging"}`, "--detach")
	require.Equal(t, events.StateSuccess, approve(first).State)
	require.Equal(t, []string{"staging"}, readLines(t, deployed))

	r := p.Orbit("run", "retry", first, "--from", "deploy", "--input", `{"target":"PRODUCTION"}`, "--detach")
	require.Equal(t, 0, r.Code, r.String())
	second := strings.TrimSpace(r.Stdout)
	assert.Contains(t, r.Stderr, "run "+second+": reuses step build: its rendered input is unchanged")
	assert.Contains(t, r.Stderr, "run "+second+": runs step announce again: its rendered input changed (target)")
	assert.Contains(t, r.Stderr, "run "+second+": re-arms step approve: the input changed, and a signal approves a run with its input")
	waitFor(t, "the retry's gate to wait again", gateWaits(second))
	assert.Equal(t, []string{"staging"}, readLines(t, deployed), "nothing is deployed on the staging approval")
	r = p.Orbit("run", "show", second)
	assert.Regexp(t, `(?m)^Retry:\s+re-arms step approve: `, r.Stdout)
	assert.Regexp(t, `(?m)^Waiting:\s+signal approved at step approve`, r.Stdout)

	v := approve(second)
	require.Equal(t, events.StateSuccess, v.State, "%+v", v.Error)
	assert.Equal(t, []string{"staging", "PRODUCTION"}, readLines(t, deployed))
	assert.Equal(t, []string{"build", "announce-staging", "announce-PRODUCTION"}, readLines(t, sideLog))
	require.Len(t, v.RetrySteps, 3)
	assert.Equal(t, []string{events.RetryReused, events.RetryRerun, events.RetryRearmed},
		[]string{v.RetrySteps[0].Action, v.RetrySteps[1].Action, v.RetrySteps[2].Action})
	assert.Equal(t, first, v.Steps[0].ReusedFrom)

	// The same input again: nothing rested on changed, everything before
	// deploy is reused, the gate included, and deploy runs at once.
	same := orbitJSON[engine.RunRetried](t, p, "run", "retry", second, "--from", "deploy", "--detach", "--json")
	require.Len(t, same.Steps, 3)
	for _, s := range same.Steps {
		assert.Equal(t, events.RetryReused, s.Action, s.Step)
		assert.Equal(t, "the input is unchanged", s.Reason)
	}
	waitFor(t, "the same-input retry to finish", func() bool { return events.Terminal(runView(t, p, same.RunID).State) })
	assert.Equal(t, []string{"staging", "PRODUCTION", "PRODUCTION"}, readLines(t, deployed))

	// Back to staging, from a retry whose build was itself reused: its
	// rendered input is found in the run that ran it.
	back := orbitJSON[engine.RunRetried](t, p, "run", "retry", same.RunID, "--from", "deploy", "--input", `{"target":"staging"}`, "--detach", "--json")
	require.Len(t, back.Steps, 3)
	assert.Equal(t, events.RetryReused, back.Steps[0].Action, back.Steps[0].Reason)
	assert.Equal(t, events.RetryRerun, back.Steps[1].Action)
	assert.Equal(t, events.RetryRearmed, back.Steps[2].Action)
	waitFor(t, "the third retry's gate to wait", gateWaits(back.RunID))
	r = p.Orbit("run", "cancel", back.RunID)
	require.Equal(t, 0, r.Code, r.String())
	assert.Equal(t, []string{"staging", "PRODUCTION", "PRODUCTION"}, readLines(t, deployed))

	r = p.Orbit("replay", "--verify")
	assert.Equal(t, 0, r.Code, r.String())
}
