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
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// seeded returns a catalog holding only the seeded assets.
func seeded(t *testing.T) *assets.Catalog {
	t.Helper()
	c, err := assets.OpenCatalog(t.TempDir(), assets.CatalogOptions{})
	require.NoError(t, err)
	return c
}

// TestBadAssets loads every file of testdata/bad (files named activity-*
// as activities, the others as jobs resolving against the seeded catalog)
// and compares the error message with the .golden file next to it.
func TestBadAssets(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("testdata/bad/*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	cat := seeded(t)
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".yaml")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			data, err := os.ReadFile(file)
			require.NoError(t, err)
			if strings.HasPrefix(name, "activity-") {
				a, perr := assets.ParseActivity(file, data)
				assert.Nil(t, a)
				err = perr
			} else {
				j, perr := assets.ParseJob(file, data, cat.Activity)
				assert.Nil(t, j)
				err = perr
			}
			require.Error(t, err)
			require.ErrorIs(t, err, assets.ErrInvalid)
			got := err.Error() + "\n"
			golden := strings.TrimSuffix(file, ".yaml") + ".golden"
			if *update {
				require.NoError(t, os.WriteFile(golden, []byte(got), 0o644))
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err, "run go test -run TestBadAssets -update to create it")
			assert.Equal(t, string(want), got)
		})
	}
}
