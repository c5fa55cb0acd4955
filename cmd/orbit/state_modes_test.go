package main_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/internal/testkit"
)

// TestStateFileModesAreTheOwnersOnly: .orbit/state and everything an engine
// writes there, the background engine's log included, are made
// owner-only, and an engine that starts narrows a directory or log that
// someone widened, as it does the creds directory.
func TestStateFileModesAreTheOwnersOnly(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	state := filepath.Join(p.Root, ".orbit", "state")
	modes := func() map[string]fs.FileMode {
		out := map[string]fs.FileMode{}
		require.NoError(t, filepath.WalkDir(state, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.Type()&fs.ModeSymlink != 0 {
				return nil
			}
			fi, err := d.Info()
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(p.Root, path)
			out[rel] = fi.Mode().Perm()
			return nil
		}))
		return out
	}
	ownerOnly := func(when string) {
		t.Helper()
		got := modes()
		require.Contains(t, got, ".orbit/state/engine.log", "a background engine writes its log")
		for path, mode := range got {
			assert.Zero(t, mode&0o077, "%s: %s is %#o", when, path, mode)
		}
	}

	r := p.Orbit("job", "run", "hello")
	require.Equal(t, 0, r.Code, r.String())
	ownerOnly("made by the first engine")

	p.StopEngine()
	require.NoError(t, os.Chmod(state, 0o755))
	require.NoError(t, os.Chmod(filepath.Join(state, "engine.log"), 0o644))
	r = p.Orbit("job", "run", "hello")
	require.Equal(t, 0, r.Code, r.String())
	ownerOnly("after the next engine's start")
}
