package groundhog_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/groundhog"
	"github.com/orbitrun/orbit/internal/sandbox"
)

// TestVerifierCommandsRunInTheAgentsSandbox: a command criterion runs the
// workspace's code, which the agent wrote, so it runs in the agent's
// sandbox, confined as the engine confines it: it reads nothing of the
// engine's seed under .orbit/state, makes no .git/commondir, and its
// result says how it ran.
func TestVerifierCommandsRunInTheAgentsSandbox(t *testing.T) {
	t.Parallel()
	if ok, why := sandbox.Available(); !ok {
		t.Skipf("no sandbox on this machine: %s", why)
	}
	h := newHarness(t, map[string]string{".gitignore": ".orbit/\n"}, `
checkpoints:
  - id: greeting
    spec: Create greet.txt.
    attempt_budget: 1
    success_criteria:
      - {kind: command, command: "cat .orbit/state/creds/engine.nk; echo \" exit:$?\"; echo /tmp > .git/commondir; echo \" commondir:$?\""}
`)
	state := filepath.Join(h.repo, ".orbit", "state")
	require.NoError(t, os.MkdirAll(filepath.Join(state, "creds"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(state, "creds", "engine.nk"), []byte("ENGINESEED"), 0o644))
	h.cli = &groundhog.CLIBackend{Sandbox: &sandbox.Policy{Hide: []string{state}, ReadOnly: []string{filepath.Dir(state)}, Confine: true}}

	res, err := h.run("R1", spec("fs.write"), replay(t, fixture(writeTurn("greet.txt", "hello\n", "Add greet.txt"))))
	require.NoError(t, err)
	assert.Equal(t, events.GroundhogDone, res.State, res.Message)
	var v events.GroundhogVerificationData
	require.NoError(t, h.events(events.GroundhogVerification)[0].Decode(&v))
	require.Len(t, v.Results, 1)
	r := v.Results[0]
	assert.NotContains(t, r.Output, "ENGINESEED")
	assert.Contains(t, r.Output, "No such file")
	assert.Contains(t, r.Output, " commondir:2", "the repository's git directory is read-only")
	_, err = os.Stat(filepath.Join(h.repo, ".git", "commondir"))
	assert.True(t, os.IsNotExist(err))
	assert.Equal(t, sandbox.ModeMountNamespace, r.Sandbox)
}
