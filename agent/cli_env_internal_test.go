package agent

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/sandbox"
	"github.com/orbitrun/orbit/internal/testkit"
)

// TestAConfinedAgentKeepsItsCLIsOwnDirectory: a confined agent's HOME is
// fresh, so its CLI's own directory is named in its environment and
// writable: the one the environment names, else the one under HOME, made
// when missing; an output of neither CLI gets none.
func TestAConfinedAgentKeepsItsCLIsOwnDirectory(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	p := sandbox.Policy{Confine: true, Work: []string{"/work"}}

	got, env, err := withCLIHome(p, []string{"HOME=" + home, "PATH=/bin"}, OutputClaudeCode)
	require.NoError(t, err)
	claude := filepath.Join(home, ".claude")
	assert.Equal(t, []string{"/work", claude}, got.Work)
	assert.Equal(t, []string{"/work"}, p.Work, "the policy given is not changed")
	assert.Equal(t, claude, lookupEnv(env, "CLAUDE_CONFIG_DIR"))
	fi, err := os.Stat(claude)
	require.NoError(t, err, "the directory is made")
	assert.True(t, fi.IsDir())

	own := filepath.Join(t.TempDir(), "codex")
	got, env, err = withCLIHome(p, []string{"HOME=" + home, "CODEX_HOME=/elsewhere", "CODEX_HOME=" + own}, OutputCodex)
	require.NoError(t, err)
	assert.Equal(t, []string{"/work", own}, got.Work, "the last CODEX_HOME wins, as for exec")
	assert.Equal(t, own, lookupEnv(env, "CODEX_HOME"))

	got, env, err = withCLIHome(p, []string{"HOME=" + home}, OutputText)
	require.NoError(t, err)
	assert.Equal(t, p.Work, got.Work)
	assert.Equal(t, []string{"HOME=" + home}, env)
}

// TestAnInvocationWithoutASandboxSaysSoOnItsRecord: where the machine
// cannot sandbox (this test binary does not call sandbox.Init, so the
// probe fails as without user namespaces) a CLI agent given the engine's
// policy runs as the engine's other programs do, and its
// cli.invocation.started says so: sandbox none, and in unenforced what
// that leaves the agent and the probe's reason.
func TestAnInvocationWithoutASandboxSaysSoOnItsRecord(t *testing.T) {
	t.Parallel()
	ok, why := sandbox.Available()
	require.False(t, ok, "the test binary cannot sandbox")
	rec := &recorder{}
	out, err := RunCLI(testkit.Context(t), CLIConfig{
		Executor:  "plain",
		Spec:      assets.ExecutorSpec{Command: "sh", Args: []string{"-c", "cat > /dev/null; echo done"}, Output: OutputText},
		Envelope:  Envelope{Prompt: "hello"},
		Workspace: t.TempDir(),
		Timeout:   time.Minute,
		Emitter:   rec,
		Sandbox:   &sandbox.Policy{Hide: []string{t.TempDir()}, Confine: true},
	})
	require.NoError(t, err)
	assert.Equal(t, "done", out.FinalMessage)
	var started []events.CLIInvocationStartedData
	for i, typ := range rec.types {
		if typ == events.CLIInvocationStarted {
			started = append(started, rec.payloads[i].(events.CLIInvocationStartedData))
		}
	}
	require.Len(t, started, 1)
	assert.Equal(t, sandbox.ModeNone, started[0].Sandbox)
	assert.Contains(t, started[0].Unenforced, "no sandbox ("+why+")")
	assert.Contains(t, started[0].Unenforced, "the engine's keys included")
}
