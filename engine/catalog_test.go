package engine

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/executor"
	"github.com/orbitrun/orbit/internal/testkit"
	"github.com/orbitrun/orbit/projector"
)

func writeAsset(t *testing.T, path, content string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
}

// runningEngine opens an engine on cfg and runs it until the test ends,
// when it is stopped and closed.
func runningEngine(ctx context.Context, t *testing.T, cfg Config) *Engine {
	t.Helper()
	e, err := Open(ctx, cfg)
	require.NoError(t, err)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- e.Run(runCtx) }()
	t.Cleanup(func() {
		stop()
		<-done
		_ = e.Close()
	})
	return e
}

func echoJob(name, greeting string) string {
	return "schemaVersion: 2\nkind: Job\nmetadata: {name: " + name + "}\nspec:\n  steps:\n" +
		"    - id: say\n      spec: {type: deterministic, action: echo, config: {greeting: " + greeting + "}}\n"
}

func greeting(t *testing.T, c *catalogCache, name string) any {
	t.Helper()
	job, err := c.job(name, "")
	require.NoError(t, err)
	return job.Spec.Steps[0].Activity.Config["greeting"]
}

// TestTheCatalogIsReopenedOnlyWhenAFileChanges: lookups share one open
// catalog until a file of it changes (rewritten with the same size, added,
// removed, in the workspace or the env layer, or the config), and then see
// the change.
func TestTheCatalogIsReopenedOnlyWhenAFileChanges(t *testing.T) {
	t.Parallel()
	root, envJobs := t.TempDir(), t.TempDir()
	jobs := filepath.Join(root, ".orbit", "jobs")
	writeAsset(t, filepath.Join(jobs, "a.yaml"), echoJob("a", "hello"))
	c := newCatalogCache(root, testProjectConfig(t, root), nil)
	c.dirs.JobDir = envJobs

	for range 100 {
		assert.Equal(t, "hello", greeting(t, c, "a"))
	}
	assert.Equal(t, 1, c.opens, "100 lookups open the catalog once")

	writeAsset(t, filepath.Join(jobs, "a.yaml"), echoJob("a", "bonjour"))
	assert.Equal(t, "bonjour", greeting(t, c, "a"), "a file rewritten with the same size")

	_, err := c.job("b", "")
	require.ErrorIs(t, err, assets.ErrNotFound)
	writeAsset(t, filepath.Join(jobs, "b.yaml"), echoJob("b", "hi"))
	assert.Equal(t, "hi", greeting(t, c, "b"), "a file added")

	writeAsset(t, filepath.Join(envJobs, "a.yaml"), echoJob("a", "hallo"))
	assert.Equal(t, "hallo", greeting(t, c, "a"), "a file of the env layer, which comes first")

	require.NoError(t, os.Remove(filepath.Join(envJobs, "a.yaml")))
	require.NoError(t, os.Remove(filepath.Join(jobs, "b.yaml")))
	assert.Equal(t, "bonjour", greeting(t, c, "a"), "a file removed")
	_, err = c.job("b", "")
	require.ErrorIs(t, err, assets.ErrNotFound)

	opens := c.opens
	writeAsset(t, filepath.Join(root, ".orbit", "config.yaml"), "runtime: {backend: cli}\n")
	greeting(t, c, "a")
	assert.Equal(t, opens+1, c.opens, "the config changed")
	greeting(t, c, "a")
	assert.Equal(t, opens+1, c.opens)
}

// TestABadConfigLeavesTheCatalogAsItWas: a config that does not load
// leaves lookups on the configuration loaded before (the engine keeps it,
// see projectConfig), and the config fixed is read at the next lookup.
func TestABadConfigLeavesTheCatalogAsItWas(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writeAsset(t, filepath.Join(root, ".orbit", "jobs", "a.yaml"), echoJob("a", "hello"))
	config := filepath.Join(root, ".orbit", "config.yaml")
	writeAsset(t, config, "runtime: {backend: http}\n")
	c := newCatalogCache(root, testProjectConfig(t, root), nil)
	assert.Equal(t, "hello", greeting(t, c, "a"))
	writeAsset(t, config, "runtime: {backend: nope}\n")
	assert.Equal(t, "hello", greeting(t, c, "a"), "still the configuration loaded before")
	assert.Equal(t, 1, c.opens)
	writeAsset(t, config, "runtime: {backend: cli}\n")
	cat, err := c.catalog("")
	require.NoError(t, err)
	assert.Equal(t, assets.BackendCLI, cat.Backend())
	assert.Equal(t, 2, c.opens)

	_, err = c.job("a", "nope")
	require.ErrorIs(t, err, assets.ErrInvalid, "a catalog that does not open")
	_, err = c.job("a", "nope")
	require.ErrorIs(t, err, assets.ErrInvalid, "is not kept: it is tried again")
	assert.Equal(t, 2, c.opens)
}

// TestAHundredChildRunsOpenTheCatalogOnce: a job whose loop invokes a child
// job 100 times, on a real engine, opens the engine's catalog once.
func TestAHundredChildRunsOpenTheCatalogOnce(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writeAsset(t, filepath.Join(root, ".orbit", "jobs", "child.yaml"), echoJob("child", "hello"))
	writeAsset(t, filepath.Join(root, ".orbit", "jobs", "parent.yaml"), `schemaVersion: 2
kind: Job
metadata: {name: parent}
spec:
  steps:
    - id: calls
      loop:
        max_iterations: 100
        steps:
          - id: call
            spec: {type: deterministic, action: job.invoke, config: {job: child, wait: true}}
`)
	ctx := testkit.Context(t)
	e := runningEngine(ctx, t, Config{Root: root, Listen: "127.0.0.1:0"})

	cat, err := assets.OpenCatalog(root, assets.CatalogOptions{})
	require.NoError(t, err)
	job, err := cat.Job("parent")
	require.NoError(t, err)
	req, err := executor.NewRunRequest(job, nil, "test")
	require.NoError(t, err)
	require.NoError(t, executor.Submit(ctx, e.Log(), req))

	deadline := time.Now().Add(2 * time.Minute)
	for {
		v, err := e.proj.RunView(ctx, req.RunID)
		if err == nil && events.Terminal(v.State) {
			require.Equal(t, events.StateSuccess, v.State, "%+v", v.Error)
			break
		}
		if err != nil && !errors.Is(err, events.ErrNotFound) {
			require.NoError(t, err)
		}
		require.True(t, time.Now().Before(deadline), "the parent run did not finish")
		time.Sleep(50 * time.Millisecond)
	}
	runs, err := e.proj.Runs(ctx, projector.RunFilter{Job: "child"})
	require.NoError(t, err)
	assert.Len(t, runs, 100)
	e.catalog.mu.Lock()
	defer e.catalog.mu.Unlock()
	assert.Equal(t, 1, e.catalog.opens)
}

// testProjectConfig is root's configuration as an engine would load it.
func testProjectConfig(t *testing.T, root string) *projectConfig {
	t.Helper()
	c, err := loadProjectConfig(root, nil, nil)
	require.NoError(t, err)
	return c
}
