package assets_test

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/internal/testkit"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// seeded returns a catalog holding only the seeded assets.
func seeded(t *testing.T) *assets.Catalog {
	t.Helper()
	c, err := assets.OpenCatalog(t.TempDir(), assets.CatalogOptions{})
	require.NoError(t, err)
	return c
}

// TestBadAssets loads every file of testdata/bad by the prefix of its name
// (activity-*, executor-*, config-*, and jobs for the others, which load as
// job files of a seeded catalog that knows the fsProfile docs besides the
// seeded profiles) and compares
// the error message with the .golden file next to it.
func TestBadAssets(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("testdata/bad/*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	project := assets.Config{FSProfiles: map[string]assets.FSProfileConfig{"docs": {}}}
	cat, err := assets.OpenCatalog(t.TempDir(), assets.CatalogOptions{FSProfiles: project.FSProfileNames()})
	require.NoError(t, err)
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".yaml")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			data, err := os.ReadFile(file)
			require.NoError(t, err)
			var loaded bool
			switch {
			case strings.HasPrefix(name, "activity-"):
				a, perr := assets.ParseActivity(file, data)
				loaded, err = a != nil, perr
			case strings.HasPrefix(name, "executor-"):
				e, perr := assets.ParseExecutor(file, data)
				loaded, err = e != nil, perr
			case strings.HasPrefix(name, "config-"):
				c, perr := assets.ParseConfig(file, data)
				loaded, err = c != nil, perr
			default:
				j, perr := cat.JobFile(file)
				loaded, err = j != nil, perr
			}
			assert.False(t, loaded)
			require.Error(t, err)
			require.ErrorIs(t, err, assets.ErrInvalid)
			got := err.Error() + "\n"
			assert.NotContains(t, got, "sk-", "a problem repeats what looks like a secret")
			testkit.Golden(t, strings.TrimSuffix(file, ".yaml")+".golden", []byte(got), *update)
		})
	}
}
