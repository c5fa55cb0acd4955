package activity_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/activity"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/runrig"
	"github.com/orbitrun/orbit/internal/testkit"
)

// touchJob's one step leaves a file named ran in the workspace: the
// evidence that its command ran.
const touchJob = `
schemaVersion: 2
kind: Job
metadata: {name: touch}
spec:
  steps:
    - id: touch
      spec: {type: shell, program: touch, args: [ran], allowed_programs: [touch]}
`

// signingLog starts a log that signs what it publishes with its log key,
// as an engine's does.
func signingLog(t *testing.T) *events.Log {
	t.Helper()
	log := testkit.StartLog(t, events.Config{LogKeyFile: filepath.Join(t.TempDir(), "creds", events.LogKeyFile), MakeLogKey: true})
	require.True(t, log.Signing())
	return log
}

// startWorker runs a worker alone, with no orchestrator to record any
// decision, until the test ends.
func startWorker(t *testing.T, log *events.Log, decisionWait time.Duration) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w := activity.NewWorker(activity.WorkerConfig{Log: log, DecisionWait: decisionWait})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		assert.NoError(t, w.Run(ctx))
	}()
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
}

// commandRejections returns the integrity.rejected events recorded under
// a run for commands.
func commandRejections(t *testing.T, log *events.Log, runID string) []events.IntegrityRejectedData {
	t.Helper()
	var out []events.IntegrityRejectedData
	for _, ev := range runrig.OfType(runrig.History(t, log, runID), events.IntegrityRejected) {
		var d events.IntegrityRejectedData
		require.NoError(t, ev.Decode(&d))
		out = append(out, d)
	}
	return out
}

// queueEmpty reports whether no consumer of the command queue has a
// command waiting or in progress.
func queueEmpty(t *testing.T, log *events.Log) bool {
	t.Helper()
	depths, err := log.QueueDepths(testkit.Context(t))
	require.NoError(t, err)
	for _, d := range depths {
		if d.Pending > 0 || d.AckPending > 0 {
			return false
		}
	}
	return true
}

// sentTouch is touchJob's step command, sent under a run of its own to a
// worker alone on a signing log.
type sentTouch struct {
	log   *events.Log
	dir   string // the workspace the command runs in
	runID string
	name  string // the command's message name
}

// sendTouch starts a signing log and a worker that waits decisionWait for
// a command's decision, and sends it touchJob's step command under a new
// run, with no step.started stored.
func sendTouch(t *testing.T, decisionWait time.Duration) sentTouch {
	t.Helper()
	s := sentTouch{log: signingLog(t), dir: t.TempDir(), runID: events.NewID()}
	startWorker(t, s.log, decisionWait)
	var err error
	s.name, err = runrig.ResendStepCommand(testkit.Context(t), s.log, s.runID, "touch", 1, runrig.ParseJob(t, touchJob), s.dir)
	require.NoError(t, err)
	return s
}

// storeStarted stores the step.started of the touch command's run, step
// and attempt, with data's activity type and input.
func (s sentTouch) storeStarted(t *testing.T, data events.StepStartedData) {
	t.Helper()
	_, err := s.log.Append(testkit.Context(t), events.Event{
		ID: events.DecisionID(events.StepStarted, s.runID, "touch", "1"), Type: events.StepStarted,
		RunID: s.runID, Job: "touch", StepKey: "touch",
	}, data)
	require.NoError(t, err)
}

// rejected waits for the command to be dead-lettered and returns the one
// integrity.rejected recorded for it.
func (s sentTouch) rejected(t *testing.T) events.IntegrityRejectedData {
	t.Helper()
	require.Eventually(t, func() bool { return len(commandRejections(t, s.log, s.runID)) > 0 },
		15*time.Second, 20*time.Millisecond, "the command is recorded as rejected")
	rej := commandRejections(t, s.log, s.runID)
	require.Len(t, rej, 1)
	return rej[0]
}

func assertNotRun(t *testing.T, log *events.Log, dir, runID string) {
	t.Helper()
	_, err := os.Stat(filepath.Join(dir, "ran"))
	assert.True(t, os.IsNotExist(err), "the command must never run")
	assert.Empty(t, runrig.OfType(runrig.History(t, log, runID), events.ActivityStarted), "no execution may be recorded")
}

// TestAStepCommandWithNoDecisionIsNeverRun sends a validly signed step
// command, with the engine's own log and key, for a run that was never
// requested: the worker waits for its step.started, then dead-letters it
// as integrity.rejected under that run, never running it, and the queue
// is empty.
func TestAStepCommandWithNoDecisionIsNeverRun(t *testing.T) {
	t.Parallel()
	s := sendTouch(t, 500*time.Millisecond)

	rej := s.rejected(t)
	assert.Equal(t, events.StepsStream, rej.Stream)
	assert.Equal(t, events.CommandSubject(s.name), rej.Subject)
	assert.Equal(t, events.ReasonNoDecision, rej.Reason)
	assert.NotZero(t, rej.Seq)
	require.Eventually(t, func() bool { return queueEmpty(t, s.log) }, 5*time.Second, 20*time.Millisecond, "the command is removed")
	pending, err := s.log.Pending(testkit.Context(t), s.name)
	require.NoError(t, err)
	assert.False(t, pending)
	assertNotRun(t, s.log, s.dir, s.runID)
}

// TestAStepCommandRunsOnceItsStepStartedIsStored sends a step command
// before its step.started, as the orchestrator may (the two go out
// together): the worker waits for the event and then runs the command,
// whether the event comes within the wait on the worker's feed or later.
func TestAStepCommandRunsOnceItsStepStartedIsStored(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		delay time.Duration
	}{
		{"in flight", 20 * time.Millisecond},
		{"late", 1500 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := sendTouch(t, 5*time.Second)
			time.Sleep(tc.delay)
			_, statErr := os.Stat(filepath.Join(s.dir, "ran"))
			require.True(t, os.IsNotExist(statErr), "the command must wait for its step.started")
			s.storeStarted(t, events.StepStartedData{Attempt: 1, ActivityType: "shell"})

			require.Eventually(t, func() bool {
				_, err := os.Stat(filepath.Join(s.dir, "ran"))
				return err == nil
			}, 10*time.Second, 20*time.Millisecond, "the command runs")
			require.Eventually(t, func() bool { return len(runrig.OfType(runrig.History(t, s.log, s.runID), events.StepFinished)) == 1 },
				10*time.Second, 20*time.Millisecond)
			assert.Empty(t, commandRejections(t, s.log, s.runID))
		})
	}
}

// TestAStepCommandOfALiveRunWaitsForTheRunToEnd sends a step command with
// no step.started for a run that was requested and has not finished — what
// an engine killed between sending a command and storing its step.started
// leaves, until the resumed run stores it — then finishes the run: the
// command is kept, never run, while the run is live, and dead-lettered
// once it has ended.
func TestAStepCommandOfALiveRunWaitsForTheRunToEnd(t *testing.T) {
	t.Parallel()
	log := signingLog(t)
	dir := t.TempDir()
	startWorker(t, log, 200*time.Millisecond)
	ctx := testkit.Context(t)
	runID := events.NewID()
	_, err := log.Append(ctx, events.Event{ID: events.DecisionID(events.RunRequested, runID), Type: events.RunRequested, RunID: runID, Job: "touch"},
		events.RunRequestedData{JobName: "touch"})
	require.NoError(t, err)
	_, err = runrig.ResendStepCommand(ctx, log, runID, "touch", 1, runrig.ParseJob(t, touchJob), dir)
	require.NoError(t, err)

	time.Sleep(2 * time.Second) // the first wait, and a redelivery
	assert.Empty(t, commandRejections(t, log, runID), "a live run's command is kept")
	assert.False(t, queueEmpty(t, log), "a live run's command is kept")
	assertNotRun(t, log, dir, runID)

	_, err = log.Append(ctx, events.Event{ID: events.DecisionID(events.RunFinished, runID), Type: events.RunFinished, RunID: runID, Job: "touch"},
		events.RunFinishedData{State: events.StateCancelled})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(commandRejections(t, log, runID)) == 1 },
		40*time.Second, 50*time.Millisecond, "the command is dead-lettered once the run has ended")
	require.Eventually(t, func() bool { return queueEmpty(t, log) }, 5*time.Second, 20*time.Millisecond)
	assertNotRun(t, log, dir, runID)
}
