package executor_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/runrig"
)

// TestBreakWhenComparesTextWithEqualsAndColon runs a review loop whose
// break_when compares the reviewer's message with literal text holding a
// colon, a space and a single =: the loop ends on the iteration whose
// message matches.
func TestBreakWhenComparesTextWithEqualsAndColon(t *testing.T) {
	t.Parallel()
	log := runrig.EngineLog(t)
	runID, fin := runSpec(t, log, "review", `
  steps:
    - id: review_fix
      loop:
        max_iterations: 3
        break_when: "{{ steps.reviewer.output.final_message }} == reviewed: blocking=2"
        steps:
          - id: reviewer
            spec: {type: deterministic, action: echo}
            default_input: {final_message: "reviewed: blocking={{ iteration }}"}
`)
	require.Equal(t, events.StateSuccess, fin.State, "%+v", fin.Error)
	its := runrig.DecodeAll[events.LoopIterationData](t, runrig.OfType(runrig.History(t, log, runID), events.LoopIteration))
	require.Len(t, its, 2, "break_when held after iteration 2")
	assert.True(t, its[1].Break)
}
