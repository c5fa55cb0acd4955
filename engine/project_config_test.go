package engine

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/internal/testkit"
)

// TestTheProjectConfigIsReloadedValidatedFirst: the configuration follows
// the file from the next read on; a file that does not load keeps the one
// loaded before and says why, once; restart-needed settings are those the
// file changed since the start, and a file changed back needs none.
func TestTheProjectConfigIsReloadedValidatedFirst(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	file := filepath.Join(root, ".orbit", "config.yaml")
	var logged testkit.SyncBuffer
	var applied []*assets.Config
	c, err := loadProjectConfig(root, slog.New(slog.NewTextHandler(&logged, nil)), func(cfg *assets.Config) { applied = append(applied, cfg) })
	require.NoError(t, err)
	st := c.Status()
	assert.True(t, st.Missing)
	assert.Equal(t, hashOf(nil), st.Hash)
	assert.Equal(t, assets.DurabilityStrict, c.get().Durability)
	require.Len(t, applied, 1)

	writeAsset(t, file, "engine: {max_child_depth: 3}\n")
	assert.Equal(t, 3, c.get().Engine.MaxChildDepth, "seen at the next read, without waiting for a poll")
	require.Len(t, applied, 2)
	assert.Empty(t, c.Status().RestartNeeded)
	assert.Contains(t, logged.String(), "applied=engine.max_child_depth")

	writeAsset(t, file, "durability: relaxed\nengine: {max_child_depth: 3}\n")
	st = c.Status()
	assert.Equal(t, []string{"durability"}, st.RestartNeeded)
	assert.Equal(t, hashOf([]byte("durability: relaxed\nengine: {max_child_depth: 3}\n")), st.Hash)
	assert.False(t, st.Missing)

	writeAsset(t, file, "durability: relaxed\nengine: {max_child_depth: 0.5}\n")
	for range 3 {
		assert.Equal(t, 3, c.get().Engine.MaxChildDepth, "the configuration loaded before")
		c.check(true)
	}
	st = c.Status()
	require.NotNil(t, st.Error)
	assert.Equal(t, file, st.Error.File)
	assert.Equal(t, 2, st.Error.Line)
	assert.Equal(t, "engine.max_child_depth", st.Error.Path)
	assert.Equal(t, []string{"durability"}, st.RestartNeeded)
	assert.Len(t, applied, 3, "a bad file is not applied")
	assert.Equal(t, 1, strings.Count(logged.String(), "does not load"), "said once per content:\n%s", logged.String())

	writeAsset(t, file, "engine: {max_child_depth: 3}\n")
	st = c.Status()
	assert.Nil(t, st.Error)
	assert.Empty(t, st.RestartNeeded, "back to what the engine started with")
	assert.Contains(t, logged.String(), "loads again")

	require.NoError(t, os.Remove(file))
	require.NoError(t, os.Mkdir(file, 0o755))
	st = c.Status()
	require.NotNil(t, st.Error, "a file that cannot be read")
	assert.Contains(t, st.Error.Reason, "reading config")
	assert.Equal(t, 3, c.get().Engine.MaxChildDepth)
	require.NoError(t, os.Remove(file))
	st = c.Status()
	assert.Nil(t, st.Error)
	assert.True(t, st.Missing)
	assert.Equal(t, assets.DefaultMaxChildDepth, c.get().Engine.MaxChildDepth, "no file: every default")
}

// TestThePollFindsAChangeTheStampMissed: a write that leaves the file's
// size and times as they were (two writes within the file system's time
// granularity) is found by the poll, which reads the file whole.
func TestThePollFindsAChangeTheStampMissed(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	file := filepath.Join(root, ".orbit", "config.yaml")
	writeAsset(t, file, "engine: {max_child_depth: 3}\n")
	c, err := loadProjectConfig(root, nil, nil)
	require.NoError(t, err)
	writeAsset(t, file, "engine: {max_child_depth: 4}\n")
	c.mu.Lock()
	c.stamp = fileStamp(file) // as if the write had not changed it
	c.mu.Unlock()
	assert.Equal(t, 3, c.get().Engine.MaxChildDepth)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { c.watch(ctx); close(done) }()
	deadline := time.Now().Add(10 * time.Second)
	for c.get().Engine.MaxChildDepth != 4 {
		require.True(t, time.Now().Before(deadline), "the poll did not find the change")
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("watch did not stop with its context")
	}
}

// TestABadConfigStopsAnEngineFromStarting: only a running engine keeps a
// configuration when the file goes bad; one that starts on a bad file
// refuses, naming the problem.
func TestABadConfigStopsAnEngineFromStarting(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writeAsset(t, filepath.Join(root, ".orbit", "config.yaml"), "durability: sometimes\n")
	_, err := loadProjectConfig(root, nil, nil)
	require.ErrorIs(t, err, assets.ErrInvalid)
	assert.Contains(t, err.Error(), "config.yaml:1: durability")
}
