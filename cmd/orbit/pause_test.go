package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
	"github.com/orbitrun/orbit/projector"
)

const pausedJobYAML = `
schemaVersion: 2
kind: Job
metadata: {name: stepwise}
spec:
  steps:
    - {id: first, spec: {type: deterministic, action: sleep, config: {ms: 1500}}}
    - {id: second, spec: {type: deterministic, action: echo, config: {n: 2}}}
    - {id: third, spec: {type: deterministic, action: echo, config: {n: 3}}}
`

func stepState(v projector.RunView, key string) string {
	for _, s := range v.Steps {
		if s.Key == key {
			return s.State
		}
	}
	return ""
}

// TestAPausedRunHoldsAcrossAKilledEngine: a run paused while its first
// step runs lets that step finish and starts no other; the engine is
// killed with SIGKILL and started again, and the run is still paused (run
// show, history); unpaused, it runs to its end.
func TestAPausedRunHoldsAcrossAKilledEngine(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	p.WriteFile(".orbit/jobs/stepwise.yaml", pausedJobYAML)
	engine := serve(t, p)
	runID := runJob(t, p, "stepwise", "--detach")
	waitFor(t, "the first step to run", func() bool { return stepState(runView(t, p, runID), "first") == events.StateRunning })

	r := p.Orbit("run", "pause", runID, "--reason", "checking")
	require.Equal(t, 0, r.Code, r.String())
	assert.Equal(t, runID, strings.TrimSpace(r.Stdout))
	r = p.Orbit("run", "pause", runID)
	assert.Equal(t, 2, r.Code, "paused twice: %s", r)
	assert.Contains(t, r.Stderr, "is already paused")

	waitFor(t, "the first step to finish", func() bool { return stepState(runView(t, p, runID), "first") == events.StateSuccess })
	time.Sleep(500 * time.Millisecond)
	v := runView(t, p, runID)
	assert.True(t, v.Paused)
	assert.Equal(t, "", stepState(v, "second"), "no new step while paused")

	killEngine(t, engine)
	serve(t, p)
	waitFor(t, "the run to be resumed", func() bool { return runView(t, p, runID).Resumes == 1 })
	time.Sleep(time.Second)
	v = runView(t, p, runID)
	assert.True(t, v.Paused, "still paused after the restart")
	assert.Equal(t, events.StateRunning, v.State)
	assert.Equal(t, "", stepState(v, "second"), "no new step after the restart")
	show := p.Orbit("run", "show", runID)
	assert.Contains(t, show.Stdout, "running (paused)")
	assert.Contains(t, show.Stdout, "orbit run unpause "+runID)
	hist := p.Orbit("run", "history", "--job", "stepwise")
	assert.Contains(t, hist.Stdout, "running (paused)")

	r = p.Orbit("run", "unpause", runID)
	require.Equal(t, 0, r.Code, r.String())
	waitFor(t, "the run to finish", func() bool { return events.Terminal(runView(t, p, runID).State) })
	v = runView(t, p, runID)
	assert.Equal(t, events.StateSuccess, v.State)
	assert.False(t, v.Paused)
	assert.Positive(t, v.PausedMS)
	assert.Equal(t, events.StateSuccess, stepState(v, "third"))
}

// TestAPausedRunCanBeCancelled: cancel does not wait for an unpause.
func TestAPausedRunCanBeCancelled(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	p.WriteFile(".orbit/jobs/stepwise.yaml", pausedJobYAML)
	serve(t, p)
	runID := runJob(t, p, "stepwise", "--detach")
	require.Equal(t, 0, p.Orbit("run", "pause", runID).Code)
	r := p.Orbit("run", "cancel", runID)
	assert.Equal(t, 0, r.Code, r.String())
	v := runView(t, p, runID)
	assert.Equal(t, events.StateCancelled, v.State)
	assert.Equal(t, "", stepState(v, "second"))
}

// TestPausedTimeExtendsAWaitDeadline: a gate of 6 s paused for 6 s still
// takes a signal sent 8 s after it began; one never signalled times out
// only after its deadline plus the paused time.
func TestPausedTimeExtendsAWaitDeadline(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	p.WriteFile(".orbit/jobs/gate6.yaml", `
schemaVersion: 2
kind: Job
metadata: {name: gate6}
spec:
  steps:
    - id: approve
      wait: {signal: go, timeout_seconds: 6}
`)
	serve(t, p)
	// start starts a run, pauses it as soon as its gate waits, and
	// returns it and when the gate began.
	start := func() (string, time.Time) {
		id := runJob(t, p, "gate6", "--detach")
		var began time.Time
		waitFor(t, "the gate to wait", func() bool {
			for _, s := range runView(t, p, id).Steps {
				if s.Key == "approve" && s.State == projector.StateWaiting {
					began = *s.StartedAt
					return true
				}
			}
			return false
		})
		r := p.Orbit("run", "pause", id)
		require.Equal(t, 0, r.Code, r.String())
		return id, began
	}
	signalled, began := start()
	time.Sleep(time.Until(began.Add(7 * time.Second)))
	require.Equal(t, 0, p.Orbit("run", "unpause", signalled).Code)
	time.Sleep(time.Until(began.Add(8 * time.Second)))
	r := p.Orbit("run", "signal", signalled, "go")
	require.Equal(t, 0, r.Code, "the deadline moved by the paused time: %s", r)
	waitFor(t, "the signalled run to finish", func() bool { return events.Terminal(runView(t, p, signalled).State) })
	assert.Equal(t, events.StateSuccess, runView(t, p, signalled).State)

	idle, began := start()
	time.Sleep(3 * time.Second)
	require.Equal(t, 0, p.Orbit("run", "unpause", idle).Code)
	waitFor(t, "the idle gate to time out", func() bool { return events.Terminal(runView(t, p, idle).State) })
	v := runView(t, p, idle)
	assert.Equal(t, events.StateFailed, v.State)
	require.NotNil(t, v.Error)
	assert.Equal(t, events.KindTimeout, v.Error.Kind)
	assert.GreaterOrEqual(t, v.FinishedAt.Sub(began), 8*time.Second, "6 s of wait and about 3 s paused")
}

// TestPauseNowStopsTheRunningStepAndRunsItAgainOnUnpause: pause --now
// stops a shell step that sleeps and then writes a file (its process is
// killed: no file), the engine is killed with SIGKILL and started again
// while the run is paused, and the run is still paused; unpaused, the step
// runs again, once, to its end, without spending a retry (it has none).
func TestPauseNowStopsTheRunningStepAndRunsItAgainOnUnpause(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	out := filepath.Join(t.TempDir(), "wrote")
	p.WriteFile(".orbit/jobs/slowwrite.yaml", `
schemaVersion: 2
kind: Job
metadata: {name: slowwrite}
spec:
  steps:
    - id: write
      spec: {type: shell, program: sh, args: ["-c", "sleep 3; echo wrote >> \"$1\"", "sh", "`+out+`"], allowed_programs: [sh]}
    - {id: after, spec: {type: deterministic, action: echo, config: {n: 2}}}
`)
	engine := serve(t, p)
	runID := runJob(t, p, "slowwrite", "--detach")
	waitFor(t, "the step to run", func() bool { return stepState(runView(t, p, runID), "write") == events.StateRunning })

	r := p.Orbit("run", "pause", runID, "--now")
	require.Equal(t, 0, r.Code, r.String())
	waitFor(t, "the step to be stopped", func() bool { return stepState(runView(t, p, runID), "write") == events.StateCancelled })
	time.Sleep(4 * time.Second)
	assert.NoFileExists(t, out, "the step's process was killed")
	v := runView(t, p, runID)
	assert.True(t, v.Paused)
	assert.Equal(t, events.StateRunning, v.State)

	killEngine(t, engine)
	serve(t, p)
	waitFor(t, "the run to be resumed", func() bool { return runView(t, p, runID).Resumes == 1 })
	time.Sleep(time.Second)
	v = runView(t, p, runID)
	assert.True(t, v.Paused, "still paused after the restart")
	assert.Equal(t, events.StateCancelled, stepState(v, "write"), "not run again while paused")
	assert.NoFileExists(t, out)

	r = p.Orbit("run", "unpause", runID)
	require.Equal(t, 0, r.Code, r.String())
	waitFor(t, "the run to finish", func() bool { return events.Terminal(runView(t, p, runID).State) })
	v = runView(t, p, runID)
	assert.Equal(t, events.StateSuccess, v.State)
	data, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.Equal(t, "wrote\n", string(data), "run again once")

	evs := orbitJSON[[]events.Event](t, p, "run", "events", "--json", runID)
	var finished []events.StepFinishedData
	for _, ev := range evs {
		if ev.Type == events.StepFinished && ev.StepKey == "write" {
			var d events.StepFinishedData
			require.NoError(t, ev.Decode(&d))
			finished = append(finished, d)
		}
	}
	require.Len(t, finished, 2)
	assert.Equal(t, 1, finished[0].Attempt)
	assert.Equal(t, events.StateCancelled, finished[0].State)
	require.NotNil(t, finished[0].Error)
	assert.Equal(t, events.KindPaused, finished[0].Error.Kind)
	assert.Equal(t, 2, finished[1].Attempt)
	assert.Equal(t, events.StateSuccess, finished[1].State)
}
