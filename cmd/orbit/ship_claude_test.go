package main_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

// claudeShipProject is a repository project whose engine runs the
// shipping pipelines' implementers on the real Claude Code CLI against
// srv: the project's groundhog_implement and agent_implement are the
// seeded ones on backend cli, executor claude_code.
func claudeShipProject(t *testing.T, srv *testkit.AnthropicServer) (p *testkit.Project, origin string) {
	t.Helper()
	bin := testkit.ClaudeCLI(t)
	p, origin = repoProject(t, map[string]string{"README.md": "# greeter\n"})
	p.Env = append(p.Env, testkit.ClaudeEnv(t, srv)...)
	executor := readCLIExample(t, "claude_code.yaml")
	p.WriteFile(".orbit/executors/claude_code.yaml", strings.Replace(executor, "\n  command: claude\n", "\n  command: "+bin+"\n", 1))
	p.WriteFile(".orbit/activities/groundhog_implement.yaml", `schemaVersion: 2
kind: Activity
metadata:
  name: groundhog_implement
spec:
  type: groundhog
  backend: cli
  executor: claude_code
  model: claude-sonnet-4-5
  instruction: You keep files short and run the checks yourself before you declare success.
  tools: [fs.read, fs.write, shell.exec]
  allowed_programs: [sh]
  wall_clock_timeout_seconds: 300
`)
	writeAgentImplement(p, "claude_code", "claude-sonnet-4-5", "mcp__orbit__task_summary")
	return p, origin
}

// writeAgentImplement writes the agent_implement activity of the summary
// tests: agent_loop on the CLI executor with model, told to record its
// execution summary with the tool summaryTool.
func writeAgentImplement(p *testkit.Project, executor, model, summaryTool string) {
	p.WriteFile(".orbit/activities/agent_implement.yaml", `schemaVersion: 2
kind: Activity
metadata:
  name: agent_implement
spec:
  type: agent_loop
  backend: cli
  executor: `+executor+`
  model: `+model+`
  instruction: Implement the task; record your execution summary with `+summaryTool+`.
  tools: [fs.read, fs.write]
  max_iterations: 10
  wall_clock_timeout_seconds: 300
`)
}

// TestShipATaskThroughGroundhogOverClaudeCode: a task with a checkpoint
// plan shipped in local mode, implemented by Groundhog over the real
// Claude Code CLI and the scripted Anthropic server: each checkpoint
// verified and squash-committed in the run's worktree (the second's first
// attempt refuted and rewound), merged into main and pushed, and groundhog
// verify passes on the task.
func TestShipATaskThroughGroundhogOverClaudeCode(t *testing.T) {
	t.Parallel()
	srv := testkit.NewAnthropicServer(t, exampleTurns(t, "script.json")...)
	p, origin := claudeShipProject(t, srv)
	r := p.Orbit("task", "add", "--title", "One and two", "--checkpoint-plan", p.WriteFile("plan.yaml", readCLIExample(t, "plan.yaml")),
		"--status", "backlog")
	require.Equal(t, 0, r.Code, r.String())

	r = p.Orbit("run", "ship", "T-1", "--mode", "local")
	require.Equal(t, 0, r.Code, r.String())
	assert.Contains(t, r.Stdout, "workflow_status: completed")
	assert.Len(t, srv.Scripted(), 9, "three Claude Code sessions, three turns each")
	assert.Equal(t, "Add two.txt saying two\nAdd one.txt\ninitial", testkit.Git(t, origin, "log", "--format=%s", "main"),
		"Groundhog's verified commits landed on origin's main, nothing else")
	assert.Equal(t, "two", testkit.Git(t, origin, "show", "main:two.txt"))
	assert.Equal(t, testkit.Git(t, origin, "rev-parse", "main"), testkit.Git(t, p.Root, "rev-parse", "main"), "merged locally")
	v := taskView(t, p, "T-1")
	assert.Equal(t, events.TaskReview, v.Status)
	assert.Contains(t, v.ExecutionSummary, "Add two.txt saying two")

	r = p.Orbit("groundhog", "verify", "T-1")
	assert.Equal(t, 0, r.Code, r.String())
	assert.Contains(t, r.Stdout, "2 commits, verified")
	r = p.Orbit("replay", "--verify")
	assert.Equal(t, 0, r.Code, r.String())
}

// TestShipATaskWhoseClaudeCodeAgentRecordsItsSummary: a task without a
// plan is implemented by agent_implement on Claude Code, which is given
// `orbit mcp` scoped by the step's task token: its call of
// mcp__orbit__task_summary records the execution summary, which the
// pipeline delivers.
func TestShipATaskWhoseClaudeCodeAgentRecordsItsSummary(t *testing.T) {
	t.Parallel()
	srv := testkit.NewAnthropicServer(t,
		testkit.Turn{Tools: []testkit.ToolUse{{ID: "toolu_write", Name: "Write", Input: map[string]any{"file_path": "farewell.txt", "content": "goodbye\n"}}}},
		testkit.Turn{Tools: []testkit.ToolUse{{ID: "toolu_summary", Name: "mcp__orbit__task_summary",
			Input: map[string]any{"summary": "Wrote farewell.txt, which says goodbye."}}}},
		testkit.Turn{Text: "Done."},
	)
	p, origin := claudeShipProject(t, srv)
	shipTheFarewell(t, p, origin)
	reqs := srv.Scripted()
	require.NotEmpty(t, reqs)
	assert.Contains(t, reqs[0].Tools, "mcp__orbit__task_summary", "the agent is given the task's MCP server")
	assert.NotContains(t, reqs[0].Tools, "mcp__orbit__checkpoint_success", "and not the Groundhog verbs")
}

// shipTheFarewell adds the task of the summary tests and ships it
// locally: it ends in review with the execution summary its agent recorded
// through orbit mcp, and the farewell its agent wrote is on origin's main.
func shipTheFarewell(t *testing.T, p *testkit.Project, origin string) {
	t.Helper()
	r := p.Orbit("task", "add", "--title", "Add a farewell", "--status", "backlog")
	require.Equal(t, 0, r.Code, r.String())

	r = p.Orbit("run", "ship", "T-1", "--mode", "local")
	require.Equal(t, 0, r.Code, r.String())
	v := taskView(t, p, "T-1")
	assert.Equal(t, events.TaskReview, v.Status)
	assert.Equal(t, "Wrote farewell.txt, which says goodbye.", v.ExecutionSummary, "recorded by the agent through orbit mcp")
	assert.Equal(t, "goodbye", testkit.Git(t, origin, "show", "main:farewell.txt"))
}

// TestShipATaskWhoseCodexAgentRecordsItsSummary: the same over the real
// Codex CLI and the scripted OpenAI server: agent_implement on codex is
// given `orbit mcp` scoped by the step's task token through -c overrides,
// and its call of task_summary in the mcp__orbit namespace records the
// execution summary, which the pipeline delivers.
func TestShipATaskWhoseCodexAgentRecordsItsSummary(t *testing.T) {
	t.Parallel()
	srv := testkit.NewOpenAIServer(t,
		testkit.Turn{Tools: []testkit.ToolUse{{ID: "call_write", Name: "exec_command", Input: map[string]any{"cmd": "echo goodbye > farewell.txt"}}}},
		testkit.Turn{Tools: []testkit.ToolUse{{Namespace: "mcp__orbit", Name: "task_summary",
			Input: map[string]any{"summary": "Wrote farewell.txt, which says goodbye."}}}},
		testkit.Turn{Text: "Done."},
	)
	p, origin := repoProject(t, map[string]string{"README.md": "# greeter\n"})
	p.Env = append(p.Env, testkit.CodexEnv(t)...)
	executor := readCLIExample(t, "codex.yaml")
	require.Contains(t, executor, "\n  command: codex\n")
	args := testkit.CodexProviderArgs(srv)
	quoted := make([]string, 0, len(args))
	for _, arg := range args {
		quoted = append(quoted, strconv.Quote(arg))
	}
	p.WriteFile(".orbit/executors/codex.yaml", strings.Replace(executor, "\n  command: codex\n",
		"\n  command: "+testkit.CodexCLI(t)+"\n  args: ["+strings.Join(quoted, ", ")+"]\n", 1))
	writeAgentImplement(p, "codex", "gpt-orbit-test", "mcp__orbit.task_summary")
	shipTheFarewell(t, p, origin)
	reqs := srv.Scripted()
	require.NotEmpty(t, reqs)
	assert.Contains(t, reqs[0].Tools, "mcp__orbit.task_summary", "the agent is given the task's MCP server")
	assert.NotContains(t, reqs[0].Tools, "mcp__orbit.checkpoint_success", "and not the Groundhog verbs")
}
