package main_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/engine"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
	"github.com/orbitrun/orbit/projector"
)

// clusterChaos skips the heavy cluster tests unless CLUSTER_CHAOS is set
// (make cluster-chaos).
func clusterChaos(t *testing.T) {
	t.Helper()
	if os.Getenv("CLUSTER_CHAOS") == "" {
		t.Skip("a heavy cluster test: make cluster-chaos runs it")
	}
}

// leaseHolder returns the index in ps of the engine holding run id's lease,
// waiting until one does.
func leaseHolder(t *testing.T, c *testkit.Cluster, ps [2]*testkit.Project, id string) int {
	t.Helper()
	ctx := testkit.Context(t)
	js, err := jetstream.New(c.Connect())
	require.NoError(t, err)
	kv, err := js.KeyValue(ctx, events.LeasesBucket)
	require.NoError(t, err)
	holder := -1
	waitFor(t, "a lease on the run", func() bool {
		entry, err := kv.Get(ctx, "run."+events.Token(id))
		if err != nil {
			return false
		}
		var rec struct{ Engine string }
		if json.Unmarshal(entry.Value(), &rec) != nil {
			return false
		}
		for i, p := range ps {
			if info, err := engine.ReadInfo(p.Root); err == nil && info.Engine == rec.Engine {
				holder = i
				return true
			}
		}
		return false
	})
	return holder
}

// startFanOut submits the fan-out job with n items through p, detached.
func startFanOut(t *testing.T, p *testkit.Project, n int) (id, out string, items []string) {
	t.Helper()
	out = filepath.Join(t.TempDir(), "side.txt")
	for i := range n {
		items = append(items, fmt.Sprintf("i%02d", i))
	}
	input, _ := json.Marshal(map[string]any{"items": strings.Join(items, " "), "out": out})
	r := p.Orbit("job", "run", "cluster_fan_out", "--detach", "--input", string(input))
	require.Equal(t, 0, r.Code, r.String())
	return strings.TrimSpace(r.Stdout), out, items
}

// waitForItems waits until the fan-out job has written n items to out.
func waitForItems(t *testing.T, out string, n int) {
	t.Helper()
	waitFor(t, "a few items done", func() bool {
		data, _ := os.ReadFile(out)
		return strings.Count(string(data), "\n") >= n
	})
}

// waitFinished waits up to timeout for run id to end in p's views.
func waitFinished(t *testing.T, p *testkit.Project, id string, timeout time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		// A stopped engine leaves its share of API requests unanswered
		// (exit 3): ask again.
		r := p.Orbit("run", "show", "--json", id)
		var v projector.RunView
		if r.Code == 0 {
			require.NoError(t, json.Unmarshal([]byte(r.Stdout), &v), r.Stdout)
			if events.Terminal(v.State) {
				return v.State
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s still %q after %s: %s", id, v.State, timeout, r)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestClusterEngineKilledMidRun: kill -9 of the engine holding a run's
// lease; the other engine takes the run over once the lease lapses and
// finishes it, every item done.
func TestClusterEngineKilledMidRun(t *testing.T) {
	clusterChaos(t)
	c, ps, es := twoEngines(t)
	id, out, items := startFanOut(t, ps[0], 12)
	holder := leaseHolder(t, c, ps, id)
	waitForItems(t, out, 2)
	killed := time.Now()
	es[holder].Kill()
	other := 1 - holder
	assert.Equal(t, events.StateSuccess, waitFinished(t, ps[other], id, 90*time.Second))
	t.Logf("the run finished %s after its engine's kill -9", time.Since(killed).Round(100*time.Millisecond))
	done := sideEffects(t, out)
	for _, item := range items {
		assert.NotEmpty(t, done[item], "item %s has no side effect", item)
	}
	assert.Equal(t, 0, ps[other].Orbit("replay", "--verify").Code)
}

const clusterSerialJob = `
schemaVersion: 2
kind: Job
metadata: {name: cluster_serial}
spec:
  max_active_runs: 1
  steps:
    - id: work
      spec:
        type: shell
        program: sh
        args: ["-c", "sleep 0.5"]
        allowed_programs: [sh]
`

// TestClusterMaxActiveRunsHoldsAcrossEngines: six runs of a job with
// max_active_runs: 1, submitted through both engines, never run two at a
// time, as the log's sequence of run.started and run.finished shows.
func TestClusterMaxActiveRunsHoldsAcrossEngines(t *testing.T) {
	clusterChaos(t)
	ctx := testkit.Context(t)
	c, ps, _ := twoEngines(t)
	ids := map[string]bool{}
	for i := range 6 {
		p := ps[i%2]
		p.WriteFile(".orbit/jobs/cluster_serial.yaml", clusterSerialJob)
		r := p.Orbit("job", "run", "cluster_serial", "--detach")
		require.Equal(t, 0, r.Code, r.String())
		ids[strings.TrimSpace(r.Stdout)] = true
	}
	for id := range ids {
		assert.Equal(t, events.StateSuccess, waitFinished(t, ps[0], id, 90*time.Second))
	}

	// The log's own reader reads to its last matching event (an ordered
	// consumer's wait for the next message ended early under load).
	l, err := events.Dial(ctx, c.URLs(), events.Config{NKeySeedFile: c.Creds.File(events.IdentityEngine)})
	require.NoError(t, err)
	defer l.Close()
	evs, err := l.Read(ctx, events.FollowOptions{Filters: []string{
		events.TypeFilter(events.AggregateRun, events.RunStarted),
		events.TypeFilter(events.AggregateRun, events.RunFinished),
	}})
	require.NoError(t, err)
	running, most, starts := 0, 0, 0
	for _, ev := range evs {
		if !ids[ev.RunID] {
			continue
		}
		switch ev.Type {
		case events.RunStarted:
			running++
			starts++
		case events.RunFinished:
			running--
		}
		most = max(most, running)
	}
	assert.Equal(t, 6, starts, "every run started once")
	assert.Equal(t, 1, most, "runs of a job with max_active_runs: 1 at once")
}

// TestClusterEngineStopsOnSIGTERMWithNoServer: with every server of the
// cluster gone mid-run, an engine still exits promptly on SIGTERM.
func TestClusterEngineStopsOnSIGTERMWithNoServer(t *testing.T) {
	clusterChaos(t)
	c, ps, es := twoEngines(t)
	id, out, _ := startFanOut(t, ps[0], 8)
	waitFor(t, "an item done", func() bool {
		data, _ := os.ReadFile(out)
		return strings.Count(string(data), "\n") >= 1
	})
	c.Stop()
	time.Sleep(time.Second)
	for i, e := range es {
		start := time.Now()
		require.NoError(t, e.Signal(syscall.SIGTERM))
		exited := make(chan error, 1)
		go func() { exited <- e.Cmd.Wait() }()
		select {
		case <-exited:
			t.Logf("engine %d exited %s after SIGTERM with no server (run %s in flight)", i, time.Since(start).Round(10*time.Millisecond), id)
		case <-time.After(10 * time.Second):
			_ = e.Signal(syscall.SIGQUIT) // its goroutines, for the report
			time.Sleep(time.Second)
			t.Fatalf("engine %d did not exit within 10s of SIGTERM with no server:\n%s", i, e.Stderr())
		}
	}
}

// TestClusterStoppedEngineIsFenced: the engine holding a run is SIGSTOPped
// past its lease; the other takes the run over and finishes it, and the
// stopped one, let go on, finds its lease taken and records no second end.
func TestClusterStoppedEngineIsFenced(t *testing.T) {
	clusterChaos(t)
	c, ps, es := twoEngines(t)
	id, out, items := startFanOut(t, ps[0], 12)
	holder := leaseHolder(t, c, ps, id)
	waitForItems(t, out, 2)
	require.NoError(t, es[holder].Signal(syscall.SIGSTOP))
	other := 1 - holder
	assert.Equal(t, events.StateSuccess, waitFinished(t, ps[other], id, 90*time.Second))
	require.NoError(t, es[holder].Signal(syscall.SIGCONT))
	waitFor(t, "the stopped engine to find its lease gone", func() bool {
		return strings.Contains(es[holder].Stderr(), "lease lost")
	})
	time.Sleep(2 * time.Second)
	finished := 0
	for _, ev := range runEvents(t, ps[other], id) {
		if ev.Type == events.RunFinished {
			finished++
		}
	}
	assert.Equal(t, 1, finished, "run.finished events")
	done := sideEffects(t, out)
	for _, item := range items {
		assert.NotEmpty(t, done[item], "item %s has no side effect", item)
	}
	assert.Equal(t, events.StateSuccess, runView(t, ps[holder], id).State)
}
