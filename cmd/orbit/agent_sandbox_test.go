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
// out (in the workspace: the agent's /tmp is its own), then does the
// checkpoint's work.
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
	assert.Contains(t, runEventsJSON(t, p, strings.TrimSpace(r.Stdout)), `"sandbox": "mount-namespace"`)

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
	p, repo, task := cliGroundhogProject(t, srv)
	seen := runProbe(t, p, task, "example_cli_agent", call, "command", filepath.Join(repo, "probe.txt"))
	for _, f := range []string{"engine.nk", "client.nk", "reader.nk", events.LogKeyFile} {
		assert.NotContains(t, seen, " "+f+":0", "%s was read", f)
	}
	assert.Contains(t, seen, "creds\n state:0", "the state directory shows the kept seed's directory only")
	assert.Regexp(t, "config.yaml: (Read-only file system|Permission denied)", seen, "the project's .orbit is read-only (and root's, to a root engine's agent)")
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
	p, repo, task := codexGroundhogProject(t, srv)
	runProbe(t, p, task, "example_codex_agent", call, "cmd", filepath.Join(repo, "probe.txt"))
}

// confinementProbe is a shell command an agent runs in its workspace: its
// work and scratch, then what least privilege refuses it (the engine's
// ~/.gitconfig, a .git/commondir, a file outside its workspace, a signal
// to the engine, the kernel's core_pattern), who it runs as, and a look at
// its environment (a variable only the
// engine has, and an ORBIT_ one the allowlist passes), each line's status
// written to probe.txt in the workspace. The engine-only variable's name
// holds none of KEY, SECRET, TOKEN, which Codex keeps from its commands
// itself.
func confinementProbe(engineHome, outside string, enginePID int) string {
	return fmt.Sprintf(`sh -c '(
echo one > one.txt; echo " workspace:$?"
echo s > /tmp/orbit-scratch-probe && cat /tmp/orbit-scratch-probe; echo " scratch:$?"
echo h > "$HOME/note"; echo " home:$?"
printf "[filter \"x\"]\n\tclean = touch %[2]s/pwned\n" > %[1]s/.gitconfig; echo " gitconfig:$?"
echo /tmp > .git/commondir; echo " commondir:$?"
echo x > %[2]s/outside.txt; echo " outside:$?"
kill -0 %[3]d; echo " signal:$?"
v=$(cat /proc/sys/kernel/core_pattern); echo "$v" > /proc/sys/kernel/core_pattern; echo " sysctl:$?"
echo "uid:$(id -u)"
echo "engine-only:$(env | grep -c TEST_ENGINE_ONLY_VARIABLE)"
echo "orbit-passed:$(env | grep -c ORBIT_TEST_PASSED=yes)"
) > probe.txt 2>&1'`, engineHome, outside, enginePID)
}

// confinedEnv is what the engine of a confinement test has besides the
// agent's own: HOME, where the engine's ~/.gitconfig would be, a variable
// no allowlist names and an ORBIT_ one.
func confinedEnv(engineHome string) []string {
	return []string{"HOME=" + engineHome, "TEST_ENGINE_ONLY_VARIABLE=engine-only", "ORBIT_TEST_PASSED=yes"}
}

// checkConfinedToItsWorkspace runs task on activity, whose agent's shell
// call has the arguments call: call[field] is set to the confinement
// probe once the engine's pid is known. The agent wrote its workspace,
// its /tmp and its home; could not write the engine's ~/.gitconfig,
// create .git/commondir, write outside its workspace, signal the engine or
// change the kernel's settings, and ran as nobody under a root engine; had
// the ORBIT_ variable and not the engine's own. None of those files is
// there afterwards, and the checkpoint committed.
func checkConfinedToItsWorkspace(t *testing.T, p *testkit.Project, repo, task, activity string, call map[string]any, field, engineHome, outside string) {
	t.Helper()
	pid := p.EnginePID()
	require.NotZero(t, pid, "the engine runs")
	call[field] = confinementProbe(engineHome, outside, pid)
	planTask(t, p, task, probePlan)
	r := p.Orbit("groundhog", "run", task, "--activity", activity)
	require.Equal(t, 0, r.Code, r.String())
	evs := runEventsJSON(t, p, strings.TrimSpace(r.Stdout))
	assert.Contains(t, evs, `"sandbox": "mount-namespace"`)
	assert.NotContains(t, evs, `"unenforced"`, "the sandbox enforces it all")

	data, err := os.ReadFile(filepath.Join(repo, "probe.txt"))
	require.NoError(t, err, "the agent's shell ran the probe")
	seen := string(data)
	for _, ok := range []string{"workspace", "home"} {
		assert.Contains(t, seen, " "+ok+":0", "%s: %s", ok, seen)
	}
	assert.Contains(t, seen, "s\n scratch:0", "the agent's /tmp is writable")
	for _, refused := range []string{"gitconfig", "commondir", "outside", "signal", "sysctl"} {
		assert.NotContains(t, seen, " "+refused+":0", "%s: %s", refused, seen)
	}
	if os.Getuid() == 0 {
		assert.Contains(t, seen, fmt.Sprintf("uid:%d\n", sandbox.AgentUID), "a root engine's agent runs as nobody")
	}
	assert.Contains(t, seen, "engine-only:0", "the engine's own variable is not the agent's")
	assert.Contains(t, seen, "orbit-passed:1", "the allowlist's ORBIT_ variable reaches the agent's commands")
	for _, gone := range []string{filepath.Join(engineHome, ".gitconfig"), filepath.Join(repo, ".git", "commondir"),
		filepath.Join(outside, "outside.txt"), "/tmp/orbit-scratch-probe"} {
		_, err := os.Lstat(gone)
		assert.True(t, os.IsNotExist(err), "%s is there", gone)
	}
	assert.Equal(t, "one", testkit.Git(t, repo, "show", "main:one.txt"), "the checkpoint committed the agent's work")
}

// TestAClaudeCodeAgentIsConfinedToItsWorkspace: a Groundhog attempt's
// real Claude Code session, whose Bash tries the confinement probe, is
// confined to its workspace (checkConfinedToItsWorkspace).
func TestAClaudeCodeAgentIsConfinedToItsWorkspace(t *testing.T) {
	t.Parallel()
	if ok, why := sandbox.Available(); !ok {
		t.Skipf("no sandbox on this machine: %s", why)
	}
	// Outside /tmp: a confined agent's /tmp is a layer of its own, where
	// a write succeeds and is gone afterwards.
	engineHome, outside := outsideTmp(t), outsideTmp(t)
	call := map[string]any{"description": "look around"}
	srv := testkit.NewAnthropicServer(t, []testkit.Turn{
		{Tools: []testkit.ToolUse{{ID: "toolu_probe", Name: "Bash", Input: call}}},
		{Tools: []testkit.ToolUse{{Name: "mcp__orbit__checkpoint_success", Input: map[string]any{"summary": "Add one.txt"}}}},
		{Text: "Done: the checkpoint is closed."},
	}...)
	p, repo, task := groundhogOverCLI(t, exampleAgent{executor: "claude_code", activity: "example_cli_agent", command: "claude",
		bin: testkit.ClaudeCLI(t), env: append(testkit.ClaudeEnv(t, srv), confinedEnv(engineHome)...), title: "CLI"})
	checkConfinedToItsWorkspace(t, p, repo, task, "example_cli_agent", call, "command", engineHome, outside)
}

// TestACodexAgentIsConfinedToItsWorkspace is the Claude Code test for
// Codex, whose exec_command runs the probe inside its own bubblewrap
// sandbox inside Orbit's.
func TestACodexAgentIsConfinedToItsWorkspace(t *testing.T) {
	t.Parallel()
	if ok, why := sandbox.Available(); !ok {
		t.Skipf("no sandbox on this machine: %s", why)
	}
	engineHome, outside := outsideTmp(t), outsideTmp(t)
	call := map[string]any{}
	srv := testkit.NewOpenAIServer(t, []testkit.Turn{
		{Tools: []testkit.ToolUse{{ID: "call_probe", Name: "exec_command", Input: call}}},
		{Tools: []testkit.ToolUse{{Namespace: "mcp__orbit", Name: "checkpoint_success", Input: map[string]any{"summary": "Add one.txt"}}}},
		{Text: "Done: the checkpoint is closed."},
	}...)
	p, repo, task := groundhogOverCLI(t, exampleAgent{executor: "codex", activity: "example_codex_agent", command: "codex",
		bin: testkit.CodexCLI(t), args: testkit.CodexProviderArgs(srv), env: append(testkit.CodexEnv(t), confinedEnv(engineHome)...), title: "Codex"})
	checkConfinedToItsWorkspace(t, p, repo, task, "example_codex_agent", call, "cmd", engineHome, outside)
}

// outsideTmp is a directory of the test's outside /tmp (/var/tmp), which
// a confined agent sees read-only.
func outsideTmp(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("/var/tmp", "orbit-confined-")
	if err != nil {
		t.Skipf("no directory outside /tmp: %v", err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}
