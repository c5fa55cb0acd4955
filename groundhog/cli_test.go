package groundhog_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/agent"
	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/groundhog"
)

// TestACLIActivityWithoutACLIBackendSpendsNoAttempt: a runner that cannot
// give a CLI agent its verbs stops before it snapshots anything, and
// never builds an HTTP provider in its place.
func TestACLIActivityWithoutACLIBackendSpendsNoAttempt(t *testing.T) {
	t.Parallel()
	h := newHarness(t, map[string]string{"README.md": "# x\n"},
		"checkpoints:\n  - id: one\n    spec: Add one.txt.\n    success_criteria:\n      - {kind: file_exists, path: one.txt}\n")
	s := spec("fs.write")
	s.Backend = assets.BackendCLI
	s.ExecutorSpec = &assets.ExecutorSpec{Command: "claude", Output: assets.OutputClaudeCode}
	_, err := h.run("r1", s, func(int, func(string) int) (agent.Provider, error) {
		t.Fatal("a cli attempt built an HTTP provider")
		return nil, nil
	})
	require.ErrorIs(t, err, groundhog.ErrNoCLIBackend)
	assert.Empty(t, h.events(events.GroundhogAttempt))
	assert.Equal(t, "main", h.git("branch", "--show-current"))
	assert.Empty(t, h.git("branch", "--list", "groundhog/*"))
}
