package executor_test

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/activity"
	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/executor"
	"github.com/orbitrun/orbit/internal/runrig"
	"github.com/orbitrun/orbit/internal/testkit"
)

// TestChildRunsTakeTheParentsBackend: a run requested with a backend (the
// CLI's --backend) looks its child jobs up with that backend, and records
// it in the children's run.requested, so that grandchildren take it too.
func TestChildRunsTakeTheParentsBackend(t *testing.T) {
	t.Parallel()
	log := testkit.StartLog(t, events.Config{})
	parent := runrig.ParseJob(t, "schemaVersion: 2\nkind: Job\nmetadata: {name: parent}\nspec:\n  steps:\n"+
		"    - {id: call, spec: {type: deterministic, action: job.invoke, config: {job: child}}}\n")
	child := runrig.ParseJob(t, "schemaVersion: 2\nkind: Job\nmetadata: {name: child}\nspec:\n  steps:\n"+
		"    - {id: call, spec: {type: deterministic, action: job.invoke, config: {job: leaf}}}\n")
	leaf := runrig.ParseJob(t, "schemaVersion: 2\nkind: Job\nmetadata: {name: leaf}\nspec:\n  steps:\n"+
		"    - {id: say, spec: {type: deterministic, action: echo}}\n")
	lookup := jobsOf(child, leaf)
	var mu sync.Mutex
	asked := map[string]string{}
	runrig.Start(t, executor.Config{Log: log, Root: t.TempDir(),
		Jobs: func(name, backend string) (*assets.Job, error) {
			mu.Lock()
			asked[name] = backend
			mu.Unlock()
			return lookup(name, backend)
		}}, activity.WorkerConfig{Log: log})

	req, err := executor.NewRunRequest(parent, nil, "test")
	require.NoError(t, err)
	req.Backend = assets.BackendCLI
	require.NoError(t, executor.Submit(testkit.Context(t), log, req))
	fin := runrig.WaitFinished(t, log, req.RunID)
	require.Equal(t, events.StateSuccess, fin.State, "%+v", fin.Error)

	mu.Lock()
	assert.Equal(t, map[string]string{"child": assets.BackendCLI, "leaf": assets.BackendCLI}, asked)
	mu.Unlock()
	for _, job := range []string{"parent", "child", "leaf"} {
		runs := runsOf(t, log, job)
		require.Len(t, runs, 1, job)
		var d events.RunRequestedData
		require.NoError(t, runs[0].Decode(&d))
		assert.Equal(t, assets.BackendCLI, d.Backend, "%s's run.requested", job)
	}
}
