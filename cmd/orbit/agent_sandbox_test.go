package main_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/engine"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/sandbox"
	"github.com/orbitrun/orbit/internal/testkit"
)

// credsProbe is a shell command an agent runs: it tries every file of the
// engine's creds directory (by its absolute path under the engine's root)
// and the engine's views, writing what it read and each exit status to
// out, then does the checkpoint's work.
func credsProbe(root, out string) string {
	creds := engine.CredsDir(root)
	var b strings.Builder
	for _, f := range []string{"engine.nk", "client.nk", "reader.nk", events.LogKeyFile, "agent.nk"} {
		fmt.Fprintf(&b, "cat %s; echo \" %s:$?\"; ", filepath.Join(creds, f), f)
	}
	fmt.Fprintf(&b, "ls %s; echo \" state:$?\"; ", engine.StateDir(root))
	fmt.Fprintf(&b, "echo x >> %s; echo \" config:$?\"; ", filepath.Join(root, ".orbit", "config.yaml"))
	return fmt.Sprintf("sh -c '(%s) > %s 2>&1; echo one > one.txt'", b.String(), out)
}

// secretsOf returns the seeds and the log key of the project at root.
func secretsOf(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	for _, id := range []events.Identity{events.IdentityEngine, events.IdentityClient, events.IdentityReader} {
		seed, err := events.Seed(events.CredsFile(engine.CredsDir(root), id))
		require.NoError(t, err)
		out = append(out, seed)
	}
	key, err := os.ReadFile(engine.LogKeyPath(root))
	require.NoError(t, err)
	return append(out, strings.TrimSpace(string(key)))
}

// probePlan is a plan of one checkpoint, which the probe's last command
// does.
const probePlan = "checkpoints:\n  - id: one\n    spec: Add one.txt.\n    success_criteria:\n      - {kind: file_exists, path: one.txt}\n"

// runProbe gives task the probe's plan and runs it with activity, whose
// agent's shell call has the arguments call: it sets call[field] to the
// probe, writing to out, once the project's root is known (the scripted
// server answers with call when the agent asks, after this). It checks
// that the verb committed, that the agent ran in the sandbox and read no
// secret, and returns what the probe saw.
func runProbe(t *testing.T, p *testkit.Project, task, activity string, call map[string]any, field, out string) string {
	t.Helper()
	call[field] = credsProbe(p.Root, out)
	planTask(t, p, task, probePlan)
	r := p.Orbit("groundhog", "run", task, "--activity", activity)
	require.Equal(t, 0, r.Code, "the verb reached the engine from the sandbox: %s", r.String())
	runID := strings.TrimSpace(r.Stdout)
	r = p.Orbit("run", "events", runID, "--json")
	require.Equal(t, 0, r.Code, r.String())
	assert.Contains(t, r.Stdout, `"sandbox": "mount-namespace"`)

	data, err := os.ReadFile(out)
	require.NoError(t, err, "the agent's shell ran the probe")
	seen := string(data)
	for _, f := range []string{"engine.nk", "client.nk", "reader.nk", events.LogKeyFile} {
		assert.Contains(t, seen, filepath.Join(engine.CredsDir(p.Root), f)+": No such file or directory", f)
	}
	assert.Contains(t, seen, " agent.nk:0", "the agent identity's seed stays readable")
	for _, secret := range secretsOf(t, p.Root) {
		assert.NotContains(t, seen, secret)
	}
	return seen
}

// TestAClaudeCodeAgentCannotReadTheEnginesCreds: a Groundhog attempt's
// Claude Code session whose Bash reads the engine's creds directory by
// its absolute path finds its files gone, save the agent identity's seed,
// and the rest of the state directory empty; its checkpoint_success still
// reaches the engine through orbit mcp, which signs in with that seed, and
// the invocation's record says the agent ran in the sandbox.
func TestAClaudeCodeAgentCannotReadTheEnginesCreds(t *testing.T) {
	t.Parallel()
	if ok, why := sandbox.Available(); !ok {
		t.Skipf("no sandbox on this machine: %s", why)
	}
	call := map[string]any{"description": "look around"}
	srv := testkit.NewAnthropicServer(t, []testkit.Turn{
		{Tools: []testkit.ToolUse{{ID: "toolu_probe", Name: "Bash", Input: call}}},
		{Tools: []testkit.ToolUse{{Name: "mcp__orbit__checkpoint_success", Input: map[string]any{"summary": "Add one.txt"}}}},
		{Text: "Done: the checkpoint is closed."},
	}...)
	p, _, task := cliGroundhogProject(t, srv)
	seen := runProbe(t, p, task, "example_cli_agent", call, "command", filepath.Join(t.TempDir(), "probe.txt"))
	for _, f := range []string{"engine.nk", "client.nk", "reader.nk", events.LogKeyFile} {
		assert.NotContains(t, seen, " "+f+":0", "%s was read", f)
	}
	assert.Contains(t, seen, "creds\n state:0", "the state directory shows the kept seed's directory only")
	assert.Contains(t, seen, "Read-only file system", "the project's .orbit is read-only")
	assert.NotContains(t, seen, " config:0", "the agent changed the project's configuration")
}

// TestACodexAgentCannotReadTheEnginesCreds is the Claude Code test for
// Codex, whose exec_command runs inside its own bubblewrap sandbox inside
// Orbit's: the creds are gone but for the agent's seed, and the verb,
// which Codex routes to orbit mcp, still commits the checkpoint.
func TestACodexAgentCannotReadTheEnginesCreds(t *testing.T) {
	t.Parallel()
	if ok, why := sandbox.Available(); !ok {
		t.Skipf("no sandbox on this machine: %s", why)
	}
	call := map[string]any{}
	srv := testkit.NewOpenAIServer(t, []testkit.Turn{
		{Tools: []testkit.ToolUse{{ID: "call_probe", Name: "exec_command", Input: call}}},
		{Tools: []testkit.ToolUse{{Namespace: "mcp__orbit", Name: "checkpoint_success", Input: map[string]any{"summary": "Add one.txt"}}}},
		{Text: "Done: the checkpoint is closed."},
	}...)
	p, _, task := codexGroundhogProject(t, srv)
	runProbe(t, p, task, "example_codex_agent", call, "cmd", filepath.Join(t.TempDir(), "probe.txt"))
}
