package main_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/internal/testkit"
)

// TestGroundhogOverClaudeCode runs a two-checkpoint plan over the real
// Claude Code CLI: checkpoint one is closed through
// mcp__orbit__checkpoint_success; checkpoint two's first attempt writes,
// through Bash, a file the verifier refutes, is rewound, and the second
// attempt, whose prompt holds the failure report and nothing of the first
// attempt's conversation, succeeds.
func TestGroundhogOverClaudeCode(t *testing.T) {
	t.Parallel()
	srv := testkit.NewAnthropicServer(t, exampleTurns(t, "script.json")...)
	p, repo, task := cliGroundhogProject(t, srv)

	runID := runTheExamplePlan(t, p, repo, task, "example_cli_agent")

	// Nine model turns, one per request: each session ended its turn after
	// its terminal verb with a final message (which carries its result
	// record) and did nothing more.
	reqs := srv.Scripted()
	require.Len(t, reqs, 9)
	checkFirstRequest(t, reqs[0], "claude-sonnet-4-5", "mcp__orbit__checkpoint_success",
		"mcp__orbit__checkpoint_success", "mcp__orbit__checkpoint_failure", "mcp__orbit__side_effect", "Bash", "Write", "Read")
	assert.NotContains(t, reqs[0].System, "auto memory", "Claude Code's own memory would outlive the attempt")
	// Each attempt starts a fresh session: its first request holds no
	// turn of the model's and one user message, the prompt.
	roles := func(req testkit.ModelRequest) (user []string, assistant int) {
		for _, raw := range req.Messages {
			var m struct{ Role string }
			require.NoError(t, json.Unmarshal(raw, &m))
			switch m.Role {
			case "user":
				user = append(user, string(raw))
			case "assistant":
				assistant++
			}
		}
		return user, assistant
	}
	for _, i := range []int{0, 3, 6} {
		user, assistant := roles(reqs[i])
		assert.Len(t, user, 1, "request %d", i)
		assert.Zero(t, assistant, "request %d", i)
	}
	user, _ := roles(reqs[6])
	retry := user[0]
	assert.Contains(t, retry, "The last attempt at this checkpoint failed (verifier)")
	assert.Contains(t, retry, "two.txt")
	assert.Contains(t, retry, "Add one.txt", "the memory of checkpoint one")
	assert.NotContains(t, retry, "wrong-answer", "nothing of the first attempt's conversation")
	assert.NotContains(t, retry, "toolu_wrong")

	audit := checkTwoCheckpointAudit(t, p, task)
	calls := func(cp, at int) []string {
		var out []string
		for _, c := range audit.Checkpoints[cp].Attempts[at].ToolCalls {
			out = append(out, c.AgentTool+"="+c.Name+"#"+c.ToolUseID)
		}
		return out
	}
	verb := "mcp__orbit__checkpoint_success=orbit.groundhog.checkpoint_success#"
	assert.Equal(t, []string{"Write=fs.write#toolu_one", verb + "toolu_002_1"}, calls(0, 0))
	assert.Equal(t, []string{"Bash=shell.exec#toolu_wrong", verb + "toolu_005_1"}, calls(1, 0))
	assert.Equal(t, []string{"Bash=shell.exec#toolu_right", verb + "toolu_008_1"}, calls(1, 1))

	// The agent's process and output are the run's events; the key in its
	// environment is not.
	evs := runEventsJSON(t, p, runID)
	assert.Equal(t, 3, strings.Count(evs, `"cli.invocation.started"`), "one Claude Code session per attempt")
	assert.Contains(t, evs, `"--strict-mcp-config"`)
	assert.NotContains(t, evs, "sk-ant-orbit-test")

	checkVerified(t, p, task)
}

// TestGroundhogOverClaudeCodeKilledMidAttempt: the engine is killed while
// Claude Code waits for the model; the restarted engine rewinds the open
// attempt as interrupted and a fresh session finishes the checkpoint.
func TestGroundhogOverClaudeCodeKilledMidAttempt(t *testing.T) {
	t.Parallel()
	srv := testkit.NewAnthropicServer(t,
		testkit.Turn{Hang: true},
		testkit.Turn{Tools: []testkit.ToolUse{{Name: "Write", Input: map[string]any{"file_path": "one.txt", "content": "one\n"}}}},
		testkit.Turn{Tools: []testkit.ToolUse{{Name: "mcp__orbit__checkpoint_success", Input: map[string]any{"summary": "Add one.txt"}}}},
		testkit.Turn{Text: "Done."},
	)
	p, repo, task := cliGroundhogProject(t, srv)
	checkKilledMidAttempt(t, p, srv, repo, task, "example_cli_agent", "Claude Code")
}

// TestGroundhogOverClaudeCodeWithoutAVerb: a session that ends without a
// terminal verb is a synthetic failure of its attempt, rewound like any
// other; the next attempt hears of it.
func TestGroundhogOverClaudeCodeWithoutAVerb(t *testing.T) {
	t.Parallel()
	srv := testkit.NewAnthropicServer(t,
		testkit.Turn{Tools: []testkit.ToolUse{{Name: "Write", Input: map[string]any{"file_path": "one.txt", "content": "one\n"}}}},
		testkit.Turn{Text: "I wrote one.txt and stopped."},
		testkit.Turn{Tools: []testkit.ToolUse{{Name: "Write", Input: map[string]any{"file_path": "one.txt", "content": "one\n"}}}},
		testkit.Turn{Tools: []testkit.ToolUse{{Name: "mcp__orbit__checkpoint_success", Input: map[string]any{"summary": "Add one.txt"}}}},
		testkit.Turn{Text: "Done."},
	)
	p, repo, task := cliGroundhogProject(t, srv)
	checkWithoutAVerb(t, p, srv, repo, task, "example_cli_agent", "mcp__orbit__checkpoint_success or mcp__orbit__checkpoint_failure")
}
