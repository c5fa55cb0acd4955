package activity_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/runrig"
	"github.com/orbitrun/orbit/internal/testkit"
)

// codexPatchTurns have Codex's shell apply a patch that adds path, then
// answer. Codex applies such a command as a patch, after its PreToolUse
// hook has been asked about it as a shell command.
func codexPatchTurns(path string) []testkit.Turn {
	patch := "apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: " + path + "\n+package main\n*** End Patch\nEOF\n"
	return []testkit.Turn{
		{Tools: []testkit.ToolUse{{ID: "call_patch", Name: "exec_command", Input: map[string]any{"cmd": patch}}}},
		{Text: "the file is written"},
	}
}

// TestCodexHookDeniesAPatchBeforeItRuns: Codex's sandbox lets a command
// write anywhere in the workspace; the step's profile, docs_writer, does
// not allow src/. Orbit's PreToolUse hook refuses the command before it
// runs: the file is never written, and the denial, which Codex prints no
// item for, is on record from the hook's side with its reason. Under
// on_denial terminate Codex is stopped before the hook answers, so the
// model is never asked again.
func TestCodexHookDeniesAPatchBeforeItRuns(t *testing.T) {
	t.Parallel()
	srv := testkit.NewOpenAIServer(t, codexPatchTurns("src/main.go")...)
	log, dir, runID, fin := runAsDocsWriter(t, codexJob(t, srv, writeForAMinute))

	evs, denied := checkDeniedBeforeItRan(t, log, srv, dir, runID, fin,
		events.ToolDeniedData{Name: "fs.write", AgentTool: "file_change", ToolUseID: "call_patch", Reason: "src/main.go: " + docsWriterDenial})
	assert.Equal(t, 1, denied.Turn)
	turns := runrig.DecodeAll[events.AgentTurnData](t, runrig.OfType(evs, events.AgentTurn))
	require.NotEmpty(t, turns)
	assert.Equal(t, []string{"file_change"}, turns[0].ToolUses, "the response that asked for the call is its turn")
}

// TestCodexHookDenialUnderContinueTellsTheModel: under on_denial continue
// the model hears the hook's reason and answers; the step succeeds
// without the write.
func TestCodexHookDenialUnderContinueTellsTheModel(t *testing.T) {
	t.Parallel()
	srv := testkit.NewOpenAIServer(t, codexPatchTurns("src/main.go")...)
	log, dir, runID, fin := runAsDocsWriter(t, codexJob(t, srv, writeForAMinute+"        on_denial: continue\n"))
	checkDenialTold(t, log, srv, dir, runID, fin, "src/main.go: "+docsWriterDenial)
}

// TestCodexHookLetsAPatchTheProfileAllows: the same patch of a file the
// profile lets the agent write runs, and is on record as Codex shows it.
func TestCodexHookLetsAPatchTheProfileAllows(t *testing.T) {
	t.Parallel()
	srv := testkit.NewOpenAIServer(t, codexPatchTurns("docs/notes.md")...)
	log, dir, runID, fin := runAsDocsWriter(t, codexJob(t, srv, writeForAMinute))

	require.Equal(t, events.StateSuccess, fin.State, "%+v", fin.Error)
	assert.FileExists(t, filepath.Join(dir, "docs", "notes.md"))
	assert.Empty(t, runrig.OfType(runrig.History(t, log, runID), events.ToolDenied))
}

// TestCodexStartsNoMCPServerOfTheUsers: an MCP server in the user's Codex
// configuration is turned off for the invocation (-c
// mcp_servers.<name>.enabled=false): it is not started and its tools are
// not offered.
func TestCodexStartsNoMCPServerOfTheUsers(t *testing.T) {
	t.Parallel()
	log, _ := cliEngine(t)
	srv := testkit.NewOpenAIServer(t, testkit.Turn{Text: "nothing to do"})
	env := testkit.CodexEnv(t)
	var home string
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "CODEX_HOME="); ok {
			home = v
		}
	}
	started := filepath.Join(t.TempDir(), "started")
	require.NoError(t, os.WriteFile(filepath.Join(home, "config.toml"),
		[]byte("[mcp_servers.users]\ncommand = \"sh\"\nargs = [\"-c\", \"touch "+started+"; sleep 30\"]\n"), 0o644))
	job := codexJob(t, srv, writeForAMinute)
	job.Spec.Steps[0].Activity.ExecutorSpec.Env = envMap(env)
	runID, fin := runrig.RunJob(t, log, job, nil)

	require.Equal(t, events.StateSuccess, fin.State, "%+v", fin.Error)
	assert.NoFileExists(t, started, "the user's MCP server was not started")
	for _, r := range srv.Requests() {
		for _, tool := range r.Tools {
			assert.NotContains(t, tool, "users", "its tools are not offered")
		}
	}
	inv := runrig.DecodeAll[events.CLIInvocationStartedData](t, runrig.OfType(runrig.History(t, log, runID), events.CLIInvocationStarted))
	require.Len(t, inv, 1)
	assert.Contains(t, inv[0].Args, "mcp_servers.users.enabled=false")
}
