package main_test

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
	"github.com/orbitrun/orbit/projector"
)

// onePlan is a one-checkpoint plan for one.txt, under budget (a YAML
// flow mapping, or "" for none).
func onePlan(budget string) string {
	plan := "checkpoints:\n  - id: one\n    spec: Add one.txt.\n    success_criteria:\n      - {kind: file_exists, path: one.txt}\n"
	if budget != "" {
		plan = "budget: " + budget + "\n" + plan
	}
	return plan
}

// TestAGroundhogAttemptOverCodexClosedByFailureCountsItsTokens: Codex
// reports usage only when its turn completes. A session closed by
// checkpoint_failure ends its turn on its own after the verb, so its three
// requests (120 tokens each) are on record and bring the task past
// max_tokens 300: it stops as budget_exhausted before a second attempt
// rather than spending without bound.
func TestAGroundhogAttemptOverCodexClosedByFailureCountsItsTokens(t *testing.T) {
	t.Parallel()
	srv := testkit.NewOpenAIServer(t,
		testkit.Turn{Tools: []testkit.ToolUse{{Name: "exec_command", Input: map[string]any{"cmd": "echo one > one.txt"}}}},
		testkit.Turn{Tools: []testkit.ToolUse{{Namespace: "mcp__orbit", Name: "checkpoint_failure",
			Input: map[string]any{"what_tried": "echo", "what_happened": "one.txt is wrong", "next_attempt_plan": "try again"}}}},
		testkit.Turn{Text: "The checkpoint is closed."},
		testkit.Turn{Text: "never asked"},
	)
	p, repo, task := codexGroundhogProject(t, srv)
	planTask(t, p, task, onePlan("{max_tokens: 300}"))

	r := p.Orbit("groundhog", "run", task, "--activity", "example_codex_agent")
	require.Equal(t, 1, r.Code, r.String())
	assert.Contains(t, r.Stderr, "budget spent before checkpoint one: 360 tokens of max_tokens 300")
	assert.Len(t, srv.Scripted(), 3, "one session, ended by itself after its verb; no second attempt")
	assert.Equal(t, events.TaskBudgetExhausted, taskStatus(t, p, task))
	assert.Equal(t, "initial", testkit.Git(t, repo, "log", "--format=%s", "main"))

	audit := orbitJSON[projector.GroundhogRun](t, p, "groundhog", "show", task, "--audit", "--json")
	require.Len(t, audit.Checkpoints, 1)
	require.Len(t, audit.Checkpoints[0].Attempts, 1)
	a := audit.Checkpoints[0].Attempts[0]
	require.NotNil(t, a.Verb)
	assert.Equal(t, "orbit.groundhog.checkpoint_failure", a.Verb.Verb)
	require.Len(t, a.Sessions, 1)
	assert.Equal(t, int64(360), a.Sessions[0].Usage.InputTokens+a.Sessions[0].Usage.OutputTokens)
	assert.Empty(t, a.Denials)
}

// afterVerb checks a task whose first attempt went on after its verb
// with a command that writes late.txt: the agent's PreToolUse hook
// refused the command before it ran (a tool.denied of agentTool in the
// attempt's audit, with the hook's reason; no late.txt on the attempt's
// scratch branch), the attempt was rewound rather than verified, as one
// whose agent acted after its verb, and the second attempt, which hears
// why, committed one.txt alone. Nothing of late.txt is in the workspace
// or on main.
func afterVerb(t *testing.T, p *testkit.Project, repo, task string, reqs []testkit.ModelRequest, agentTool string) {
	t.Helper()
	assert.Equal(t, "Add one.txt\ninitial", testkit.Git(t, repo, "log", "--format=%s", "main"))
	assert.Empty(t, testkit.Git(t, repo, "ls-tree", "-r", "--name-only", "main", "late.txt"))
	assert.NoFileExists(t, filepath.Join(repo, "late.txt"))
	require.Len(t, reqs, 6, "the first session was stopped at its command, the second ended its turn")
	assert.Contains(t, string(reqs[3].Raw), "then the agent went on", "the second attempt hears why the first failed")

	r := p.Orbit("groundhog", "show", task, "--audit", "--json")
	require.Equal(t, 0, r.Code, r.String())
	var audit projector.GroundhogRun
	require.NoError(t, json.Unmarshal([]byte(r.Stdout), &audit))
	require.Len(t, audit.Checkpoints, 1)
	require.Len(t, audit.Checkpoints[0].Attempts, 2)
	first, second := audit.Checkpoints[0].Attempts[0], audit.Checkpoints[0].Attempts[1]
	assert.Equal(t, "rewound", first.Outcome)
	require.Len(t, first.Denials, 1)
	assert.Equal(t, agentTool, first.Denials[0].AgentTool)
	assert.Equal(t, "shell.exec", first.Denials[0].Name)
	assert.Contains(t, first.Denials[0].Reason, "after the session was closed")
	assert.Contains(t, first.Denials[0].Reason, "refused by the PreToolUse hook before it ran")
	assert.Empty(t, testkit.Git(t, repo, "ls-tree", "-r", "--name-only", "groundhog/T-1/day-1", "late.txt"), "the command never ran")
	assert.Equal(t, "committed", second.Outcome)
	assert.Empty(t, second.Denials)
	r = p.Orbit("groundhog", "verify", task)
	assert.Equal(t, 0, r.Code, r.String())
}

// TestACodexSessionThatRunsACommandAfterItsVerbIsStopped: after
// checkpoint_success, Codex is asked to run a command; its hook refuses
// it, and Codex is stopped before the hook answers, so that it never
// reaches the model again (the test's script would give it the second
// attempt's turn), on any Node; its attempt is rewound (afterVerb).
func TestACodexSessionThatRunsACommandAfterItsVerbIsStopped(t *testing.T) {
	t.Parallel()
	write := testkit.Turn{Tools: []testkit.ToolUse{{Name: "exec_command", Input: map[string]any{"cmd": "echo one > one.txt"}}}}
	success := testkit.Turn{Tools: []testkit.ToolUse{{Namespace: "mcp__orbit", Name: "checkpoint_success", Input: map[string]any{"summary": "Add one.txt"}}}}
	srv := testkit.NewOpenAIServer(t, write, success,
		testkit.Turn{Tools: []testkit.ToolUse{{ID: "call_late", Name: "exec_command", Input: map[string]any{"cmd": "echo late > late.txt"}}}},
		write, success, testkit.Turn{Text: "Done."},
	)
	p, repo, task := codexGroundhogProject(t, srv)
	planTask(t, p, task, onePlan(""))
	r := p.Orbit("groundhog", "run", task, "--activity", "example_codex_agent")
	require.Equal(t, 0, r.Code, r.String())
	afterVerb(t, p, repo, task, srv.Scripted(), "command_execution")
}

// TestAClaudeCodeSessionThatRunsACommandAfterItsVerbIsStopped: the same
// over Claude Code, whose Bash call after checkpoint_success is refused:
// it is stopped before the command writes its file, and its attempt
// rewound.
func TestAClaudeCodeSessionThatRunsACommandAfterItsVerbIsStopped(t *testing.T) {
	t.Parallel()
	write := testkit.Turn{Tools: []testkit.ToolUse{{Name: "Write", Input: map[string]any{"file_path": "one.txt", "content": "one\n"}}}}
	success := testkit.Turn{Tools: []testkit.ToolUse{{Name: "mcp__orbit__checkpoint_success", Input: map[string]any{"summary": "Add one.txt"}}}}
	srv := testkit.NewAnthropicServer(t, write, success,
		testkit.Turn{Tools: []testkit.ToolUse{{ID: "toolu_late", Name: "Bash", Input: map[string]any{"command": "sh -c 'echo late > late.txt'", "description": "write late.txt"}}}},
		write, success, testkit.Turn{Text: "Done."},
	)
	p, repo, task := cliGroundhogProject(t, srv)
	planTask(t, p, task, onePlan(""))
	r := p.Orbit("groundhog", "run", task, "--activity", "example_cli_agent")
	require.Equal(t, 0, r.Code, r.String())
	afterVerb(t, p, repo, task, srv.Scripted(), "Bash")
}
