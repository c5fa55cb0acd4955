package projector_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/projector"
)

// Views an engine uses are not set aside under it; a root without views
// has nothing to set aside; two in the same second keep both.
func TestSetAsideLostTakesTheFilesLock(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	aside, err := projector.SetAsideLost(e.path, 100*time.Millisecond)
	require.NoError(t, err)
	assert.Empty(t, aside, "no file")

	p, err := projector.Open(e.ctx, projector.Config{Path: e.path, Source: e.log})
	require.NoError(t, err)
	_, err = projector.SetAsideLost(e.path, 200*time.Millisecond)
	assert.ErrorIs(t, err, projector.ErrLocked)
	assert.FileExists(t, e.path)
	require.NoError(t, p.Close())

	first, err := projector.SetAsideLost(e.path, time.Second)
	require.NoError(t, err)
	assert.NoFileExists(t, e.path)
	require.NoError(t, os.WriteFile(e.path, nil, 0o600))
	second, err := projector.SetAsideLost(e.path, time.Second)
	require.NoError(t, err)
	assert.NotEqual(t, first, second)
	kept, err := filepath.Glob(e.path + ".lost-*")
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{first, second}, kept)
}
