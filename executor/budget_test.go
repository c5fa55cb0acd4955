package executor_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

// TestClaudeCodeIsStoppedWhenItsRunsBudgetIsSpent: the real Claude Code
// CLI's first turn spends past the run's max_tokens; the adapter stops the
// agent before the model is asked again (the second turn would hang until
// the wall clock), and the run ends budget_exhausted.
func TestClaudeCodeIsStoppedWhenItsRunsBudgetIsSpent(t *testing.T) {
	t.Parallel()
	log := testkit.StartLog(t, events.Config{})
	startEngine(t, log, t.TempDir(), nil)
	first := writeFileTurns("out.txt")[0]
	first.InputTokens, first.OutputTokens = 1000, 50
	srv := testkit.NewAnthropicServer(t, first, testkit.Turn{Hang: true})
	job := claudeCodeJob(t, srv, "        tools: [fs.write]\n        wall_clock_timeout_seconds: 60\n")
	job.Spec.Budget = &assets.Budget{MaxTokens: 500}
	runID, fin := runJob(t, log, job, nil)

	require.Equal(t, events.StateBudgetExhausted, fin.State, "%+v", fin.Error)
	require.NotNil(t, fin.Error)
	assert.Equal(t, events.KindBudget, fin.Error.Kind)
	assert.Contains(t, fin.Error.Message, "of max_tokens 500")
	assert.Len(t, srv.Scripted(), 1, "the model was not asked again")
	evs := history(t, log, runID)
	turns := decodeAll[events.AgentTurnData](t, ofType(evs, events.AgentTurn))
	require.Len(t, turns, 1, "the turn that spent the budget is recorded")
	assert.GreaterOrEqual(t, turns[0].Usage.InputTokens+turns[0].Usage.OutputTokens, int64(500))
	steps := decodeAll[events.StepFinishedData](t, ofType(evs, events.StepFinished))
	require.Len(t, steps, 1)
	assert.Equal(t, events.StateBudgetExhausted, steps[0].State)
}
