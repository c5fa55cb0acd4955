package activity_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/agent"
	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/runrig"
	"github.com/orbitrun/orbit/internal/testkit"
)

// stoppedBeforeAgain runs job with its one step repeated as a second step,
// "again", under budget, and requires the budget the first step spends to
// stop the run before the second, budget_exhausted.
func stoppedBeforeAgain(t *testing.T, log *events.Log, job *assets.Job, budget *assets.Budget) (string, events.RunFinishedData) {
	t.Helper()
	again := job.Spec.Steps[0]
	again.ID = "again"
	job.Spec.Steps = append(job.Spec.Steps, again)
	job.Spec.Budget = budget
	runID, fin := runrig.RunJob(t, log, job, nil)
	require.Equal(t, events.StateBudgetExhausted, fin.State, "%+v", fin.Error)
	assert.Equal(t, "again", fin.Error.StepKey)
	return runID, fin
}

// claudeJSONJob is a one-step job of a CLI agent whose output is
// claude_json and which prints result, one JSON line.
func claudeJSONJob(t *testing.T, result string) *assets.Job {
	t.Helper()
	return runrig.CLIJob(t, runrig.WriteScript(t, "printf '"+result+"\\n'\n"), agent.OutputClaudeJSON, 30)
}

// TestClaudeCodeIsStoppedWhenItsRunsBudgetIsSpent: the real Claude Code
// CLI's first turn spends past the run's max_tokens; the adapter stops the
// agent before the model is asked again (the second turn would hang until
// the wall clock), and the run ends budget_exhausted.
func TestClaudeCodeIsStoppedWhenItsRunsBudgetIsSpent(t *testing.T) {
	t.Parallel()
	log := runrig.EngineLog(t)
	first := writeFileTurns("out.txt")[0]
	first.InputTokens, first.OutputTokens = 1000, 50
	srv := testkit.NewAnthropicServer(t, first, testkit.Turn{Hang: true})
	job := claudeCodeJob(t, srv, writeForAMinute)
	job.Spec.Budget = &assets.Budget{MaxTokens: 500}
	runID, fin := runrig.RunJob(t, log, job, nil)

	require.Equal(t, events.StateBudgetExhausted, fin.State, "%+v", fin.Error)
	require.NotNil(t, fin.Error)
	assert.Equal(t, events.KindBudget, fin.Error.Kind)
	assert.Contains(t, fin.Error.Message, "of max_tokens 500")
	assert.Len(t, srv.Scripted(), 1, "the model was not asked again")
	evs := runrig.History(t, log, runID)
	turns := runrig.DecodeAll[events.AgentTurnData](t, runrig.OfType(evs, events.AgentTurn))
	require.Len(t, turns, 1, "the turn that spent the budget is recorded")
	assert.GreaterOrEqual(t, turns[0].Usage.InputTokens+turns[0].Usage.OutputTokens, int64(500))
	steps := runrig.DecodeAll[events.StepFinishedData](t, runrig.OfType(evs, events.StepFinished))
	require.Len(t, steps, 1)
	assert.Equal(t, events.StateBudgetExhausted, steps[0].State)
}

// TestARunsCostBudgetCountsWhatClaudeCodeReports: the real Claude Code CLI
// reports a cost (total_cost_usd, recorded on cli.invocation.finished);
// with max_cost_usd below it, the first step finishes and the interpreter
// stops the run before the second, recording its decision.
func TestARunsCostBudgetCountsWhatClaudeCodeReports(t *testing.T) {
	t.Parallel()
	log := runrig.EngineLog(t)
	srv := testkit.NewAnthropicServer(t, append(writeFileTurns("out.txt"), testkit.Turn{Hang: true})...)
	job := claudeCodeJob(t, srv, writeForAMinute)
	runID, fin := stoppedBeforeAgain(t, log, job, &assets.Budget{MaxCostUSD: 0.000001})

	assert.Contains(t, fin.Error.Message, "budget spent before step again")
	assert.Contains(t, fin.Error.Message, "of max_cost_usd 0.0000")
	evs := runrig.History(t, log, runID)
	decided := runrig.DecodeAll[events.RunBudgetExhaustedData](t, runrig.OfType(evs, events.RunBudgetExhausted))
	require.Len(t, decided, 1)
	assert.Greater(t, decided[0].CostUSD, 0.0, "Claude Code's own account of the cost")
	assert.Equal(t, 0.000001, decided[0].MaxCostUSD)
	steps := runrig.DecodeAll[events.StepFinishedData](t, runrig.OfType(evs, events.StepFinished))
	require.Len(t, steps, 1, "the second step never started")
	assert.Equal(t, events.StateSuccess, steps[0].State)
}

// TestARunsTokensSpentByClaudeCodeAreItsResults: the tokens a run's budget
// counts for a real Claude Code session (summed from its turns) are the
// session's own total, its result record's, output tokens included.
func TestARunsTokensSpentByClaudeCodeAreItsResults(t *testing.T) {
	t.Parallel()
	log := runrig.EngineLog(t)
	turns := writeFileTurns("out.txt")
	turns[0].InputTokens, turns[0].OutputTokens = 300, 70
	turns[1].InputTokens, turns[1].OutputTokens = 400, 90
	srv := testkit.NewAnthropicServer(t, append(turns, testkit.Turn{Hang: true})...)
	job := claudeCodeJob(t, srv, writeForAMinute)
	runID, _ := stoppedBeforeAgain(t, log, job, &assets.Budget{MaxCostUSD: 0.000001})

	evs := runrig.History(t, log, runID)
	invs := runrig.DecodeAll[events.CLIInvocationFinishedData](t, runrig.OfType(evs, events.CLIInvocationFinished))
	require.Len(t, invs, 1)
	assert.Equal(t, events.TokenUsage{InputTokens: 700, OutputTokens: 160}, invs[0].Usage, "the result record's")
	decided := runrig.DecodeAll[events.RunBudgetExhaustedData](t, runrig.OfType(evs, events.RunBudgetExhausted))
	require.Len(t, decided, 1)
	assert.Equal(t, int64(860), decided[0].Tokens, "the budget counts every output token")
}

// TestACLIAgentWithoutTurnsCountsTheTokensOfItsResult: an executor whose
// output is parsed only at the end (claude_json) records no agent.turn;
// the tokens of its result count, so the run stops before the next step.
func TestACLIAgentWithoutTurnsCountsTheTokensOfItsResult(t *testing.T) {
	t.Parallel()
	log := runrig.EngineLog(t)
	job := claudeJSONJob(t, `{"type":"result","subtype":"success","is_error":false,"result":"done","num_turns":1,"usage":{"input_tokens":400,"output_tokens":200}}`)
	runID, fin := stoppedBeforeAgain(t, log, job, &assets.Budget{MaxTokens: 600})

	assert.Contains(t, fin.Error.Message, "600 tokens of max_tokens 600")
	assert.Empty(t, runrig.OfType(runrig.History(t, log, runID), events.AgentTurn))
}

// TestARunsCostBudgetCountsWhatClaudeJSONReports: claude -p
// --output-format json prints total_cost_usd in its result object; it is
// recorded on cli.invocation.finished and counts against max_cost_usd, so
// the run stops before the next step.
func TestARunsCostBudgetCountsWhatClaudeJSONReports(t *testing.T) {
	t.Parallel()
	log := runrig.EngineLog(t)
	job := claudeJSONJob(t, `{"type":"result","subtype":"success","is_error":false,"result":"done","num_turns":1,"total_cost_usd":0.25,"usage":{"input_tokens":40,"output_tokens":2}}`)
	runID, fin := stoppedBeforeAgain(t, log, job, &assets.Budget{MaxCostUSD: 0.2})

	assert.Contains(t, fin.Error.Message, "$0.2500 of max_cost_usd 0.2000")
	invs := runrig.DecodeAll[events.CLIInvocationFinishedData](t, runrig.OfType(runrig.History(t, log, runID), events.CLIInvocationFinished))
	require.Len(t, invs, 1)
	assert.Equal(t, 0.25, invs[0].CostUSD)
	assert.False(t, invs[0].UsageInTurns, "no turns were recorded: the invocation's usage is the only account")
}

// TestARunsTokenBudgetCountsWhatCodexReports: Codex's turns carry no usage
// (it reports the session's, on cli.invocation.finished), so its
// invocation's tokens count: the real Codex CLI's first step spends past
// max_tokens and the run stops before the second.
func TestARunsTokenBudgetCountsWhatCodexReports(t *testing.T) {
	t.Parallel()
	log := runrig.EngineLog(t)
	srv := testkit.NewOpenAIServer(t, append(codexCommandTurns("echo written > out.txt"), testkit.Turn{Hang: true})...)
	job := codexJob(t, srv, writeForAMinute)
	runID, _ := stoppedBeforeAgain(t, log, job, &assets.Budget{MaxTokens: 100})

	evs := runrig.History(t, log, runID)
	require.NotEmpty(t, runrig.OfType(evs, events.AgentTurn), "Codex's turns are recorded, without usage")
	decided := runrig.DecodeAll[events.RunBudgetExhaustedData](t, runrig.OfType(evs, events.RunBudgetExhausted))
	require.Len(t, decided, 1)
	assert.Equal(t, int64(240), decided[0].Tokens, "turn.completed's usage, once")
}
