package main_test

import (
	"encoding/json"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/engine"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

// clusterSleepJob runs long enough to be cancelled.
const clusterSleepJob = `
schemaVersion: 2
kind: Job
metadata: {name: cluster_sleep}
spec:
  steps:
    - id: nap
      spec: {type: shell, program: sleep, args: ["60"], allowed_programs: [sleep]}
`

// TestClusterAPIWithAStoppedEngine: with one of two engines SIGSTOPped
// (its subscriptions still in the queue group), every request of the CLI
// reaches the engine that answers, through either project root: submits,
// run show, cancels and replay --verify all succeed, none waiting out a
// timeout; --all-engines verifies the live engine only, and --engine with
// the stopped engine's id is exit 3.
func TestClusterAPIWithAStoppedEngine(t *testing.T) {
	clusterChaos(t)
	t.Parallel()
	_, ps, es := twoEngines(t)
	stopped, err := engine.ReadInfo(ps[1].Root)
	require.NoError(t, err)
	live, err := engine.ReadInfo(ps[0].Root)
	require.NoError(t, err)
	for _, p := range ps {
		p.WriteFile(".orbit/jobs/cluster_sleep.yaml", clusterSleepJob)
	}
	require.NoError(t, es[1].Signal(syscall.SIGSTOP))

	var slowest time.Duration
	orbit := func(p *testkit.Project, args ...string) testkit.Result {
		t.Helper()
		began := time.Now()
		r := p.Orbit(args...)
		slowest = max(slowest, time.Since(began))
		assert.NotEqual(t, 3, r.Code, "orbit %s found no engine: %s", strings.Join(args, " "), r)
		return r
	}
	var ids []string
	for i := range 4 {
		r := orbit(ps[i%2], "job", "run", "cluster_sleep", "--detach")
		require.Equal(t, 0, r.Code, r.String())
		ids = append(ids, strings.TrimSpace(r.Stdout))
	}
	for i, id := range ids {
		// A run request the stopped engine had pulled waits out its ack
		// wait before the live engine takes it: until then, the run is
		// not found (exit 1), but the request is answered.
		waitForLong(t, "run "+id+" in the views", func() bool {
			return orbit(ps[i%2], "run", "show", "--json", id).Code == 0
		})
	}
	for i, id := range ids {
		r := orbit(ps[(i+1)%2], "run", "cancel", "--wait", "0", id)
		assert.Equal(t, 0, r.Code, r.String())
	}
	for i, id := range ids {
		assert.Equal(t, events.StateCancelled, waitFinished(t, ps[i%2], id, 90*time.Second))
	}
	for _, p := range ps {
		r := orbit(p, "replay", "--verify")
		assert.Equal(t, 0, r.Code, r.String())
	}
	r := orbit(ps[1], "replay", "--verify", "--all-engines", "--json")
	require.Equal(t, 0, r.Code, r.String())
	var reports []struct{ Engine string }
	require.NoError(t, json.Unmarshal([]byte(r.Stdout), &reports), r.Stdout)
	require.Len(t, reports, 1, r.Stdout)
	assert.Equal(t, live.Engine, reports[0].Engine)

	r = ps[0].Orbit("replay", "--verify", "--engine", stopped.Engine)
	assert.Equal(t, 3, r.Code, r.String())
	t.Logf("the slowest command took %s", slowest.Round(10*time.Millisecond))
	assert.Less(t, slowest, 10*time.Second, "a command waited out a request's timeout")
}

// waitForLong is waitFor with a bound past the ack wait (30 s).
func waitForLong(t *testing.T, what string, cond func() bool) {
	t.Helper()
	waitWithin(t, what, 90*time.Second, 200*time.Millisecond, cond)
}
