package agent

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/internal/sandbox"
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

// TestAnAgentIsGivenItsStepAttemptsTraceparent: the allowlist keeps the
// engine's own TRACEPARENT from the agent, and the step attempt's is given
// after it, once.
func TestAnAgentIsGivenItsStepAttemptsTraceparent(t *testing.T) {
	t.Parallel()
	const engine = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	const step = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	cfg := &CLIConfig{Env: []string{"PATH=/bin", "TRACEPARENT=" + engine}, Traceparent: step}
	env := agentEnv(cfg)
	assert.Contains(t, env, "TRACEPARENT="+step)
	assert.NotContains(t, env, "TRACEPARENT="+engine)

	cfg.Traceparent = ""
	assert.Equal(t, []string{"PATH=/bin"}, agentEnv(cfg))
}
