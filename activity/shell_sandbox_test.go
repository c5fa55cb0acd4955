package activity_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/activity"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/executor"
	"github.com/orbitrun/orbit/internal/runrig"
	"github.com/orbitrun/orbit/internal/sandbox"
	"github.com/orbitrun/orbit/internal/testkit"
)

// sandboxProbe is a shell step's script: agent-written code trying what
// the agents' sandbox refuses, beside its work in the workspace.
const sandboxProbe = `
echo work > work.txt; echo " workspace:$?"
echo /tmp > .git/commondir; echo " commondir:$?"
echo x > "$1/outside.txt"; echo " outside:$?"
cat .orbit/state/engine.nk; echo " state:$?"
echo "engine-only:$(env | grep -c TEST_SHELL_ENGINE_ONLY)"
echo "workspace-var:$ORBIT_WORKSPACE"
echo "uid:$(id -u)"
`

// TestAShellStepWithSandboxAgentRunsInTheAgentsSandbox: a shell step of
// an activity with sandbox: agent runs in the worker's agent sandbox,
// with an agent's environment: it writes its workspace but no
// .git/commondir and nothing outside, reads no hidden state, has none of
// the engine's own variables but Orbit's, and its shell.exited says how
// it ran. The same step without the field runs as the engine's user.
//
// Not parallel: it sets a variable of the engine's (this process's)
// environment.
func TestAShellStepWithSandboxAgentRunsInTheAgentsSandbox(t *testing.T) {
	if ok, why := sandbox.Available(); !ok {
		t.Skipf("no sandbox on this machine: %s", why)
	}
	t.Setenv("TEST_SHELL_ENGINE_ONLY", "engine-only")
	root := t.TempDir()
	out, err := exec.Command("git", "init", "--quiet", root).CombinedOutput()
	require.NoError(t, err, "%s", out)
	state := filepath.Join(root, ".orbit", "state")
	require.NoError(t, os.MkdirAll(state, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(state, "engine.nk"), []byte("ENGINESEED"), 0o644))
	outside, err := os.MkdirTemp("/var/tmp", "orbit-shell-sandbox-")
	if err != nil {
		t.Skipf("no directory outside /tmp: %v", err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(outside) })

	log := testkit.StartLog(t, events.Config{})
	policy := &sandbox.Policy{Hide: []string{state}, ReadOnly: []string{filepath.Dir(state)}, Confine: true}
	runrig.Start(t, executor.Config{Log: log, Root: root}, activity.WorkerConfig{Log: log, AgentSandbox: policy})

	for _, field := range []string{"sandbox: agent", "sandbox: none"} {
		job := runrig.ParseJob(t, "schemaVersion: 2\nkind: Job\nmetadata: {name: probe}\nspec:\n  steps:\n"+
			"    - id: probe\n      spec:\n        type: shell\n        program: sh\n        allowed_programs: [sh]\n        "+field+"\n"+
			"        args: [-c, "+strconvQuote(sandboxProbe)+", probe, "+outside+"]\n")
		runID, fin := runrig.RunJob(t, log, job, nil)
		require.Equal(t, events.StateSuccess, fin.State, "%+v", fin.Error)
		exited := runrig.OfType(runrig.History(t, log, runID), events.ShellExited)
		require.Len(t, exited, 1)
		var d events.ShellExitedData
		require.NoError(t, exited[0].Decode(&d))
		got := d.Stdout.Preview
		assert.Contains(t, got, " workspace:0", "%s: %s", field, got)
		assert.Contains(t, got, "workspace-var:"+root, "%s: Orbit's variables are given", field)
		if field == "sandbox: none" {
			assert.Empty(t, d.Sandbox)
			assert.Empty(t, d.Unenforced)
			assert.Contains(t, got, " outside:0", "without the sandbox it writes as the engine's user: %s", got)
			assert.Contains(t, got, "ENGINESEED")
			require.NoError(t, os.Remove(filepath.Join(root, ".git", "commondir")))
			continue
		}
		assert.Equal(t, sandbox.ModeMountNamespace, d.Sandbox)
		assert.Empty(t, d.Unenforced, "a root engine's step runs as nobody")
		if os.Getuid() == 0 {
			assert.Contains(t, got, fmt.Sprintf("uid:%d\n", sandbox.AgentUID), "a root engine's step runs as nobody")
		}
		for _, refused := range []string{"commondir", "outside", "state"} {
			assert.NotContains(t, got, " "+refused+":0", "%s: %s", refused, got)
		}
		assert.NotContains(t, got, "ENGINESEED")
		assert.Contains(t, got, "engine-only:0", "the engine's own variable is not the step's")
		for _, gone := range []string{filepath.Join(root, ".git", "commondir"), filepath.Join(outside, "outside.txt")} {
			_, err := os.Stat(gone)
			assert.True(t, os.IsNotExist(err), "%s is there", gone)
		}
	}
}

// strconvQuote quotes s as a YAML double-quoted scalar.
func strconvQuote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s) + `"`
}
