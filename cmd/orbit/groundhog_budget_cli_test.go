package main_test

import (
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
	"github.com/orbitrun/orbit/projector"
)

// TestAGroundhogTaskOverCodexStopsWhenItsBudgetIsSpent: Codex's turns carry
// no usage; its session reports the session's at turn.completed (120
// tokens a request here, 240 a session of two). Two attempts whose
// sessions end without a verb (synthetic failures) bring the task under
// max_tokens 400 to 480 tokens: it stops as budget_exhausted before the
// third, counting each session once, and a plan version with a higher
// budget continues it to the commit.
func TestAGroundhogTaskOverCodexStopsWhenItsBudgetIsSpent(t *testing.T) {
	t.Parallel()
	write := testkit.Turn{Tools: []testkit.ToolUse{{Name: "exec_command", Input: map[string]any{"cmd": "echo one > one.txt"}}}}
	srv := testkit.NewOpenAIServer(t,
		write, testkit.Turn{Text: "I wrote one.txt."},
		write, testkit.Turn{Text: "I wrote one.txt again."},
		write, testkit.Turn{Tools: []testkit.ToolUse{{Namespace: "mcp__orbit", Name: "checkpoint_success", Input: map[string]any{"summary": "Add one.txt"}}}},
		testkit.Turn{Text: "Done."},
	)
	p, repo, task := codexGroundhogProject(t, srv)
	plan := func(maxTokens string) string {
		return "budget: {max_tokens: " + maxTokens + "}\ncheckpoints:\n  - id: one\n    spec: Add one.txt.\n    success_criteria:\n      - {kind: file_exists, path: one.txt}\n"
	}
	r := p.Orbit("task", "plan", task, "--file", p.WriteFile("plan1.yaml", plan("400")))
	require.Equal(t, 0, r.Code, r.String())

	r = p.Orbit("groundhog", "run", task, "--activity", "example_codex_agent")
	require.Equal(t, 1, r.Code, r.String())
	assert.Contains(t, r.Stderr, "budget spent before checkpoint one: 480 tokens of max_tokens 400")
	assert.Equal(t, "initial", testkit.Git(t, repo, "log", "--format=%s", "main"))
	assert.Len(t, srv.Scripted(), 4, "two sessions ran, the third did not")
	assert.Equal(t, events.TaskBudgetExhausted, taskStatus(t, p, task))

	// The audit shows what each session spent.
	audit := orbitJSON[projector.GroundhogRun](t, p, "groundhog", "show", task, "--audit", "--json")
	require.Len(t, audit.Checkpoints, 1)
	require.Len(t, audit.Checkpoints[0].Attempts, 2)
	for i, a := range audit.Checkpoints[0].Attempts {
		require.Len(t, a.Sessions, 1, "attempt %d", i)
		assert.Equal(t, int64(240), a.Sessions[0].Usage.InputTokens+a.Sessions[0].Usage.OutputTokens, "attempt %d", i)
		assert.False(t, a.Sessions[0].UsageInTurns)
	}

	r = p.Orbit("task", "plan", task, "--file", p.WriteFile("plan2.yaml", plan("1000")))
	require.Equal(t, 0, r.Code, r.String())
	r = p.Orbit("groundhog", "run", task, "--activity", "example_codex_agent")
	require.Equal(t, 0, r.Code, r.String())
	assert.Equal(t, "Add one.txt\ninitial", testkit.Git(t, repo, "log", "--format=%s", "main"))
	assert.Equal(t, events.TaskDone, taskStatus(t, p, task))
	r = p.Orbit("groundhog", "verify", task)
	assert.Equal(t, 0, r.Code, r.String())
}

// TestAGroundhogTaskOverClaudeCodeCountsItsCostAndEachTokenOnce: Claude
// Code's turns carry their usage and its result record the session's total
// and cost (usage_in_turns). Two sessions that end without a verb spend
// 400000 input tokens and a few output tokens, counted once, and more than
// the task's max_cost_usd, which only the cost Claude Code reports can
// show: the task stops as budget_exhausted before the third session.
func TestAGroundhogTaskOverClaudeCodeCountsItsCostAndEachTokenOnce(t *testing.T) {
	t.Parallel()
	write := testkit.Turn{Tools: []testkit.ToolUse{{Name: "Write", Input: map[string]any{"file_path": "one.txt", "content": "one\n"}}},
		InputTokens: 100000, OutputTokens: 10}
	stop := testkit.Turn{Text: "I wrote one.txt and stopped.", InputTokens: 100000, OutputTokens: 10}
	srv := testkit.NewAnthropicServer(t, write, stop, write, stop,
		testkit.Turn{Tools: []testkit.ToolUse{{Name: "mcp__orbit__checkpoint_success", Input: map[string]any{"summary": "Add one.txt"}}}},
		testkit.Turn{Text: "Done."})
	p, repo, task := cliGroundhogProject(t, srv)
	r := p.Orbit("task", "plan", task, "--file", p.WriteFile("plan1.yaml",
		"budget: {max_tokens: 1000000, max_cost_usd: 0.8}\ncheckpoints:\n  - id: one\n    spec: Add one.txt.\n    success_criteria:\n      - {kind: file_exists, path: one.txt}\n"))
	require.Equal(t, 0, r.Code, r.String())

	r = p.Orbit("groundhog", "run", task, "--activity", "example_cli_agent")
	require.Equal(t, 1, r.Code, r.String())
	m := regexp.MustCompile(`budget spent before checkpoint one: (\d+) tokens of max_tokens 1000000, \$(\d+\.\d+) of max_cost_usd 0\.8000`).FindStringSubmatch(r.Stderr)
	require.NotNil(t, m, r.Stderr)
	tokens, err := strconv.ParseInt(m[1], 10, 64)
	require.NoError(t, err)
	assert.True(t, tokens >= 400000 && tokens <= 400040, "the four turns' tokens, once: %d", tokens)
	cost, err := strconv.ParseFloat(m[2], 64)
	require.NoError(t, err)
	assert.Greater(t, cost, 0.8, "the cost Claude Code reported for the two sessions")
	assert.Equal(t, "initial", testkit.Git(t, repo, "log", "--format=%s", "main"))
	assert.Len(t, srv.Scripted(), 4, "two sessions ran, the third did not")
	assert.Equal(t, events.TaskBudgetExhausted, taskStatus(t, p, task))
}
