package executor_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/executor"
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
	log, err := events.Open(testkit.Context(t), events.Config{
		URL:          c.URLs(),
		NKeySeedFile: c.Creds.File(events.IdentityEngine),
		Redactor:     &events.Redactor{},
		Name:         name,
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	e := &sharedEngine{log: log, cancel: cancel}
	orch := executor.NewOrchestrator(executor.Config{Log: log, Root: t.TempDir(), Engine: name, LeaseTTL: 1500 * time.Millisecond})
	worker := executor.NewWorker(executor.WorkerConfig{Log: log, Engine: name, AckWait: 2 * time.Second})
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
	mine := map[string]bool{}
	for _, id := range ids {
		mine[id] = true
	}
	evs, err := log.Read(testkit.Context(t), events.FollowOptions{Filters: []string{
		events.TypeFilter(events.AggregateRun, events.RunRequested),
		events.TypeFilter(events.AggregateRun, events.RunStarted),
		events.TypeFilter(events.AggregateRun, events.RunFinished),
	}})
	require.NoError(t, err)
	var requested, started []string
	running, most := 0, 0
	for _, ev := range evs {
		if !mine[ev.RunID] {
			continue
		}
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
	job := parseJob(t, sharedQueueJob)
	var ids []string
	for i := range 6 {
		ids = append(ids, submit(t, es[i%2].log, job, nil))
	}
	for _, id := range ids {
		assert.Equal(t, events.StateSuccess, waitFinished(t, es[0].log, id).State)
	}
	startOrder(t, es[0].log, ids)
	for _, id := range ids[1:] {
		assert.True(t, has(t, es[0].log, id, events.RunQueued, ""), "run %s was recorded queued", id)
	}
}

// TestSharedQueueOutlivesItsEngine: an engine stops while runs wait
// behind the one it runs; the other engine takes that run over once its
// lease lapses and starts every queued run, each once, in order.
func TestSharedQueueOutlivesItsEngine(t *testing.T) {
	t.Parallel()
	c := testkit.StartCluster(t, filepath.Join(t.TempDir(), "creds"))
	es := []*sharedEngine{startShared(t, c, "e1"), startShared(t, c, "e2")}
	job := parseJob(t, sharedQueueJob)
	var ids []string
	for i := range 5 {
		ids = append(ids, submit(t, es[i%2].log, job, nil))
	}
	waitFor(t, "the first run to start", func() bool { return has(t, es[0].log, ids[0], events.RunStarted, "") })
	es[1].stop()
	for _, id := range ids {
		assert.Equal(t, events.StateSuccess, waitFinished(t, es[0].log, id).State)
	}
	startOrder(t, es[0].log, ids)
}
