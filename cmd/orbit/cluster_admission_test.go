package main_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

// clusterQueueJob runs one at a time and writes its run's mark to a file.
const clusterQueueJob = `
schemaVersion: 2
kind: Job
metadata: {name: cluster_queue}
spec:
  max_active_runs: 1
  steps:
    - id: work
      spec:
        type: shell
        program: sh
        args: ["-c", "echo \"$1\" >> \"$2\"; sleep \"$3\"", "sh", "{{ input.mark }}", "{{ input.out }}", "{{ input.nap }}"]
        allowed_programs: [sh]
`

// lifecycleEvent is a run.requested, run.started or run.finished of the
// log, in the log's order.
type lifecycleEvent struct {
	run, typ, engine string
}

// lifecycle reads, in the log's order, the lifecycle events of the runs
// of job.
func lifecycle(t *testing.T, c *testkit.Cluster, job string) []lifecycleEvent {
	t.Helper()
	var out []lifecycleEvent
	for _, ev := range logEvents(t, c, events.RunRequested, events.RunStarted, events.RunFinished) {
		if ev.Job != job {
			continue
		}
		le := lifecycleEvent{run: ev.RunID, typ: ev.Type}
		if ev.Type == events.RunStarted {
			var d events.RunStartedData
			require.NoError(t, ev.Decode(&d))
			le.engine = d.Engine
		}
		out = append(out, le)
	}
	return out
}

// submitQueued submits n runs of cluster_queue, alternately through each
// engine, each writing its mark to out and sleeping nap seconds; it
// returns their ids in the order submitted.
func submitQueued(t *testing.T, ps [2]*testkit.Project, n int, out, nap string) []string {
	t.Helper()
	var ids []string
	for i := range n {
		p := ps[i%2]
		input, _ := json.Marshal(map[string]any{"mark": fmt.Sprintf("m%02d", i), "out": out, "nap": nap})
		r := p.Orbit("job", "run", "cluster_queue", "--detach", "--input", string(input))
		require.Equal(t, 0, r.Code, r.String())
		ids = append(ids, strings.TrimSpace(r.Stdout))
	}
	return ids
}

// checkAdmission asserts, from the log, that the runs of job were started
// once each, in the order of their run.requested, never more than one at
// a time.
func checkAdmission(t *testing.T, evs []lifecycleEvent, n int) {
	t.Helper()
	var requested, started []string
	starts := map[string]int{}
	running, most := 0, 0
	for _, ev := range evs {
		switch ev.typ {
		case events.RunRequested:
			requested = append(requested, ev.run)
		case events.RunStarted:
			started = append(started, ev.run)
			starts[ev.run]++
			running++
		case events.RunFinished:
			running--
		}
		most = max(most, running)
	}
	require.Len(t, requested, n)
	assert.Equal(t, requested, started, "runs started in the order they were requested")
	for _, id := range requested {
		assert.Equal(t, 1, starts[id], "run.started of %s", id)
	}
	assert.Equal(t, 1, most, "runs of a job with max_active_runs: 1 at once")
}

// TestClusterAdmissionIsFIFOAcrossEngines: runs of a job at its
// max_active_runs, submitted through both engines, start in the order of
// their run.requested in the log, and both engines start some.
func TestClusterAdmissionIsFIFOAcrossEngines(t *testing.T) {
	clusterChaos(t)
	t.Parallel()
	c, ps, _ := twoEngines(t)
	writeJobOnEach(ps, "cluster_queue", clusterQueueJob)
	ids := submitQueued(t, ps, 8, filepath.Join(t.TempDir(), "side.txt"), "0.3")
	for _, id := range ids {
		assert.Equal(t, events.StateSuccess, waitFinished(t, ps[0], id, 90*time.Second))
	}
	evs := lifecycle(t, c, "cluster_queue")
	checkAdmission(t, evs, len(ids))
	engines := map[string]int{}
	for _, ev := range evs {
		if ev.typ == events.RunStarted {
			engines[ev.engine]++
		}
	}
	t.Logf("runs started per engine: %v", engines)
}

// TestClusterQueuedRunsOfAKilledEngineStart: runs queued behind a running
// one, submitted through both engines; the engine not running it is
// killed -9. The survivor starts every queued run, each once and in the
// order requested, without waiting for the dead engine's restart.
func TestClusterQueuedRunsOfAKilledEngineStart(t *testing.T) {
	clusterChaos(t)
	t.Parallel()
	c, ps, es := twoEngines(t)
	writeJobOnEach(ps, "cluster_queue", clusterQueueJob)
	out := filepath.Join(t.TempDir(), "side.txt")
	ids := submitQueued(t, ps, 6, out, "2")
	holder := leaseHolder(t, c, ps, ids[0])
	killed := time.Now()
	es[1-holder].Kill()
	for _, id := range ids {
		assert.Equal(t, events.StateSuccess, waitFinished(t, ps[holder], id, 90*time.Second))
	}
	t.Logf("every queued run finished %s after the other engine's kill -9", time.Since(killed).Round(100*time.Millisecond))
	checkAdmission(t, lifecycle(t, c, "cluster_queue"), len(ids))
	data, err := os.ReadFile(out)
	require.NoError(t, err)
	// The step the killed engine's worker was running, if any, ran
	// again after its ack wait: at least once, as after any engine kill.
	again := 0
	for i := range ids {
		n := strings.Count(string(data), fmt.Sprintf("m%02d\n", i))
		assert.NotZero(t, n, "side effects of run %d", i)
		again += max(n-1, 0)
	}
	assert.LessOrEqual(t, again, 1, "steps run again after the kill:\n%s", data)
}

// clusterSpreadJob invokes itself four times from a fan-out at
// max_active_runs 1: each child borrows its parent's slot, one at a time,
// whichever engine takes its request.
const clusterSpreadJob = `
schemaVersion: 2
kind: Job
metadata: {name: cluster_spread}
spec:
  max_active_runs: 1
  default_input: {leaf: no}
  steps:
    - id: kids
      when: "{{ input.leaf }} != yes"
      fan_out:
        items: "a, b, c, d"
        max_workers: 4
        worker:
          id: kid
          spec: {type: deterministic, action: job.invoke, config: {job: cluster_spread, input: {leaf: yes}}}
      fan_in: {join: {mode: all}}
    - id: nap
      spec: {type: deterministic, action: sleep, config: {ms: 300}}
`

// TestClusterChildRunsBorrowTheirParentsSlot: a job at max_active_runs 1
// that invokes itself finishes on two engines, whichever engine takes its
// children's requests: a child runs in its running parent's slot, one
// child at a time, as on one engine.
func TestClusterChildRunsBorrowTheirParentsSlot(t *testing.T) {
	clusterChaos(t)
	t.Parallel()
	c, ps, _ := twoEngines(t)
	writeJobOnEach(ps, "cluster_spread", clusterSpreadJob)
	r := ps[0].Orbit("job", "run", "cluster_spread", "--detach")
	require.Equal(t, 0, r.Code, r.String())
	root := strings.TrimSpace(r.Stdout)
	assert.Equal(t, events.StateSuccess, waitFinished(t, ps[0], root, 90*time.Second))

	running, most, children := 0, 0, 0
	engines := map[string]int{}
	evs := lifecycle(t, c, "cluster_spread")
	for _, ev := range evs {
		if ev.run == root {
			continue
		}
		switch ev.typ {
		case events.RunStarted:
			running++
			children++
			engines[ev.engine]++
		case events.RunFinished:
			running--
		}
		most = max(most, running)
	}
	assert.Equal(t, 4, children, "children started: %v", evs)
	assert.Equal(t, 1, most, "children running at once")
	t.Logf("children started per engine: %v", engines)
}

// writeJobOnEach writes job as .orbit/jobs/<name>.yaml in each project of
// the cluster.
func writeJobOnEach(ps [2]*testkit.Project, name, job string) {
	for _, p := range ps {
		p.WriteFile(".orbit/jobs/"+name+".yaml", job)
	}
}
