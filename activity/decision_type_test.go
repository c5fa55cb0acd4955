package activity_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/orbitrun/orbit/events"
)

// TestAStepCommandCannotBorrowADecisionOfAnotherType sends a shell step
// command and then stores the step.started of its run, step and attempt,
// but recording another activity type: the worker, waiting for the
// decision on its feed, finds the event there and in the log, never runs
// the command, and dead-letters it as having no decision.
func TestAStepCommandCannotBorrowADecisionOfAnotherType(t *testing.T) {
	t.Parallel()
	s := sendTouch(t, 500*time.Millisecond)
	time.Sleep(20 * time.Millisecond)
	s.storeStarted(t, events.StepStartedData{Attempt: 1, ActivityType: "deterministic", Input: map[string]any{"n": 1}})

	assert.Equal(t, events.ReasonNoDecision, s.rejected(t).Reason)
	assertNotRun(t, s.log, s.dir, s.runID)
}
