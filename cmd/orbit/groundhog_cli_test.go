package main_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
	"github.com/orbitrun/orbit/projector"
)

// readCLIExample reads a file of examples/groundhog-cli, which make
// demo-groundhog-cli runs: the tests run the same plan, script, activity
// and executor.
func readCLIExample(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testkit.ModuleRoot(t), "examples", "groundhog-cli", name))
	require.NoError(t, err)
	return string(data)
}

// cliScript is the example's script of model turns.
func cliScript(t *testing.T) []testkit.Turn {
	t.Helper()
	var script struct {
		Turns []testkit.Turn `json:"turns"`
	}
	require.NoError(t, json.Unmarshal([]byte(readCLIExample(t, "script.json")), &script))
	return script.Turns
}

// cliGroundhogProject is a project whose engine runs Claude Code against
// srv, with the example's activity example_cli_agent on its executor
// claude_code, and a task with the example's plan on a fresh repository.
func cliGroundhogProject(t *testing.T, srv *testkit.AnthropicServer) (p *testkit.Project, repo, task string) {
	t.Helper()
	bin := testkit.ClaudeCLI(t)
	p = testkit.NewProject(t)
	p.Env = append(p.Env, testkit.GitEnv()...)
	p.Env = append(p.Env, testkit.ClaudeEnv(t, srv)...)
	executor := readCLIExample(t, "claude_code.yaml")
	require.Contains(t, executor, "\n  command: claude\n")
	p.WriteFile(".orbit/executors/claude_code.yaml", strings.Replace(executor, "\n  command: claude\n", "\n  command: "+bin+"\n", 1))
	p.WriteFile(".orbit/activities/example_cli_agent.yaml", readCLIExample(t, "example_cli_agent.yaml"))
	repo = testkit.NewGitRepo(t, map[string]string{"README.md": "# cli\n"})
	r := p.Orbit("task", "create", "--title", "CLI", "--plan", p.WriteFile("plan.yaml", readCLIExample(t, "plan.yaml")), "--workspace", repo)
	require.Equal(t, 0, r.Code, r.String())
	return p, repo, strings.TrimSpace(r.Stdout)
}

// TestGroundhogOverClaudeCode runs a two-checkpoint plan over the real
// Claude Code CLI: checkpoint one is closed through
// mcp__orbit__checkpoint_success; checkpoint two's first attempt writes,
// through Bash, a file the verifier refutes, is rewound, and the second
// attempt, whose prompt holds the failure report and nothing of the first
// attempt's conversation, succeeds.
func TestGroundhogOverClaudeCode(t *testing.T) {
	t.Parallel()
	srv := testkit.NewAnthropicServer(t, cliScript(t)...)
	p, repo, task := cliGroundhogProject(t, srv)

	r := p.Orbit("groundhog", "run", task, "--activity", "example_cli_agent")
	require.Equal(t, 0, r.Code, r.String())
	runID := strings.TrimSpace(r.Stdout)
	assert.Equal(t, "Add two.txt saying two\nAdd one.txt\ninitial", testkit.Git(t, repo, "log", "--format=%s", "main"))
	assert.Equal(t, "two", testkit.Git(t, repo, "show", "main:two.txt"))
	assert.Equal(t, "main", testkit.Git(t, repo, "branch", "--show-current"))
	assert.Equal(t, "wrong-answer", testkit.Git(t, repo, "show", "groundhog/T-1/day-2:two.txt"),
		"what the agent wrote through Bash was rewound and kept on the attempt's scratch branch")

	// Nine model turns, one per request: each session ended its turn after
	// its terminal verb with a final message (which carries its result
	// record) and did nothing more.
	reqs := srv.Scripted()
	require.Len(t, reqs, 9)
	first := reqs[0]
	assert.Equal(t, "claude-sonnet-4-5", first.Model)
	assert.Contains(t, first.System, "You keep files short and run the checks yourself before you declare success.")
	assert.Contains(t, first.System, "call mcp__orbit__checkpoint_success", "the protocol names the verbs as the agent sees them")
	assert.NotContains(t, first.System, "auto memory", "Claude Code's own memory would outlive the attempt")
	for _, tool := range []string{"mcp__orbit__checkpoint_success", "mcp__orbit__checkpoint_failure", "mcp__orbit__side_effect", "Bash", "Write", "Read"} {
		assert.Contains(t, first.Tools, tool)
	}
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

	r = p.Orbit("groundhog", "show", task, "--audit", "--json")
	require.Equal(t, 0, r.Code, r.String())
	var audit projector.GroundhogRun
	require.NoError(t, json.Unmarshal([]byte(r.Stdout), &audit))
	require.Len(t, audit.Checkpoints, 2)
	require.Len(t, audit.Checkpoints[0].Attempts, 1)
	require.Len(t, audit.Checkpoints[1].Attempts, 2)
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
	for cp, n := range []int{1, 2} {
		for at := range n {
			a := audit.Checkpoints[cp].Attempts[at]
			assert.NotEmpty(t, a.Turns, "checkpoint %d attempt %d", cp, at)
			assert.Empty(t, a.Denials, "checkpoint %d attempt %d", cp, at)
		}
	}
	assert.Equal(t, "rewound", audit.Checkpoints[1].Attempts[0].Outcome)
	assert.Equal(t, "committed", audit.Checkpoints[1].Attempts[1].Outcome)

	// The agent's process and output are the run's events; the key in its
	// environment is not.
	r = p.Orbit("run", "events", runID, "--json")
	require.Equal(t, 0, r.Code, r.String())
	assert.Equal(t, 3, strings.Count(r.Stdout, `"cli.invocation.started"`), "one Claude Code session per attempt")
	assert.Contains(t, r.Stdout, `"--strict-mcp-config"`)
	assert.NotContains(t, r.Stdout, "sk-ant-orbit-test")

	r = p.Orbit("groundhog", "verify", task)
	assert.Equal(t, 0, r.Code, r.String())
	assert.Contains(t, r.Stdout, "2 commits, verified")
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
	r := p.Orbit("task", "plan", task, "--file", p.WriteFile("plan1.yaml", "checkpoints:\n  - id: one\n    spec: Add one.txt.\n    success_criteria:\n      - {kind: file_exists, path: one.txt}\n"))
	require.Equal(t, 0, r.Code, r.String())
	p.StopEngine()
	engine := serve(t, p)
	r = p.Orbit("groundhog", "run", task, "--activity", "example_cli_agent", "--detach")
	require.Equal(t, 0, r.Code, r.String())
	runID := strings.TrimSpace(r.Stdout)
	waitFor(t, "Claude Code to ask the model", func() bool { return len(srv.Scripted()) == 1 })
	require.NoError(t, engine.Process.Signal(syscall.SIGKILL))
	_ = engine.Wait()
	assert.True(t, strings.HasPrefix(testkit.Git(t, repo, "branch", "--show-current"), "groundhog/T-1/day-"), "the kill left the workspace on the scratch branch")

	serve(t, p)
	waitFor(t, "the run to finish", func() bool { return events.Terminal(runView(t, p, runID).State) })
	assert.Equal(t, events.StateSuccess, runView(t, p, runID).State)
	assert.Len(t, srv.Scripted(), 4, "one session before the kill, one after that ends its turn after its verb")
	r = p.Orbit("groundhog", "show", task)
	assert.Contains(t, r.Stdout, ": interrupted")
	assert.Equal(t, "Add one.txt\ninitial", testkit.Git(t, repo, "log", "--format=%s", "main"))
	r = p.Orbit("groundhog", "verify", task)
	assert.Equal(t, 0, r.Code, r.String())
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
	r := p.Orbit("task", "plan", task, "--file", p.WriteFile("plan1.yaml", "checkpoints:\n  - id: one\n    spec: Add one.txt.\n    success_criteria:\n      - {kind: file_exists, path: one.txt}\n"))
	require.Equal(t, 0, r.Code, r.String())
	r = p.Orbit("groundhog", "run", task, "--activity", "example_cli_agent")
	require.Equal(t, 0, r.Code, r.String())
	assert.Contains(t, r.Stderr, "synthetic: the attempt ended without mcp__orbit__checkpoint_success or mcp__orbit__checkpoint_failure",
		"the report names the verbs as the agent knows them")
	assert.Equal(t, "Add one.txt\ninitial", testkit.Git(t, repo, "log", "--format=%s", "main"))
	reqs := srv.Scripted()
	require.Len(t, reqs, 5, "the second session ended its turn after its verb")
	assert.Contains(t, string(reqs[2].Raw), "The last attempt at this checkpoint failed (synthetic)")
	assert.Contains(t, string(reqs[2].Raw), "I wrote one.txt and stopped.", "the failure report quotes the last message")
}
