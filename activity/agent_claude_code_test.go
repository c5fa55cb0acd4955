package activity_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/runrig"
	"github.com/orbitrun/orbit/internal/testkit"
)

// These tests run the real Claude Code CLI (make agents) through the
// claude_code adapter, against the scripted Anthropic server.

const claudeTestModel = "claude-orbit-test"

// claudeCodeJob is a one-step agent_loop job on the claude_code executor,
// talking to srv. extra is more of the spec, in YAML at its indentation.
func claudeCodeJob(t *testing.T, srv *testkit.AnthropicServer, extra string) *assets.Job {
	t.Helper()
	return cliAgentJob(t, *claudeAgent(t, srv), extra)
}

func writeFileTurns(path string) []testkit.Turn {
	return []testkit.Turn{
		{Tools: []testkit.ToolUse{{ID: "toolu_write", Name: "Write", Input: map[string]any{"file_path": path, "content": "written\n"}}}},
		{Text: "the file is written"},
	}
}

func TestClaudeCodeAllowedWriteLandsAndIsRecorded(t *testing.T) {
	t.Parallel()
	log, dir := cliEngine(t)
	srv := testkit.NewAnthropicServer(t, writeFileTurns("out.txt")...)
	runID, fin := runrig.RunJob(t, log, claudeCodeJob(t, srv, writeForAMinute), nil)

	evs, reqs := checkWroteFile(t, log, srv, dir, runID, fin, wroteFile{tool: "fs.write", agentTool: "Write",
		provider: "claude_code", model: claudeTestModel, key: "sk-ant-orbit-test"})
	assert.Greater(t, fin.Output.(map[string]any)["cost_usd"], 0.0, "Claude Code's own account of the cost")
	calls := runrig.DecodeAll[events.ToolCalledData](t, runrig.OfType(evs, events.ToolCalled))
	assert.Equal(t, "toolu_write", calls[0].ToolUseID)

	// Only the granted tool reached the wire.
	assert.Contains(t, reqs[0].Tools, "Write")
	for _, tool := range []string{"Bash", "Edit", "Read", "WebFetch", "Agent"} {
		assert.NotContains(t, reqs[0].Tools, tool, "only the allowlist is offered")
	}
}

func TestClaudeCodeDenialFailsTheStep(t *testing.T) {
	t.Parallel()
	log, _ := cliEngine(t)
	for name, tc := range map[string]struct {
		spec        string
		turns       []testkit.Turn
		orbit, tool string
	}{
		// Write is not offered at all: the model calls it anyway.
		"a tool outside the allowlist": {"        tools: [fs.read]\n",
			[]testkit.Turn{writeFileTurns("out.txt")[0], {Hang: true}}, "fs.write", "Write"},
		// Write is allowed in the workspace only.
		"a path outside the workspace": {"        tools: [fs.write]\n",
			[]testkit.Turn{writeFileTurns("/tmp/orbit-claude-code-outside.txt")[0], {Hang: true}}, "fs.write", "Write"},
		"a path under .orbit/": {"        tools: [fs.write]\n",
			[]testkit.Turn{writeFileTurns(".orbit/config.yaml")[0], {Hang: true}}, "fs.write", "Write"},
		// Bash is offered for git only: Claude Code's permissions refuse touch.
		"a program outside the allowlist": {"        tools: [shell.exec]\n        allowed_programs: [git]\n",
			[]testkit.Turn{{Tools: []testkit.ToolUse{{ID: "toolu_write", Name: "Bash", Input: map[string]any{"command": "touch out.txt"}}}}, {Hang: true}},
			"shell.exec", "Bash"},
	} {
		t.Run(name, func(t *testing.T) {
			// The turn after the denial hangs: only a denial that stops the
			// agent ends the step before the wall clock.
			srv := testkit.NewAnthropicServer(t, tc.turns...)
			began := time.Now()
			runID, fin := runrig.RunJob(t, log, claudeCodeJob(t, srv, tc.spec+"        wall_clock_timeout_seconds: 60\n"), nil)

			require.Equal(t, events.StateFailed, fin.State)
			assert.Less(t, time.Since(began), 20*time.Second)
			assert.Equal(t, events.KindToolDenied, fin.Error.Kind)
			assert.False(t, fin.Error.Retryable)
			assert.Contains(t, fin.Error.Message, tc.orbit+" denied")
			denied := runrig.DecodeAll[events.ToolDeniedData](t, runrig.OfType(runrig.History(t, log, runID), events.ToolDenied))
			require.Len(t, denied, 1)
			assert.Equal(t, tc.orbit, denied[0].Name)
			assert.Equal(t, tc.tool, denied[0].AgentTool)
			assert.Equal(t, "toolu_write", denied[0].ToolUseID)
			assert.Equal(t, "terminate", denied[0].OnDenial)
			assert.Empty(t, runrig.OfType(runrig.History(t, log, runID), events.ToolCalled))
		})
	}
}

func TestClaudeCodeDenialUnderContinueIsRecorded(t *testing.T) {
	t.Parallel()
	log, dir := cliEngine(t)
	srv := testkit.NewAnthropicServer(t, writeFileTurns("out.txt")...)
	runID, fin := runrig.RunJob(t, log, claudeCodeJob(t, srv, "        tools: [fs.read]\n        on_denial: continue\n        wall_clock_timeout_seconds: 60\n"), nil)

	require.Equal(t, events.StateSuccess, fin.State, "%+v", fin.Error)
	assert.NoFileExists(t, filepath.Join(dir, "out.txt"))
	denied := runrig.DecodeAll[events.ToolDeniedData](t, runrig.OfType(runrig.History(t, log, runID), events.ToolDenied))
	require.Len(t, denied, 1)
	assert.Equal(t, "continue", denied[0].OnDenial)
	assert.Len(t, srv.Scripted(), 2, "the model heard of the denial and answered")
}

func TestClaudeCodeErrorResultFailsTheStep(t *testing.T) {
	t.Parallel()
	log, _ := cliEngine(t)
	for name, tc := range map[string]struct {
		spec  string
		turns []testkit.Turn
		kind  string
		msg   string
	}{
		"an API error": {"        tools: [fs.write]\n", []testkit.Turn{{Fail: &testkit.APIFailure{Status: 500, Message: "scripted outage"}}},
			events.KindActivity, "scripted outage"},
		"the turn limit": {"        tools: [fs.write]\n        max_iterations: 1\n", writeFileTurns("out.txt"),
			events.KindActivity, "turn limit reached"},
	} {
		t.Run(name, func(t *testing.T) {
			srv := testkit.NewAnthropicServer(t, tc.turns...)
			_, fin := runrig.RunJob(t, log, claudeCodeJob(t, srv, tc.spec+"        wall_clock_timeout_seconds: 60\n"), nil)
			require.Equal(t, events.StateFailed, fin.State)
			assert.Equal(t, tc.kind, fin.Error.Kind)
			assert.Contains(t, fin.Error.Message, tc.msg)
		})
	}
}

func TestClaudeCodeHungServerIsKilledAtTheWallClock(t *testing.T) {
	t.Parallel()
	log, _ := cliEngine(t)
	srv := testkit.NewAnthropicServer(t, testkit.Turn{Hang: true})
	// Long enough for Claude Code to start and ask on a loaded machine.
	checkKilledAtTheWallClock(t, log, srv, claudeCodeJob(t, srv, "        tools: [fs.write]\n        wall_clock_timeout_seconds: 8\n"), "claude")
}

func TestCLIBackendMissingCommandIsNotRetried(t *testing.T) {
	t.Parallel()
	log, _ := cliEngine(t)
	job := runrig.CLIJob(t, "orbit-no-such-agent", assets.OutputClaudeCode, 30)
	job.Spec.Steps[0].Activity.Tools = []string{"fs.read"}
	_, fin := runrig.RunJob(t, log, job, nil)

	require.Equal(t, events.StateFailed, fin.State)
	assert.False(t, fin.Error.Retryable)
	assert.Contains(t, fin.Error.Message, `executor "fake": exec: "orbit-no-such-agent": executable file not found in $PATH (PATH=`)
}

func TestClaudeCodeWithoutToolsOffersNone(t *testing.T) {
	t.Parallel()
	log, _ := cliEngine(t)
	srv := testkit.NewAnthropicServer(t, testkit.Turn{Text: "nothing to do"})
	// A model request with no tools is a side request to the server; the
	// agent's one turn is the only request.
	_, fin := runrig.RunJob(t, log, claudeCodeJob(t, srv, "        wall_clock_timeout_seconds: 60\n"), nil)

	require.Equal(t, events.StateSuccess, fin.State, "%+v", fin.Error)
	assert.Equal(t, "ok", fin.Output.(map[string]any)["final_message"], "answered as a side request: no tools were offered")
	reqs := srv.Requests()
	require.Len(t, reqs, 1)
	assert.Empty(t, reqs[0].Tools)
	assert.Equal(t, claudeTestModel, reqs[0].Model)
}
