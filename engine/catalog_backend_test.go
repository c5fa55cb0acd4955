package engine

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/assets"
)

// TestAChildJobResolvesAutoAsAsked: a job looked up for a run's job.invoke
// resolves backend: auto to the backend the invoking run had, not to the
// config's runtime.backend, and each backend keeps its own open catalog.
func TestAChildJobResolvesAutoAsAsked(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writeAsset(t, filepath.Join(root, ".orbit", "config.yaml"), "runtime: {backend: http}\n")
	writeAsset(t, filepath.Join(root, ".orbit", "jobs", "child.yaml"), "schemaVersion: 2\nkind: Job\nmetadata: {name: child}\nspec:\n  steps:\n"+
		"    - {id: agent, spec: {type: agent_loop, provider: claude, instruction: hi}}\n")
	c := newCatalogCache(root, testProjectConfig(t, root), nil)

	for _, tt := range []struct{ asked, want string }{
		{"", assets.BackendHTTP},
		{assets.BackendCLI, assets.BackendCLI},
		{assets.BackendHTTP, assets.BackendHTTP},
		{"", assets.BackendHTTP},
		{assets.BackendCLI, assets.BackendCLI},
	} {
		job, err := c.job("child", tt.asked)
		require.NoError(t, err)
		assert.Equal(t, tt.want, job.Spec.Steps[0].Activity.Backend, "asked %q", tt.asked)
	}
	assert.Equal(t, 3, c.opens, "one catalog per backend asked for")
}
