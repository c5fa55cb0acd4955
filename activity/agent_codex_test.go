package activity_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/runrig"
	"github.com/orbitrun/orbit/internal/testkit"
)

// These tests run the real Codex CLI (make agents) through the codex
// adapter, against the scripted OpenAI Responses server.

const codexTestModel = "gpt-orbit-test"

// codexJob is a one-step agent_loop job on the codex executor, talking to
// srv. extra is more of the spec, in YAML at its indentation.
func codexJob(t *testing.T, srv *testkit.OpenAIServer, extra string) *assets.Job {
	t.Helper()
	return cliAgentJob(t, *codexAgent(t, srv), extra)
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
	runID, fin := runrig.RunJob(t, log, codexJob(t, srv, writeForAMinute), nil)

	// The workspace is no git repository: Codex ran all the same.
	evs, reqs := checkWroteFile(t, log, srv, dir, runID, fin, wroteFile{tool: "shell.exec", agentTool: "command_execution",
		provider: "codex", model: codexTestModel, key: "sk-orbit-test"})
	turns := runrig.DecodeAll[events.AgentTurnData](t, runrig.OfType(evs, events.AgentTurn))
	assert.Zero(t, turns[1].Usage, "the session's usage is on the invocation, not on a turn, so metrics count it once")
	finished := runrig.DecodeAll[events.CLIInvocationFinishedData](t, runrig.OfType(evs, events.CLIInvocationFinished))
	require.Len(t, finished, 1)
	assert.Equal(t, events.TokenUsage{InputTokens: 200, OutputTokens: 40}, finished[0].Usage, "turn.completed's usage")
	assert.Equal(t, codexTestModel, finished[0].Model)
	started := runrig.DecodeAll[events.CLIInvocationStartedData](t, runrig.OfType(evs, events.CLIInvocationStarted))
	require.Len(t, started, 1)
	assert.Contains(t, strings.Join(started[0].Args, " "), "--sandbox workspace-write -C "+dir)

	// Codex's shell reached the wire, and nothing that no Orbit tool grants.
	assert.Contains(t, reqs[0].Tools, "exec_command")
	for _, tool := range []string{"web_search", "multi_agent_v1", "create_goal", "image_generation"} {
		assert.NotContains(t, reqs[0].Tools, tool, "what no Orbit tool grants is not offered")
	}
}

// TestCodexReadOnlyAllowlistKeepsTheWorkspace: with no tool that writes,
// Codex's sandbox is read-only and the command's write fails.
func TestCodexReadOnlyAllowlistKeepsTheWorkspace(t *testing.T) {
	t.Parallel()
	log, dir := cliEngine(t)
	srv := testkit.NewOpenAIServer(t, codexCommandTurns("echo written > out.txt")...)
	runID, fin := runrig.RunJob(t, log, codexJob(t, srv, "        tools: [fs.read]\n        wall_clock_timeout_seconds: 60\n"), nil)

	require.Equal(t, events.StateSuccess, fin.State, "%+v", fin.Error)
	assert.NoFileExists(t, filepath.Join(dir, "out.txt"))
	calls := runrig.DecodeAll[events.ToolCalledData](t, runrig.OfType(runrig.History(t, log, runID), events.ToolCalled))
	require.Len(t, calls, 1)
	assert.Contains(t, calls[0].Error, "Read-only file system")
}

func TestCodexFailedTurnFailsTheStep(t *testing.T) {
	t.Parallel()
	log, _ := cliEngine(t)
	srv := testkit.NewOpenAIServer(t, testkit.Turn{Fail: &testkit.APIFailure{Status: 500, Message: "scripted outage"}})
	_, fin := runrig.RunJob(t, log, codexJob(t, srv, writeForAMinute), nil)

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
	runID, fin := runrig.RunJob(t, log, job, nil)

	require.Equal(t, events.StateSuccess, fin.State, "%+v", fin.Error)
	assert.Equal(t, "recovered", fin.Output.(map[string]any)["final_message"])
	lines := runrig.DecodeAll[events.CLIOutputData](t, runrig.OfType(runrig.History(t, log, runID), events.CLIOutput))
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
	checkKilledAtTheWallClock(t, log, srv, codexJob(t, srv, "        tools: [fs.write]\n        wall_clock_timeout_seconds: 8\n"), "codex")
}

// TestCodexTurnLimitStopsTheAgent: Codex has no turn limit of its own; the
// adapter stops it when it calls a tool past max_iterations.
func TestCodexTurnLimitStopsTheAgent(t *testing.T) {
	t.Parallel()
	log, dir := cliEngine(t)
	first := codexCommandTurns("echo one > one.txt")[0]
	second := codexCommandTurns("sleep 5 && echo two > two.txt")[0]
	// A model names each call anew; the hook refuses a second request for
	// an id it has decided.
	second.Tools[0].ID = "call_write_two"
	srv := testkit.NewOpenAIServer(t, first, second, testkit.Turn{Text: "done"})
	runID, fin := runrig.RunJob(t, log, codexJob(t, srv, "        tools: [fs.write]\n        max_iterations: 1\n        wall_clock_timeout_seconds: 60\n"), nil)

	require.Equal(t, events.StateFailed, fin.State)
	assert.Equal(t, events.KindActivity, fin.Error.Kind)
	assert.Contains(t, fin.Error.Message, "Codex was still calling tools after 1 turns")
	assert.FileExists(t, filepath.Join(dir, "one.txt"))
	assert.NoFileExists(t, filepath.Join(dir, "two.txt"), "the second command was stopped")
	turns := runrig.DecodeAll[events.AgentTurnData](t, runrig.OfType(runrig.History(t, log, runID), events.AgentTurn))
	assert.Len(t, turns, 2)
}

// TestCodexInstantCommandIsRecorded: a command that ends at once (no sleep
// before it) is on record as its tool.called, run after run, whether or
// not Codex printed its item.started.
func TestCodexInstantCommandIsRecorded(t *testing.T) {
	t.Parallel()
	log, _ := cliEngine(t)
	for i := range 3 {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			srv := testkit.NewOpenAIServer(t,
				testkit.Turn{Tools: []testkit.ToolUse{{ID: "call_write", Name: "exec_command", Input: map[string]any{"cmd": "echo written > out.txt"}}}},
				testkit.Turn{Text: "the file is written"})
			runID, fin := runrig.RunJob(t, log, codexJob(t, srv, writeForAMinute), nil)
			require.Equal(t, events.StateSuccess, fin.State, "%+v", fin.Error)
			calls := runrig.DecodeAll[events.ToolCalledData](t, runrig.OfType(runrig.History(t, log, runID), events.ToolCalled))
			require.Len(t, calls, 1, "the instant command is on record")
			assert.Equal(t, "shell.exec", calls[0].Name)
			assert.Empty(t, calls[0].Error)
		})
	}
}

// TestCodexResponseEnvelopeIsItsOutputSchema: a step that requires a
// response envelope runs Codex with an output schema (--output-schema)
// that OpenAI's strict mode takes, which reaches the wire as the
// response's text format; the final message, given in it, is read back as
// the object it stands for, nested objects and arrays included.
func TestCodexResponseEnvelopeIsItsOutputSchema(t *testing.T) {
	t.Parallel()
	log, _ := cliEngine(t)
	srv := testkit.NewOpenAIServer(t, testkit.Turn{Text: `{"entries": [
		{"key": "verdict", "value": "ok"}, {"key": "count", "value": 2}, {"key": "files", "value": ["a.go", null]},
		{"key": "detail", "value": {"entries": [{"key": "clean", "value": true}]}}]}`})
	runID, fin := runrig.RunJob(t, log, codexJob(t, srv, writeForAMinute+"        require_response_envelope: true\n"), nil)

	require.Equal(t, events.StateSuccess, fin.State, "%+v", fin.Error)
	out := fin.Output.(map[string]any)
	assert.Equal(t, map[string]any{"verdict": "ok", "count": float64(2), "files": []any{"a.go", nil},
		"detail": map[string]any{"clean": true}}, out["response"])

	var body struct {
		Text struct {
			Format struct {
				Type   string         `json:"type"`
				Strict bool           `json:"strict"`
				Schema map[string]any `json:"schema"`
			} `json:"format"`
		} `json:"text"`
	}
	require.NoError(t, json.Unmarshal(srv.Scripted()[0].Raw, &body))
	assert.Equal(t, "json_schema", body.Text.Format.Type)
	assert.True(t, body.Text.Format.Strict, "Codex asks in strict mode")
	assert.Equal(t, false, body.Text.Format.Schema["additionalProperties"], "as strict mode requires of every object")
	assert.Equal(t, []any{"entries"}, body.Text.Format.Schema["required"])
	started := runrig.DecodeAll[events.CLIInvocationStartedData](t, runrig.OfType(runrig.History(t, log, runID), events.CLIInvocationStarted))
	require.Len(t, started, 1)
	assert.Contains(t, started[0].Args, "--output-schema")
}

// TestCodexAnswerOutsideItsOutputSchemaFailsTheStep: a final message that
// is a JSON object but not one given as entries is no answer: the step
// fails rather than take {"verdict": …} or the entries list for it.
func TestCodexAnswerOutsideItsOutputSchemaFailsTheStep(t *testing.T) {
	t.Parallel()
	log, _ := cliEngine(t)
	srv := testkit.NewOpenAIServer(t, testkit.Turn{Text: `{"verdict": "ok"}`})
	_, fin := runrig.RunJob(t, log, codexJob(t, srv, writeForAMinute+"        require_response_envelope: true\n"), nil)

	require.Equal(t, events.StateFailed, fin.State)
	assert.Contains(t, fin.Error.Message, "not an answer in its output schema")
}
