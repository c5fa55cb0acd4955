package assets_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/assets"
)

// TestReadSource reads back the file of every asset a catalog lists, seeded
// or on disk, as written.
func TestReadSource(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	const text = "# a comment that must survive\nschemaVersion: 2\nkind: Job\nmetadata: {name: mine}\nspec:\n  steps:\n    - {id: a, spec: {type: deterministic, action: echo}}\n"
	file := filepath.Join(root, ".orbit", "jobs", "mine.yaml")
	require.NoError(t, os.MkdirAll(filepath.Dir(file), 0o755))
	require.NoError(t, os.WriteFile(file, []byte(text), 0o644))
	cat, err := assets.OpenCatalog(root, assets.CatalogOptions{})
	require.NoError(t, err)

	lists := [][]assets.Entry{cat.Jobs(), cat.Activities(), cat.Executors()}
	for _, list := range lists {
		for _, e := range list {
			data, err := assets.ReadSource(e.Source)
			require.NoError(t, err, e.Source)
			assert.Contains(t, string(data), "name: "+e.Name, e.Source)
		}
	}
	data, err := assets.ReadSource(file)
	require.NoError(t, err)
	assert.Equal(t, text, string(data))

	_, err = assets.ReadSource("seeded:jobs/nope.yaml")
	require.ErrorIs(t, err, assets.ErrNotFound)
	_, err = assets.ReadSource(filepath.Join(root, "nope.yaml"))
	require.ErrorIs(t, err, os.ErrNotExist)
}
