package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
	"github.com/orbitrun/orbit/projector"
)

// gateJob waits for the signal approved and then writes who approved.
const gateJobYAML = `
schemaVersion: 2
kind: Job
metadata: {name: gated}
spec:
  steps:
    - id: approve
      wait: {signal: approved, timeout_seconds: 600}
    - id: record
      default_input: {by: "{{ steps.approve.output.by }}"}
      spec: {type: shell, program: sh, args: ["-c", "printf '%s' \"$1\" > approved_by", "sh", "{{ input.by }}"], allowed_programs: [sh]}
`

// TestASignalGateSurvivesAKilledEngine: a run waits at a gate; the engine
// is killed with SIGKILL and started again; the gate still waits, with the
// deadline it recorded, refuses a signal it does not wait for (naming the
// one it does), and passes the data of the right one to the next step.
func TestASignalGateSurvivesAKilledEngine(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	p.WriteFile(".orbit/jobs/gated.yaml", gateJobYAML)

	engine := serve(t, p)
	runID := runJob(t, p, "gated", "--detach")
	gate := func() projector.StepView {
		for _, s := range runView(t, p, runID).Steps {
			if s.Key == "approve" {
				return s
			}
		}
		return projector.StepView{}
	}
	waitFor(t, "the gate to wait", func() bool { return gate().State == projector.StateWaiting })
	before := gate()
	require.NotNil(t, before.Wait)
	require.NotNil(t, before.Wait.Deadline)

	killEngine(t, engine)
	serve(t, p)
	waitFor(t, "the run to be resumed", func() bool { return runView(t, p, runID).Resumes == 1 })

	after := gate()
	assert.Equal(t, projector.StateWaiting, after.State)
	assert.True(t, before.Wait.Deadline.Equal(*after.Wait.Deadline), "the deadline is the recorded one")
	r := p.Orbit("run", "show", runID)
	assert.Regexp(t, `(?m)^Waiting:\s+signal approved at step approve, until .* \(orbit run signal `+runID+` approved\)$`, r.Stdout)

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "signal", runID, "rejected"}, "run " + runID + " is not waiting for signal rejected; it is waiting for signal approved (step approve, until "},
		{[]string{"run", "signal", runID, "approved", "--data", "{by: ada"}, "--data: not valid JSON"},
		{[]string{"run", "signal", "01NOSUCHRUN0000000000000000", "approved"}, "no run 01NOSUCHRUN0000000000000000"},
	} {
		r := p.Orbit(c.args...)
		assert.Equal(t, 2, r.Code, r.String())
		assert.Contains(t, r.Stderr, c.want)
	}
	assert.Empty(t, runEvents(t, p, runID, "--type", events.RunSignalled), "a refused signal is not recorded")

	r = p.Orbit("run", "signal", runID, "approved", "--data", `{"by":"ada"}`)
	require.Equal(t, 0, r.Code, r.String())
	assert.Equal(t, runID, strings.TrimSpace(r.Stdout))
	waitFor(t, "the run to finish", func() bool { return events.Terminal(runView(t, p, runID).State) })
	v := runView(t, p, runID)
	require.Equal(t, events.StateSuccess, v.State, "%+v", v.Error)
	got, err := os.ReadFile(filepath.Join(p.Root, "approved_by"))
	require.NoError(t, err)
	assert.Equal(t, "ada", string(got))
	assert.Equal(t, map[string]any{"by": "ada"}, v.Steps[0].Output)

	r = p.Orbit("run", "signal", runID, "approved")
	assert.Equal(t, 2, r.Code, r.String())
	assert.Contains(t, r.Stderr, "it has finished (success) and waits for nothing")

	r = p.Orbit("run", "trace", runID)
	assert.Contains(t, r.Stdout, "run.signalled")
	r = p.Orbit("replay", "--verify")
	assert.Equal(t, 0, r.Code, r.String())
}

// TestCancelAWaitingRun: a run waiting at a gate is cancelled at once.
func TestCancelAWaitingRun(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	p.WriteFile(".orbit/jobs/gated.yaml", gateJobYAML)
	runID := runJob(t, p, "gated", "--detach")
	waitFor(t, "the gate to wait", func() bool {
		v := runView(t, p, runID)
		return len(v.Steps) > 0 && v.Steps[0].State == projector.StateWaiting
	})
	r := p.Orbit("run", "cancel", runID)
	require.Equal(t, 0, r.Code, r.String())
	v := runView(t, p, runID)
	assert.Equal(t, events.StateCancelled, v.State)
	assert.Equal(t, events.StateCancelled, v.Steps[0].State)
}

// TestAParentSaysWhichChildWaitsAtAGate: a parent run waits for a child
// run that waits at a gate. Following the parent says which child waits
// and where to send the signal; so do run show and the refusal of a
// signal sent to the parent. The signal sent to the child lets both end.
func TestAParentSaysWhichChildWaitsAtAGate(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	p.WriteFile(".orbit/jobs/gated.yaml", gateJobYAML)
	p.WriteFile(".orbit/jobs/release.yaml", `
schemaVersion: 2
kind: Job
metadata: {name: release}
spec:
  steps:
    - id: deploy
      spec: {type: deterministic, action: job.invoke, config: {job: gated}}
`)
	cmd := p.Command("job", "run", "release")
	var stdout, stderr testkit.SyncBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })

	var parent, child string
	waitFor(t, "the parent to start its child", func() bool {
		parent = strings.TrimSpace(stdout.String())
		if parent == "" {
			return false
		}
		v := runView(t, p, parent)
		if len(v.Children) == 0 {
			return false
		}
		child = v.Children[0]
		c := runView(t, p, child)
		return len(c.Steps) > 0 && c.Steps[0].State == projector.StateWaiting
	})
	hint := "orbit run signal " + child + " approved"
	waitFor(t, "the follower to say which child waits", func() bool {
		return strings.Contains(stderr.String(), "in run "+child+", step approve, for signal approved ("+hint+")")
	})
	assert.Regexp(t, `(?m)^  started +deploy +child run `+child+`$`, stderr.String())

	r := p.Orbit("run", "show", parent)
	require.Equal(t, 0, r.Code, r.String())
	assert.Regexp(t, `(?m)^Waiting:\s+run `+child+` \(started under step deploy\), which waits for signal approved \(step approve, until .*\): `+hint+`$`, r.Stdout)
	r = p.Orbit("run", "signal", parent, "approved")
	assert.Equal(t, 2, r.Code, r.String())
	assert.Contains(t, r.Stderr, "run "+parent+" is not waiting for signal approved; it waits for no signal itself, but for run "+child+" (started under step deploy)")
	assert.Contains(t, r.Stderr, hint)

	r = p.Orbit("run", "signal", child, "approved", "--data", `{"by":"ada"}`)
	require.Equal(t, 0, r.Code, r.String())
	require.NoError(t, cmd.Wait(), stderr.String())
	assert.Equal(t, events.StateSuccess, runView(t, p, parent).State)
}
