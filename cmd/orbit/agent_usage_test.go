package main_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
	"github.com/orbitrun/orbit/projector"
)

// claudeWriteProject is a project whose job write is one agent step on the
// real Claude Code against a scripted model: a turn that writes out.txt
// (700 input tokens, 30 output), then one that answers (800 and 20). env
// is more of the engine's environment.
func claudeWriteProject(t *testing.T, env ...string) *testkit.Project {
	t.Helper()
	bin := testkit.ClaudeCLI(t)
	srv := testkit.NewAnthropicServer(t,
		testkit.Turn{Tools: []testkit.ToolUse{{ID: "toolu_w", Name: "Write", Input: map[string]any{"file_path": "out.txt", "content": "x\n"}}},
			InputTokens: 700, OutputTokens: 30},
		testkit.Turn{Text: "written", InputTokens: 800, OutputTokens: 20})
	p := testkit.NewProject(t)
	p.Env = append(append(p.Env, testkit.ClaudeEnv(t, srv)...), env...)
	p.WriteFile(".orbit/executors/claude_code.yaml", `schemaVersion: 2
kind: Executor
metadata: {name: claude_code}
spec: {command: `+bin+`, output: claude_code}
`)
	p.WriteFile(".orbit/jobs/write.yaml", `schemaVersion: 2
kind: Job
metadata: {name: write}
spec:
  steps:
    - id: agent
      default_input: {prompt: "Write out.txt."}
      spec:
        type: agent_loop
        backend: cli
        executor: claude_code
        model: claude-sonnet-4-5
        tools: [fs.write]
        wall_clock_timeout_seconds: 120
`)
	return p
}

// TestClaudeCodesTokensCountOnceInMetrics: the claude_code adapter records
// each turn's usage on agent.turn — the output tokens the server sent for
// that message — and the session's total (its result record's) on
// cli.invocation.finished. The turns add up to the result's total, and
// orbit metrics counts the tokens once — the turns' — and the cost Claude
// Code reports.
func TestClaudeCodesTokensCountOnceInMetrics(t *testing.T) {
	t.Parallel()
	p := claudeWriteProject(t)
	id := runJob(t, p, "write")

	var turns int64
	var perTurn []events.TokenUsage
	for _, ev := range runEvents(t, p, id, "--type", events.AgentTurn) {
		var d events.AgentTurnData
		require.NoError(t, ev.Decode(&d))
		turns += d.Usage.InputTokens + d.Usage.OutputTokens
		perTurn = append(perTurn, d.Usage)
	}
	assert.Equal(t, []events.TokenUsage{{InputTokens: 700, OutputTokens: 30}, {InputTokens: 800, OutputTokens: 20}}, perTurn,
		"each turn's usage is what the server sent for its message")
	invs := runEvents(t, p, id, "--type", events.CLIInvocationFinished)
	require.Len(t, invs, 1)
	var inv events.CLIInvocationFinishedData
	require.NoError(t, invs[0].Decode(&inv))
	assert.True(t, inv.UsageInTurns)
	assert.Greater(t, inv.CostUSD, 0.0)
	assert.Equal(t, inv.Usage.InputTokens+inv.Usage.OutputTokens, turns, "the turns add up to the result record's usage")

	m := orbitJSON[projector.Metrics](t, p, "metrics", "--json")
	model := m.Models["claude-sonnet-4-5"]
	assert.Equal(t, turns, model.Usage.InputTokens+model.Usage.OutputTokens, "each token once: %+v", model)
	assert.InDelta(t, inv.CostUSD, model.CostUSD(), 1e-9)
	assert.Equal(t, int64(1), model.Invocations)
	assert.Equal(t, int64(2), model.Turns)
}
