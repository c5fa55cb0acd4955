package executor_test

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
	"github.com/orbitrun/orbit/internal/testkit"
)

// These tests run the real Codex CLI (make agents) through the codex
// adapter, against the scripted OpenAI Responses server.

const codexTestModel = "gpt-orbit-test"

// codexJob is a one-step agent_loop job on the codex executor, talking to
// srv. extra is more of the spec, in YAML at its indentation.
func codexJob(t *testing.T, srv *testkit.OpenAIServer, extra string) *assets.Job {
	t.Helper()
	return cliAgentJob(t, cliAgent{job: "codex_agent", provider: "codex", executor: "codex", model: codexTestModel,
		spec: assets.ExecutorSpec{Command: testkit.CodexCLI(t), Output: assets.OutputCodex, Args: testkit.CodexProviderArgs(srv)},
		env:  testkit.CodexEnv(t)}, extra)
}

// codexCommandTurns run a command through Codex's shell, then answer. The
// command sleeps: Codex 0.169 leaves out the items of a command that ends
// at once in about half the runs (testdata/cli/README.md).
func codexCommandTurns(cmd string) []testkit.Turn {
	return []testkit.Turn{
		{Tools: []testkit.ToolUse{{ID: "call_write", Name: "exec_command", Input: map[string]any{"cmd": "sleep 0.5 && " + cmd}}}},
		{Text: "the file is written"},
	}
}

func TestCodexAllowedWriteLandsAndIsRecorded(t *testing.T) {
	t.Parallel()
	log, dir := cliEngine(t)
	srv := testkit.NewOpenAIServer(t, codexCommandTurns("echo written > out.txt")...)
	runID, fin := runJob(t, log, codexJob(t, srv, "        tools: [fs.write]\n        wall_clock_timeout_seconds: 60\n"), nil)

	require.Equal(t, events.StateSuccess, fin.State, "%+v", fin.Error)
	got, err := os.ReadFile(filepath.Join(dir, "out.txt"))
	require.NoError(t, err, "the workspace is no git repository: Codex ran all the same")
	assert.Equal(t, "written\n", string(got))
	out := fin.Output.(map[string]any)
	assert.Equal(t, "the file is written", out["final_message"])
	assert.Equal(t, float64(2), out["turns"])
	assert.Equal(t, float64(1), out["tool_calls"])
	assert.Equal(t, codexTestModel, out["model"])

	evs := history(t, log, runID)
	calls := decodeAll[events.ToolCalledData](t, ofType(evs, events.ToolCalled))
	require.Len(t, calls, 1)
	assert.Equal(t, "shell.exec", calls[0].Name)
	assert.Equal(t, "command_execution", calls[0].AgentTool)
	assert.Equal(t, 1, calls[0].Turn)
	assert.Empty(t, calls[0].Error)
	turns := decodeAll[events.AgentTurnData](t, ofType(evs, events.AgentTurn))
	require.Len(t, turns, 2)
	assert.Equal(t, []string{"command_execution"}, turns[0].ToolUses)
	assert.Equal(t, "codex", turns[0].Provider)
	assert.Equal(t, "the file is written", turns[1].Text)
	assert.Zero(t, turns[1].Usage, "the session's usage is on the invocation, not on a turn, so metrics count it once")
	finished := decodeAll[events.CLIInvocationFinishedData](t, ofType(evs, events.CLIInvocationFinished))
	require.Len(t, finished, 1)
	assert.Equal(t, events.TokenUsage{InputTokens: 200, OutputTokens: 40}, finished[0].Usage, "turn.completed's usage")
	assert.Equal(t, codexTestModel, finished[0].Model)
	assert.Empty(t, ofType(evs, events.ToolDenied))
	started := decodeAll[events.CLIInvocationStartedData](t, ofType(evs, events.CLIInvocationStarted))
	require.Len(t, started, 1)
	assert.Contains(t, strings.Join(started[0].Args, " "), "--sandbox workspace-write -C "+dir)

	// The model, the instruction and the prompt reached the wire.
	reqs := srv.Scripted()
	require.Len(t, reqs, 2)
	assert.Equal(t, codexTestModel, reqs[0].Model)
	assert.Contains(t, reqs[0].System, "You write files for ticket 42.")
	assert.Contains(t, string(reqs[0].Raw), "Write the file.", "the prompt is the user's message")
	assert.Contains(t, reqs[0].Tools, "exec_command")
	for _, tool := range []string{"web_search", "multi_agent_v1", "create_goal", "image_generation"} {
		assert.NotContains(t, reqs[0].Tools, tool, "what no Orbit tool grants is not offered")
	}

	for _, ev := range evs {
		assert.NotContains(t, string(ev.Data), "sk-orbit-test", "%s carries the API key", ev.Type)
	}
}

// TestCodexReadOnlyAllowlistKeepsTheWorkspace: with no tool that writes,
// Codex's sandbox is read-only and the command's write fails.
func TestCodexReadOnlyAllowlistKeepsTheWorkspace(t *testing.T) {
	t.Parallel()
	log, dir := cliEngine(t)
	srv := testkit.NewOpenAIServer(t, codexCommandTurns("echo written > out.txt")...)
	runID, fin := runJob(t, log, codexJob(t, srv, "        tools: [fs.read]\n        wall_clock_timeout_seconds: 60\n"), nil)

	require.Equal(t, events.StateSuccess, fin.State, "%+v", fin.Error)
	assert.NoFileExists(t, filepath.Join(dir, "out.txt"))
	calls := decodeAll[events.ToolCalledData](t, ofType(history(t, log, runID), events.ToolCalled))
	require.Len(t, calls, 1)
	assert.Contains(t, calls[0].Error, "Read-only file system")
}

func TestCodexFailedTurnFailsTheStep(t *testing.T) {
	t.Parallel()
	log, _ := cliEngine(t)
	srv := testkit.NewOpenAIServer(t, testkit.Turn{Fail: &testkit.APIFailure{Status: 500, Message: "scripted outage"}})
	_, fin := runJob(t, log, codexJob(t, srv, "        tools: [fs.write]\n        wall_clock_timeout_seconds: 60\n"), nil)

	require.Equal(t, events.StateFailed, fin.State)
	assert.Equal(t, events.KindActivity, fin.Error.Kind)
	assert.Contains(t, fin.Error.Message, "Codex's turn failed: ")
	assert.NotContains(t, fin.Error.Message, "exited with code", "Codex's own words, not its exit code")
}

// TestCodexRecoveredReconnectIsNotAFailure: a stream cut short that Codex
// retries and completes is on record (its error line) but the step
// succeeds.
func TestCodexRecoveredReconnectIsNotAFailure(t *testing.T) {
	t.Parallel()
	log, _ := cliEngine(t)
	srv := testkit.NewOpenAIServer(t, testkit.Turn{Cut: true}, testkit.Turn{Text: "recovered"})
	job := codexJob(t, srv, "        wall_clock_timeout_seconds: 60\n")
	spec := job.Spec.Steps[0].Activity.ExecutorSpec
	spec.Args = append(spec.Args, "-c", "model_providers.orbit-test.request_max_retries=1", "-c", "model_providers.orbit-test.stream_max_retries=1")
	runID, fin := runJob(t, log, job, nil)

	require.Equal(t, events.StateSuccess, fin.State, "%+v", fin.Error)
	assert.Equal(t, "recovered", fin.Output.(map[string]any)["final_message"])
	lines := decodeAll[events.CLIOutputData](t, ofType(history(t, log, runID), events.CLIOutput))
	reconnect := false
	for _, l := range lines {
		reconnect = reconnect || strings.Contains(l.Text, "Reconnecting")
	}
	assert.True(t, reconnect, "the reconnect is on record")
}

func TestCodexHungServerIsKilledAtTheWallClock(t *testing.T) {
	t.Parallel()
	log, _ := cliEngine(t)
	srv := testkit.NewOpenAIServer(t, testkit.Turn{Hang: true})
	began := time.Now()
	runID, fin := runJob(t, log, codexJob(t, srv, "        tools: [fs.write]\n        wall_clock_timeout_seconds: 8\n"), nil)

	require.Equal(t, events.StateFailed, fin.State)
	assert.Equal(t, events.KindTimeout, fin.Error.Kind)
	assert.Less(t, time.Since(began), 30*time.Second)
	started := decodeAll[events.CLIInvocationStartedData](t, ofType(history(t, log, runID), events.CLIInvocationStarted))
	require.Len(t, started, 1)
	assert.True(t, testkit.WaitGone(started[0].PID, 3*time.Second), "codex (pid %d) is gone", started[0].PID)
	assert.Len(t, srv.Scripted(), 1, "the request hung")
}

// TestCodexTurnLimitStopsTheAgent: Codex has no turn limit of its own; the
// adapter stops it when it calls a tool past max_iterations.
func TestCodexTurnLimitStopsTheAgent(t *testing.T) {
	t.Parallel()
	log, dir := cliEngine(t)
	first := codexCommandTurns("echo one > one.txt")[0]
	second := codexCommandTurns("sleep 5 && echo two > two.txt")[0]
	srv := testkit.NewOpenAIServer(t, first, second, testkit.Turn{Text: "done"})
	runID, fin := runJob(t, log, codexJob(t, srv, "        tools: [fs.write]\n        max_iterations: 1\n        wall_clock_timeout_seconds: 60\n"), nil)

	require.Equal(t, events.StateFailed, fin.State)
	assert.Equal(t, events.KindActivity, fin.Error.Kind)
	assert.Contains(t, fin.Error.Message, "Codex was still calling tools after 1 turns")
	assert.FileExists(t, filepath.Join(dir, "one.txt"))
	assert.NoFileExists(t, filepath.Join(dir, "two.txt"), "the second command was stopped")
	turns := decodeAll[events.AgentTurnData](t, ofType(history(t, log, runID), events.AgentTurn))
	assert.Len(t, turns, 2)
}
