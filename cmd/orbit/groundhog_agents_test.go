package main_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
	"github.com/orbitrun/orbit/projector"
)

// The rig of the tests that run Groundhog over a real CLI agent (Claude
// Code, Codex) against a scripted model server.

// readCLIExample reads a file of examples/groundhog-cli, which make
// demo-groundhog-cli runs: the tests run the same plan, script, activity
// and executor.
func readCLIExample(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testkit.ModuleRoot(t), "examples", "groundhog-cli", name))
	require.NoError(t, err)
	return string(data)
}

// exampleTurns is a script of model turns of the example, in the file
// name.
func exampleTurns(t *testing.T, name string) []testkit.Turn {
	t.Helper()
	var script struct {
		Turns []testkit.Turn `json:"turns"`
	}
	require.NoError(t, json.Unmarshal([]byte(readCLIExample(t, name)), &script))
	return script.Turns
}

// exampleAgent is one CLI agent of the example, as a test runs it.
type exampleAgent struct {
	executor string   // the executor, in <executor>.yaml
	activity string   // the activity on it, in <activity>.yaml
	command  string   // the executor's command in the example
	bin      string   // the installed CLI that replaces it
	args     []string // arguments the test gives the CLI before the example's
	env      []string // the engine's environment for the agent (KEY=VALUE)
	title    string   // the task's title
}

// groundhogOverCLI is a project whose engine runs the agent a, with the
// example's executor and activity, and a task with the example's plan on
// a fresh repository.
func groundhogOverCLI(t *testing.T, a exampleAgent) (p *testkit.Project, repo, task string) {
	t.Helper()
	p = testkit.NewProject(t)
	p.Env = append(p.Env, testkit.GitEnv()...)
	p.Env = append(p.Env, a.env...)
	executor := readCLIExample(t, a.executor+".yaml")
	command := "\n  command: " + a.command + "\n"
	require.Contains(t, executor, command)
	ours := "\n  command: " + a.bin + "\n"
	if len(a.args) > 0 {
		quoted := make([]string, 0, len(a.args))
		for _, arg := range a.args {
			quoted = append(quoted, fmt.Sprintf("%q", arg))
		}
		ours += "  args: [" + strings.Join(quoted, ", ") + "]\n"
	}
	p.WriteFile(".orbit/executors/"+a.executor+".yaml", strings.Replace(executor, command, ours, 1))
	p.WriteFile(".orbit/activities/"+a.activity+".yaml", readCLIExample(t, a.activity+".yaml"))
	repo = testkit.NewGitRepo(t, map[string]string{"README.md": "# cli\n"})
	r := p.Orbit("task", "create", "--title", a.title, "--plan", p.WriteFile("plan.yaml", readCLIExample(t, "plan.yaml")), "--workspace", repo)
	require.Equal(t, 0, r.Code, r.String())
	return p, repo, strings.TrimSpace(r.Stdout)
}

// cliGroundhogProject is a project whose engine runs Claude Code against
// srv, with the example's activity example_cli_agent on its executor
// claude_code, and a task with the example's plan on a fresh repository.
func cliGroundhogProject(t *testing.T, srv *testkit.AnthropicServer) (p *testkit.Project, repo, task string) {
	t.Helper()
	return groundhogOverCLI(t, exampleAgent{executor: "claude_code", activity: "example_cli_agent", command: "claude",
		bin: testkit.ClaudeCLI(t), env: testkit.ClaudeEnv(t, srv), title: "CLI"})
}

// codexGroundhogProject is a project whose engine runs Codex against srv,
// with the example's activity example_codex_agent on its executor codex,
// and a task with the example's plan on a fresh repository.
func codexGroundhogProject(t *testing.T, srv *testkit.OpenAIServer) (p *testkit.Project, repo, task string) {
	t.Helper()
	return groundhogOverCLI(t, exampleAgent{executor: "codex", activity: "example_codex_agent", command: "codex",
		bin: testkit.CodexCLI(t), args: testkit.CodexProviderArgs(srv), env: testkit.CodexEnv(t), title: "Codex"})
}

// planTask replaces task's plan with plan.
func planTask(t *testing.T, p *testkit.Project, task, plan string) {
	t.Helper()
	r := p.Orbit("task", "plan", task, "--file", p.WriteFile("plan1.yaml", plan))
	require.Equal(t, 0, r.Code, r.String())
}

// runTheExamplePlan runs task, on the example's plan, with activity, and
// checks what the example's script leaves in repo: both checkpoints
// committed on main, and what the agent wrote at checkpoint two's first
// attempt rewound and kept on that attempt's scratch branch. It returns
// the run's id.
func runTheExamplePlan(t *testing.T, p *testkit.Project, repo, task, activity string) string {
	t.Helper()
	r := p.Orbit("groundhog", "run", task, "--activity", activity)
	require.Equal(t, 0, r.Code, r.String())
	assert.Equal(t, "Add two.txt saying two\nAdd one.txt\ninitial", testkit.Git(t, repo, "log", "--format=%s", "main"))
	assert.Equal(t, "two", testkit.Git(t, repo, "show", "main:two.txt"))
	assert.Equal(t, "main", testkit.Git(t, repo, "branch", "--show-current"))
	assert.Equal(t, "wrong-answer", testkit.Git(t, repo, "show", "groundhog/T-1/day-2:two.txt"),
		"what the agent wrote was rewound and kept on the attempt's scratch branch")
	return strings.TrimSpace(r.Stdout)
}

// checkVerified checks that groundhog verify finds the task's two commits
// verified.
func checkVerified(t *testing.T, p *testkit.Project, task string) {
	t.Helper()
	r := p.Orbit("groundhog", "verify", task)
	assert.Equal(t, 0, r.Code, r.String())
	assert.Contains(t, r.Stdout, "2 commits, verified")
}

// checkFirstRequest checks the first request the example's plan makes of
// the model: the model asked for, the example's system prompt, the
// protocol naming the success verb as the agent sees it, and the tools it
// is offered.
func checkFirstRequest(t *testing.T, first testkit.ModelRequest, model, success string, tools ...string) {
	t.Helper()
	assert.Equal(t, model, first.Model)
	assert.Contains(t, first.System, "You keep files short and run the checks yourself before you declare success.")
	assert.Contains(t, first.System, "call "+success, "the protocol names the verbs as the agent sees them")
	for _, tool := range tools {
		assert.Contains(t, first.Tools, tool)
	}
}

// runEventsJSON is what orbit run events --json prints of runID.
func runEventsJSON(t *testing.T, p *testkit.Project, runID string) string {
	t.Helper()
	r := p.Orbit("run", "events", runID, "--json")
	require.Equal(t, 0, r.Code, r.String())
	return r.Stdout
}

// scriptedServer is a scripted model server of either API.
type scriptedServer interface {
	Scripted() []testkit.ModelRequest
}

// checkTwoCheckpointAudit checks the audit of the example's plan run to
// its end: checkpoint one committed at its first attempt, checkpoint two
// rewound once and committed at its second, every attempt with turns on
// record and no denial. It returns the audit.
func checkTwoCheckpointAudit(t *testing.T, p *testkit.Project, task string) projector.GroundhogRun {
	t.Helper()
	audit := orbitJSON[projector.GroundhogRun](t, p, "groundhog", "show", task, "--audit", "--json")
	require.Len(t, audit.Checkpoints, 2)
	require.Len(t, audit.Checkpoints[0].Attempts, 1)
	require.Len(t, audit.Checkpoints[1].Attempts, 2)
	for cp, n := range []int{1, 2} {
		for at := range n {
			a := audit.Checkpoints[cp].Attempts[at]
			assert.NotEmpty(t, a.Turns, "checkpoint %d attempt %d", cp, at)
			assert.Empty(t, a.Denials, "checkpoint %d attempt %d", cp, at)
		}
	}
	assert.Equal(t, "rewound", audit.Checkpoints[1].Attempts[0].Outcome)
	assert.Equal(t, "committed", audit.Checkpoints[1].Attempts[1].Outcome)
	return audit
}

// checkKilledMidAttempt runs task, planned as one checkpoint, with
// activity on a fresh engine and kills the engine while the agent waits
// for its first answer of srv: the restarted engine rewinds the open
// attempt as interrupted and a fresh session finishes the checkpoint. agent
// names the CLI in what the test waits for.
func checkKilledMidAttempt(t *testing.T, p *testkit.Project, srv scriptedServer, repo, task, activity, agent string) {
	t.Helper()
	planTask(t, p, task, onePlan(""))
	p.StopEngine()
	engine := serve(t, p)
	r := p.Orbit("groundhog", "run", task, "--activity", activity, "--detach")
	require.Equal(t, 0, r.Code, r.String())
	runID := strings.TrimSpace(r.Stdout)
	waitFor(t, agent+" to ask the model", func() bool { return len(srv.Scripted()) == 1 })
	killEngine(t, engine)
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

// checkWithoutAVerb runs task, planned as one checkpoint, with activity:
// its first session ends without a terminal verb, a synthetic failure
// whose report names the verbs as the agent knows them (verbs) and quotes
// the session's last message to the second attempt, which commits.
func checkWithoutAVerb(t *testing.T, p *testkit.Project, srv scriptedServer, repo, task, activity, verbs string) {
	t.Helper()
	planTask(t, p, task, onePlan(""))
	r := p.Orbit("groundhog", "run", task, "--activity", activity)
	require.Equal(t, 0, r.Code, r.String())
	assert.Contains(t, r.Stderr, "synthetic: the attempt ended without "+verbs, "the report names the verbs as the agent knows them")
	assert.Equal(t, "Add one.txt\ninitial", testkit.Git(t, repo, "log", "--format=%s", "main"))
	reqs := srv.Scripted()
	require.Len(t, reqs, 5, "the second session ended its turn after its verb")
	assert.Contains(t, string(reqs[2].Raw), "The last attempt at this checkpoint failed (synthetic)")
	assert.Contains(t, string(reqs[2].Raw), "I wrote one.txt and stopped.", "the failure report quotes the last message")
}
