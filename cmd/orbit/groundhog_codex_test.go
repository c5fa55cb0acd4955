package main_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

// TestGroundhogOverCodex runs the two-checkpoint plan of
// TestGroundhogOverClaudeCode over the real Codex CLI: each checkpoint's
// file is written through Codex's shell and the attempt closed through
// checkpoint_success of the mcp__orbit namespace, which Codex routes to
// `orbit mcp`; checkpoint two's first attempt is refuted by the verifier,
// rewound, and the second, whose prompt holds the failure report and
// nothing of the first attempt's conversation, commits.
func TestGroundhogOverCodex(t *testing.T) {
	t.Parallel()
	srv := testkit.NewOpenAIServer(t, exampleTurns(t, "codex_script.json")...)
	p, repo, task := codexGroundhogProject(t, srv)

	runID := runTheExamplePlan(t, p, repo, task, "example_codex_agent")
	assert.Equal(t, "one", testkit.Git(t, repo, "show", "main:one.txt"))

	// Nine model turns, one per request: each session ended its turn after
	// its terminal verb with a final message (and its usage) and did
	// nothing more.
	reqs := srv.Scripted()
	require.Len(t, reqs, 9)
	checkFirstRequest(t, reqs[0], "gpt-orbit-test", "mcp__orbit.checkpoint_success",
		"mcp__orbit.checkpoint_success", "mcp__orbit.checkpoint_failure", "mcp__orbit.side_effect", "exec_command")
	// Each attempt starts a fresh session: its first request holds no
	// output of the model's and one user message holding the prompt.
	for _, i := range []int{0, 3, 6} {
		raw := string(reqs[i].Raw)
		assert.NotContains(t, raw, `"type":"function_call"`, "request %d", i)
		assert.Contains(t, raw, "Add one.txt.", "request %d: the plan", i)
	}
	retry := string(reqs[6].Raw)
	assert.Contains(t, retry, "The last attempt at this checkpoint failed (verifier)")
	assert.Contains(t, retry, "two.txt")
	assert.NotContains(t, retry, "wrong-answer", "nothing of the first attempt's conversation")
	assert.NotContains(t, retry, "call_wrong")

	audit := checkTwoCheckpointAudit(t, p, task)
	calls := func(cp, at int) []string {
		var out []string
		for _, c := range audit.Checkpoints[cp].Attempts[at].ToolCalls {
			out = append(out, c.AgentTool+"="+c.Name)
		}
		return out
	}
	shell, verb := "command_execution=shell.exec", "mcp:orbit/checkpoint_success=orbit.groundhog.checkpoint_success"
	assert.Equal(t, []string{shell, verb}, calls(0, 0))
	assert.Equal(t, []string{shell, verb}, calls(1, 0))
	assert.Equal(t, []string{shell, verb}, calls(1, 1))

	// The agent's process and output are the run's events; the key in its
	// environment is not. Codex's command line, which any process may read
	// from /proc, names the variables it forwards to orbit mcp and holds
	// neither an attempt token (redacted if it did) nor the seed's path.
	evs := runEventsJSON(t, p, runID)
	assert.Equal(t, 3, strings.Count(evs, `"cli.invocation.started"`), "one Codex session per attempt")
	assert.Contains(t, evs, `mcp_servers.orbit.command=`)
	assert.Equal(t, 3, strings.Count(evs, `mcp_servers.orbit.env_vars=[\"ORBIT_ATTEMPT_TOKEN\", `), "each attempt's token by name")
	assert.NotContains(t, evs, "[REDACTED]")
	assert.NotContains(t, evs, credsFile(p, events.IdentityClient))
	assert.NotContains(t, evs, "sk-orbit-test")

	checkVerified(t, p, task)
}

// TestGroundhogOverCodexWithoutAVerb: a Codex session that ends without a
// terminal verb is a synthetic failure of its attempt, rewound like any
// other, and the next attempt hears of it under the verbs' Codex names.
func TestGroundhogOverCodexWithoutAVerb(t *testing.T) {
	t.Parallel()
	write := testkit.Turn{Tools: []testkit.ToolUse{{Name: "exec_command", Input: map[string]any{"cmd": "sleep 0.5 && echo one > one.txt"}}}}
	srv := testkit.NewOpenAIServer(t,
		write,
		testkit.Turn{Text: "I wrote one.txt and stopped."},
		write,
		testkit.Turn{Tools: []testkit.ToolUse{{Namespace: "mcp__orbit", Name: "checkpoint_success", Input: map[string]any{"summary": "Add one.txt"}}}},
		testkit.Turn{Text: "Done."},
	)
	p, repo, task := codexGroundhogProject(t, srv)
	checkWithoutAVerb(t, p, srv, repo, task, "example_codex_agent", "mcp__orbit.checkpoint_success or mcp__orbit.checkpoint_failure")
}

// TestGroundhogOverCodexKilledMidAttempt: the engine is killed while Codex
// waits for the model; the restarted engine rewinds the open attempt as
// interrupted and a fresh session finishes the checkpoint.
func TestGroundhogOverCodexKilledMidAttempt(t *testing.T) {
	t.Parallel()
	srv := testkit.NewOpenAIServer(t,
		testkit.Turn{Hang: true},
		testkit.Turn{Tools: []testkit.ToolUse{{Name: "exec_command", Input: map[string]any{"cmd": "sleep 0.5 && echo one > one.txt"}}}},
		testkit.Turn{Tools: []testkit.ToolUse{{Namespace: "mcp__orbit", Name: "checkpoint_success", Input: map[string]any{"summary": "Add one.txt"}}}},
		testkit.Turn{Text: "Done."},
	)
	p, repo, task := codexGroundhogProject(t, srv)
	checkKilledMidAttempt(t, p, srv, repo, task, "example_codex_agent", "Codex")
}

// TestCodexsShellSeesNoAttemptToken: Codex forwards the attempt's variables
// to orbit mcp from its environment, and the commands it runs for the
// model see them empty: the shell writes its ORBIT_ variables into the
// checkpoint's file, and the verb that closes the attempt still reaches
// the engine.
func TestCodexsShellSeesNoAttemptToken(t *testing.T) {
	t.Parallel()
	srv := testkit.NewOpenAIServer(t,
		testkit.Turn{Tools: []testkit.ToolUse{{Name: "exec_command", Input: map[string]any{"cmd": "env | grep ^ORBIT_ | sort > one.txt"}}}},
		testkit.Turn{Tools: []testkit.ToolUse{{Namespace: "mcp__orbit", Name: "checkpoint_success", Input: map[string]any{"summary": "Add one.txt"}}}},
		testkit.Turn{Text: "Done."},
	)
	p, repo, task := codexGroundhogProject(t, srv)
	planTask(t, p, task, onePlan(""))
	r := p.Orbit("groundhog", "run", task, "--activity", "example_codex_agent")
	require.Equal(t, 0, r.Code, r.String())
	env := testkit.Git(t, repo, "show", "main:one.txt")
	for _, name := range []string{"ORBIT_ATTEMPT_TOKEN", "ORBIT_NKEY", "ORBIT_NATS_URL", "ORBIT_TASK_ID"} {
		assert.Contains(t, "\n"+env+"\n", "\n"+name+"=\n", "%s is empty in the shell", name)
	}
	assert.NotContains(t, env, credsFile(p, events.IdentityClient))
}
