package executor_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/runrig"
	"github.com/orbitrun/orbit/internal/testkit"
)

// TestRestartDuringARetryWaitWaitsTheRemainder stops the engine in the
// middle of a 2 s retry backoff and starts a new one: the next attempt
// starts when the recorded not_before says, not a full backoff after the
// restart.
func TestRestartDuringARetryWaitWaitsTheRemainder(t *testing.T) {
	t.Parallel()
	r := newRestartRig(t)
	log := r.log
	job := jobSpec(t, "patient", `
  steps:
    - id: flaky
      retry: {max_attempts: 2, initial_backoff_ms: 2000}
      spec:
        type: shell
        program: sh
        args: ["-c", "test $ORBIT_STEP_ATTEMPT -ge 2"]
        allowed_programs: [sh]
`)
	runID := r.submit(t, job, nil)
	runrig.WaitFor(t, "the retry to be scheduled", func() bool { return runrig.Has(t, log, runID, events.StepRetryScheduled, "flaky") })
	time.Sleep(time.Second)
	r.restart(t)
	fin := runrig.WaitFinished(t, log, runID)
	require.Equal(t, events.StateSuccess, fin.State, "%+v", fin.Error)

	evs := runrig.History(t, log, runID)
	var sched events.StepRetryScheduledData
	require.NoError(t, runrig.OfType(evs, events.StepRetryScheduled)[0].Decode(&sched))
	second := runrig.OfType(evs, events.StepStarted)[1]
	assert.False(t, second.Time.Before(sched.NotBefore), "attempt 2 waited for not_before")
	assert.Less(t, second.Time.Sub(sched.NotBefore), 700*time.Millisecond, "and no longer: only the remainder after the restart")
	assert.Len(t, runrig.OfType(evs, events.RunResumed), 1)
	assert.Len(t, runrig.OfType(evs, events.StepRetryScheduled), 1, "the retry was decided once")
}

// TestARunPausesWhileTheDiskIsFullAndGoesOnAfter fills the disk while a
// step runs: the step's end cannot be recorded, so the run waits — neither
// failed nor lost — and finishes as soon as space is freed, with the step
// run once.
func TestARunPausesWhileTheDiskIsFullAndGoesOnAfter(t *testing.T) {
	t.Parallel()
	var free atomic.Uint64
	free.Store(1 << 30)
	log := testkit.StartLog(t, events.Config{FreeSpace: func(string) (uint64, error) { return free.Load(), nil }})
	dir := t.TempDir()
	job := jobSpec(t, "patient", `
  steps:
    - id: slow
      spec: {type: shell, program: sh, args: ["-c", "sleep 1; echo done >> runs"], allowed_programs: [sh]}
    - id: next
      spec: {type: shell, program: "true", allowed_programs: ["true"]}
`)
	runrig.StartEngine(t, log, dir, nil)
	runID := runrig.Submit(t, log, job, nil)
	runrig.WaitFor(t, "the step to start", func() bool { return runrig.Has(t, log, runID, events.StepStarted, "slow") })
	free.Store(1 << 20)

	time.Sleep(3 * time.Second)
	assert.False(t, runrig.Has(t, log, runID, events.StepFinished, "slow"), "nothing is written while the disk is full")
	assert.Empty(t, runrig.OfType(runrig.History(t, log, runID), events.RunFinished), "and the run is not given up")

	free.Store(1 << 30)
	fin := runrig.WaitFinished(t, log, runID)
	require.Equal(t, events.StateSuccess, fin.State, "%+v", fin.Error)
	out, err := os.ReadFile(filepath.Join(dir, "runs"))
	require.NoError(t, err)
	assert.Equal(t, "done\n", string(out), "the step ran once")
}

// TestARunOnAnEmbeddedStoreTakesNoLease: on an embedded store, which one
// engine runs by the file lock, a run writes no lease while it runs, and
// an engine started after the first stopped mid-step resumes it all the
// same.
func TestARunOnAnEmbeddedStoreTakesNoLease(t *testing.T) {
	t.Parallel()
	r := newRestartRig(t)
	log := r.log
	require.True(t, log.Embedded())
	gate := filepath.Join(r.dir, "gate")
	job := jobSpec(t, "gated", `
  steps:
    - id: wait
      spec:
        type: shell
        program: sh
        args: ["-c", "touch `+gate+`.running; while [ ! -e `+gate+` ]; do sleep 0.05; done"]
        allowed_programs: [sh]
`)
	runID := r.submit(t, job, nil)
	runrig.WaitFor(t, "the step to start", func() bool {
		_, err := os.Stat(gate + ".running")
		return err == nil
	})
	keys, err := log.Leases().Keys(context.Background())
	require.NoError(t, err)
	for _, k := range keys {
		assert.False(t, strings.HasPrefix(k, "run.") || strings.HasPrefix(k, "step."), "lease %s written on an embedded store", k)
	}
	r.restart(t)
	require.NoError(t, os.WriteFile(gate, nil, 0o600))
	fin := runrig.WaitFinished(t, log, runID)
	require.Equal(t, events.StateSuccess, fin.State, "%+v", fin.Error)
	assert.Len(t, runrig.OfType(runrig.History(t, log, runID), events.RunResumed), 1)
}
