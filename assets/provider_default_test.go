package assets_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/assets"
)

// TestAgentProviderDefaultsToClaude: an agent_loop or groundhog activity
// that names no provider loads with provider claude, as upstream, over
// http and, on the cli backend, with the seeded claude executor.
func TestAgentProviderDefaultsToClaude(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, spec, backend string }{
		{"agent_loop", "  type: agent_loop\n  instruction: x\n", assets.BackendHTTP},
		{"agent_loop on cli", "  type: agent_loop\n  backend: cli\n", assets.BackendCLI},
		{"groundhog", "  type: groundhog\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			writeFile(t, root, ".orbit/activities/a.yaml", "schemaVersion: 2\nkind: Activity\nmetadata: {name: a}\nspec:\n"+tc.spec)
			cat, err := assets.OpenCatalog(root, assets.CatalogOptions{})
			require.NoError(t, err)
			require.Empty(t, cat.Problems())
			a, err := cat.Activity("a")
			require.NoError(t, err)
			assert.Equal(t, "claude", a.Spec.Provider)
			assert.Equal(t, tc.backend, a.Spec.Backend)
			if tc.backend == assets.BackendCLI {
				require.NotNil(t, a.Spec.ExecutorSpec)
				assert.Equal(t, "claude", a.Spec.ExecutorSpec.Command)
			}
		})
	}
}
