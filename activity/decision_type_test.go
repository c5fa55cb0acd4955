package activity_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/runrig"
	"github.com/orbitrun/orbit/internal/testkit"
)

// TestAStepCommandCannotBorrowADecisionOfAnotherType sends a shell step
// command and then stores the step.started of its run, step and attempt,
// but recording another activity type: the worker, waiting for the
// decision on its feed, finds the event there and in the log, never runs
// the command, and dead-letters it as having no decision.
func TestAStepCommandCannotBorrowADecisionOfAnotherType(t *testing.T) {
	t.Parallel()
	log := signingLog(t)
	dir := t.TempDir()
	startWorker(t, log, 500*time.Millisecond)
	ctx := testkit.Context(t)
	runID := events.NewID()
	_, err := runrig.ResendStepCommand(ctx, log, runID, "touch", 1, runrig.ParseJob(t, touchJob), dir)
	require.NoError(t, err)
	time.Sleep(20 * time.Millisecond)
	_, err = log.Append(ctx, events.Event{
		ID: events.DecisionID(events.StepStarted, runID, "touch", "1"), Type: events.StepStarted,
		RunID: runID, Job: "touch", StepKey: "touch",
	}, events.StepStartedData{Attempt: 1, ActivityType: "deterministic", Input: map[string]any{"n": 1}})
	require.NoError(t, err)

	require.Eventually(t, func() bool { return len(commandRejections(t, log, runID)) > 0 },
		15*time.Second, 20*time.Millisecond, "the command is recorded as rejected")
	rej := commandRejections(t, log, runID)
	require.Len(t, rej, 1)
	assert.Equal(t, events.ReasonNoDecision, rej[0].Reason)
	assertNotRun(t, log, dir, runID)
}
