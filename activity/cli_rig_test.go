package activity_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/runrig"
	"github.com/orbitrun/orbit/internal/testkit"
)

// cliAgent is how the tests of a CLI adapter run its real agent: the
// executor the step names and what it holds.
type cliAgent struct {
	job      string // the job's name
	provider string // the step's provider ("": claude)
	executor string // the executor's name
	spec     assets.ExecutorSpec
	model    string
	// env is the environment that keeps the agent on loopback (KEY=VALUE);
	// in a real project a key is in the engine's environment, never in an
	// executor.
	env []string
}

// claudeAgent and codexAgent are the real Claude Code and Codex CLIs,
// talking to srv, in a job named for the agent.
func claudeAgent(t *testing.T, srv *testkit.AnthropicServer) *cliAgent {
	return &cliAgent{job: "claude_code_agent", provider: "claude", executor: "claude", model: claudeTestModel,
		spec: assets.ExecutorSpec{Command: testkit.ClaudeCLI(t), Output: assets.OutputClaudeCode}, env: testkit.ClaudeEnv(t, srv)}
}

func codexAgent(t *testing.T, srv *testkit.OpenAIServer) *cliAgent {
	return &cliAgent{job: "codex_agent", provider: "codex", executor: "codex", model: codexTestModel,
		spec: assets.ExecutorSpec{Command: testkit.CodexCLI(t), Output: assets.OutputCodex, Args: testkit.CodexProviderArgs(srv)},
		env:  testkit.CodexEnv(t)}
}

// cliAgentJob is a one-step agent_loop job on the agent's executor, on the
// cli backend. extra is more of the spec, in YAML at its indentation.
func cliAgentJob(t *testing.T, a cliAgent, extra string) *assets.Job {
	t.Helper()
	job := runrig.ParseJob(t, `
schemaVersion: 2
kind: Job
metadata: {name: `+a.job+`}
spec:
  steps:
    - id: agent
      default_input: {prompt: "Write the file.", ticket: 42}
      spec:
        type: agent_loop
        provider: claude
        model: `+a.model+`
        instruction: "You write files for ticket {{ input.ticket }}."
`+extra)
	// Parsed without executors, so as an http step first (Codex has no
	// HTTP transport): the executor is attached here.
	spec := job.Spec.Steps[0].Activity
	spec.Backend, spec.Executor = assets.BackendCLI, a.executor
	if a.provider != "" {
		spec.Provider = a.provider
	}
	es := a.spec
	es.Env = envMap(a.env)
	spec.ExecutorSpec = &es
	return job
}

// envMap is an executor's env of KEY=VALUE pairs.
func envMap(env []string) map[string]string {
	m := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return m
}

// cliEngine starts a log and an engine whose steps run in a fresh
// workspace, which it returns.
func cliEngine(t *testing.T) (*events.Log, string) {
	t.Helper()
	log := testkit.StartLog(t, events.Config{})
	dir := t.TempDir()
	runrig.StartEngine(t, log, dir, nil)
	return log, dir
}

// writeForAMinute is the spec of a step whose agent may write files, for
// a minute of wall clock.
const writeForAMinute = "        tools: [fs.write]\n        wall_clock_timeout_seconds: 60\n"

// scriptedServer is a scripted model server of either API.
type scriptedServer interface {
	Scripted() []testkit.ModelRequest
}

// wroteFile is what a CLI agent's step did when it wrote out.txt through
// one call of a tool and then answered "the file is written".
type wroteFile struct {
	tool, agentTool string // the call, by its Orbit and its agent's name
	provider, model string // the turns' provider and the model asked
	key             string // the API key in the agent's environment
}

// checkWroteFile checks the run of a step that did what w says: the file
// in the workspace dir, the step's output, the call and the two turns on
// record, no denial, the model, instruction and prompt on the wire, and
// no event that carries the key. It returns the run's events and the
// scripted requests, for what is particular to the agent.
func checkWroteFile(t *testing.T, log *events.Log, srv scriptedServer, dir, runID string, fin events.RunFinishedData, w wroteFile) ([]events.Event, []testkit.ModelRequest) {
	t.Helper()
	require.Equal(t, events.StateSuccess, fin.State, "%+v", fin.Error)
	got, err := os.ReadFile(filepath.Join(dir, "out.txt"))
	require.NoError(t, err)
	assert.Equal(t, "written\n", string(got))
	out := fin.Output.(map[string]any)
	assert.Equal(t, "the file is written", out["final_message"])
	assert.Equal(t, float64(2), out["turns"])
	assert.Equal(t, float64(1), out["tool_calls"])
	assert.Equal(t, w.model, out["model"])

	evs := runrig.History(t, log, runID)
	calls := runrig.DecodeAll[events.ToolCalledData](t, runrig.OfType(evs, events.ToolCalled))
	require.Len(t, calls, 1)
	assert.Equal(t, w.tool, calls[0].Name)
	assert.Equal(t, w.agentTool, calls[0].AgentTool)
	assert.Equal(t, 1, calls[0].Turn)
	assert.Empty(t, calls[0].Error)
	turns := runrig.DecodeAll[events.AgentTurnData](t, runrig.OfType(evs, events.AgentTurn))
	require.Len(t, turns, 2)
	assert.Equal(t, []string{w.agentTool}, turns[0].ToolUses)
	assert.Equal(t, w.provider, turns[0].Provider)
	assert.Equal(t, "the file is written", turns[1].Text)
	assert.Empty(t, runrig.OfType(evs, events.ToolDenied))

	reqs := srv.Scripted()
	require.Len(t, reqs, 2)
	assert.Equal(t, w.model, reqs[0].Model)
	assert.Contains(t, reqs[0].System, "You write files for ticket 42.")
	assert.Contains(t, string(reqs[0].Raw), "Write the file.", "the prompt is the user's message")

	for _, ev := range evs {
		assert.NotContains(t, string(ev.Data), w.key, "%s carries the API key", ev.Type)
	}
	return evs, reqs
}

// checkKilledAtTheWallClock runs job, whose agent (named agent) hangs on
// its first request to srv under a wall clock of 8 s: the step fails on
// time out soon after, and the agent's process is gone.
func checkKilledAtTheWallClock(t *testing.T, log *events.Log, srv scriptedServer, job *assets.Job, agent string) {
	t.Helper()
	began := time.Now()
	runID, fin := runrig.RunJob(t, log, job, nil)

	require.Equal(t, events.StateFailed, fin.State)
	assert.Equal(t, events.KindTimeout, fin.Error.Kind)
	assert.Less(t, time.Since(began), 30*time.Second)
	started := runrig.DecodeAll[events.CLIInvocationStartedData](t, runrig.OfType(runrig.History(t, log, runID), events.CLIInvocationStarted))
	require.Len(t, started, 1)
	assert.True(t, testkit.WaitGone(started[0].PID, 3*time.Second), "%s (pid %d) is gone", agent, started[0].PID)
	assert.Len(t, srv.Scripted(), 1, "the request hung")
}
