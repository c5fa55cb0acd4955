package executor_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/activity"
	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/executor"
	"github.com/orbitrun/orbit/internal/runrig"
	"github.com/orbitrun/orbit/internal/testkit"
)

// sharedEngine is an orchestrator and a worker on their own connection to
// a cluster, as one `orbit serve --nats-url` would run them.
type sharedEngine struct {
	log    *events.Log
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func (e *sharedEngine) stop() {
	e.cancel()
	e.wg.Wait()
}

// startShared starts an engine named name on c with a short lease and ack
// wait, so that takeovers happen within the test's patience.
func startShared(t *testing.T, c *testkit.Cluster, name string) *sharedEngine {
	t.Helper()
	return startSharedConfig(t, c, name, func(*executor.Config, *events.Log) {})
}

// startSharedWith is startShared with active as the engine's list of live
// runs.
func startSharedWith(t *testing.T, c *testkit.Cluster, name string, active func(context.Context, *events.Log) ([]string, error)) *sharedEngine {
	t.Helper()
	return startSharedConfig(t, c, name, func(cfg *executor.Config, log *events.Log) {
		cfg.ActiveRuns = func(ctx context.Context) ([]string, error) { return active(ctx, log) }
	})
}

// startSharedConfig is startShared with the orchestrator's configuration
// changed by adjust.
func startSharedConfig(t *testing.T, c *testkit.Cluster, name string, adjust func(*executor.Config, *events.Log)) *sharedEngine {
	t.Helper()
	log, err := events.Open(testkit.Context(t), events.Config{
		URL:          c.URLs(),
		NKeySeedFile: c.Creds.File(events.IdentityEngine),
		Redactor:     &events.Redactor{},
		Name:         name,
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	e := &sharedEngine{log: log, cancel: cancel}
	cfg := executor.Config{Log: log, Root: t.TempDir(), Engine: name, LeaseTTL: 1500 * time.Millisecond,
		ActiveRuns: func(ctx context.Context) ([]string, error) { return unfinished(ctx, log) }}
	adjust(&cfg, log)
	orch := executor.NewOrchestrator(cfg)
	worker := activity.NewWorker(activity.WorkerConfig{Log: log, Engine: name, AckWait: 2 * time.Second})
	for _, run := range []func(context.Context) error{worker.Run, orch.Run} {
		e.wg.Add(1)
		go func() {
			defer e.wg.Done()
			assert.NoError(t, run(ctx))
		}()
	}
	t.Cleanup(func() {
		e.stop()
		log.Close()
	})
	return e
}

// unfinished lists the runs requested and not finished, in request order:
// what an engine's views give its orchestrator, read here from the log.
func unfinished(ctx context.Context, log *events.Log) ([]string, error) {
	evs, err := log.Read(ctx, events.FollowOptions{Filters: []string{
		events.TypeFilter(events.AggregateRun, events.RunRequested),
		events.TypeFilter(events.AggregateRun, events.RunFinished),
	}})
	if err != nil {
		return nil, err
	}
	var ids []string
	finished := map[string]bool{}
	for _, ev := range evs {
		if ev.Type == events.RunFinished {
			finished[ev.RunID] = true
		}
	}
	for _, ev := range evs {
		if ev.Type == events.RunRequested && !finished[ev.RunID] {
			ids = append(ids, ev.RunID)
		}
	}
	return ids, nil
}

const sharedQueueJob = `
schemaVersion: 2
kind: Job
metadata: {name: shared_queue}
spec:
  max_active_runs: 1
  steps:
    - id: nap
      spec: {type: deterministic, action: sleep, config: {ms: 300}}
`

// startOrder checks from the log that runs started once each, in the order
// of their run.requested, one at a time.
func startOrder(t *testing.T, log *events.Log, ids []string) {
	t.Helper()
	var requested, started []string
	running, most := 0, 0
	for _, ev := range eventsOfRuns(t, log, ids, events.RunRequested, events.RunStarted, events.RunFinished) {
		switch ev.Type {
		case events.RunRequested:
			requested = append(requested, ev.RunID)
		case events.RunStarted:
			started = append(started, ev.RunID)
			running++
		case events.RunFinished:
			running--
		}
		most = max(most, running)
	}
	assert.Len(t, requested, len(ids))
	assert.Equal(t, requested, started, "started once each, in the order requested")
	assert.Equal(t, 1, most, "runs at once")
}

// TestSharedQueueAdmitsInRequestOrder: two engines on a cluster, runs of a
// job at max_active_runs 1 submitted through both: they start in the
// order of their run.requested, whichever engine handled each request.
func TestSharedQueueAdmitsInRequestOrder(t *testing.T) {
	t.Parallel()
	c := testkit.StartCluster(t, filepath.Join(t.TempDir(), "creds"))
	es := []*sharedEngine{startShared(t, c, "e1"), startShared(t, c, "e2")}
	job := runrig.ParseJob(t, sharedQueueJob)
	var ids []string
	for i := range 6 {
		ids = append(ids, runrig.Submit(t, es[i%2].log, job, nil))
	}
	for _, id := range ids {
		assert.Equal(t, events.StateSuccess, runrig.WaitFinished(t, es[0].log, id).State)
	}
	startOrder(t, es[0].log, ids)
	// The engine that recorded a request records run.queued when it finds
	// the run waiting; one another engine admitted first has none.
	queued := 0
	for _, id := range ids[1:] {
		if runrig.Has(t, es[0].log, id, events.RunQueued, "") {
			queued++
		}
	}
	assert.NotZero(t, queued, "runs recorded queued")
}

// TestSharedQueueOutlivesItsEngine: the engine running the first run stops
// while runs wait behind it; the other engine takes that run over once its
// lease lapses and starts every queued run, each once, in order.
func TestSharedQueueOutlivesItsEngine(t *testing.T) {
	t.Parallel()
	c := testkit.StartCluster(t, filepath.Join(t.TempDir(), "creds"))
	es := []*sharedEngine{startShared(t, c, "e1"), startShared(t, c, "e2")}
	job := runrig.ParseJob(t, sharedQueueJob)
	var ids []string
	for i := range 5 {
		ids = append(ids, runrig.Submit(t, es[i%2].log, job, nil))
	}
	runrig.WaitFor(t, "the first run to start", func() bool { return runrig.Has(t, es[0].log, ids[0], events.RunStarted, "") })
	var started events.RunStartedData
	require.NoError(t, runrig.OfType(runrig.History(t, es[0].log, ids[0]), events.RunStarted)[0].Decode(&started))
	holder := map[string]int{"e1": 0, "e2": 1}[started.Engine]
	es[holder].stop()
	survivor := es[1-holder]
	for _, id := range ids {
		assert.Equal(t, events.StateSuccess, runrig.WaitFinished(t, survivor.log, id).State)
	}
	startOrder(t, survivor.log, ids)
	assert.NotEmpty(t, runrig.OfType(runrig.History(t, survivor.log, ids[0]), events.RunResumed), "the stopped engine's run was taken over")
}

// TestAQueuedRunKeepsItsBackendOnASharedServer: a run requested with a
// backend (what backend: auto resolved to at submit) that waits behind
// max_active_runs in the global queue starts with that backend: its child
// job is looked up with it and its child's run.requested records it.
func TestAQueuedRunKeepsItsBackendOnASharedServer(t *testing.T) {
	t.Parallel()
	c := testkit.StartCluster(t, filepath.Join(t.TempDir(), "creds"))
	leaf := runrig.ParseJob(t, "schemaVersion: 2\nkind: Job\nmetadata: {name: leaf}\nspec:\n  steps:\n"+
		"    - {id: say, spec: {type: deterministic, action: echo}}\n")
	var mu sync.Mutex
	asked := []string{}
	e := startSharedConfig(t, c, "e1", func(cfg *executor.Config, _ *events.Log) {
		cfg.Jobs = func(name, backend string) (*assets.Job, error) {
			mu.Lock()
			defer mu.Unlock()
			asked = append(asked, backend)
			return leaf, nil
		}
	})
	job := jobSpec(t, "gated", `
  max_active_runs: 1
  steps:
    - id: nap
      spec: {type: deterministic, action: sleep, config: {ms: 300}}
    - id: call
      spec: {type: deterministic, action: job.invoke, config: {job: leaf}}
`)
	var ids []string
	for range 2 {
		req, err := executor.NewRunRequest(job, nil, "test")
		require.NoError(t, err)
		req.Backend = assets.BackendCLI
		require.NoError(t, executor.Submit(testkit.Context(t), e.log, req))
		ids = append(ids, req.RunID)
	}
	for _, id := range ids {
		assert.Equal(t, events.StateSuccess, runrig.WaitFinished(t, e.log, id).State)
	}
	require.True(t, runrig.Has(t, e.log, ids[1], events.RunQueued, ""), "the second run waited in the queue")

	mu.Lock()
	assert.Equal(t, []string{assets.BackendCLI, assets.BackendCLI}, asked, "the backend each run's child job was looked up with")
	mu.Unlock()
	children := runsOf(t, e.log, "leaf")
	require.Len(t, children, 2)
	for _, ev := range children {
		var d events.RunRequestedData
		require.NoError(t, ev.Decode(&d))
		assert.Equal(t, assets.BackendCLI, d.Backend, "the run.requested of the child of %s", d.Parent.RunID)
	}
}
