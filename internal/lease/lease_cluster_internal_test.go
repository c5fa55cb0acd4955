package lease

import (
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

// openOnFollower opens an engine's log on a 3-node cluster connected to
// one node that does not lead the leases bucket: reads from it are
// answered first by its own replica, which may lag the bucket's leader.
func openOnFollower(t *testing.T) (*testkit.Cluster, *events.Log) {
	t.Helper()
	c := testkit.StartCluster(t, filepath.Join(t.TempDir(), "creds"))
	first, err := events.Open(testkit.Context(t), events.Config{URL: c.URLs(), NKeySeedFile: c.Creds.File(events.IdentityEngine),
		Redactor: &events.Redactor{}, Name: "provision"})
	require.NoError(t, err)
	first.Close()
	leader, err := c.StreamLeader(testkit.Context(t), "KV_"+events.LeasesBucket)
	require.NoError(t, err)
	log, err := events.Open(testkit.Context(t), events.Config{URL: c.Nodes[(leader+1)%len(c.Nodes)].URL(),
		NKeySeedFile: c.Creds.File(events.IdentityEngine), Redactor: &events.Redactor{}, Name: "follower"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = log.Close() })
	return c, log
}

// TestStepLeaseHeldRightAfterItIsTakenOnACluster: workers check their
// step leases as soon as short steps end, many at once. On a replicated
// bucket that check must see the lease the worker has just written, not a
// lagging replica's older copy of it (or none), or the step's result is
// dropped though no one took the step over.
func TestStepLeaseHeldRightAfterItIsTakenOnACluster(t *testing.T) {
	t.Parallel()
	_, log := openOnFollower(t)
	ctx := testkit.Context(t)
	var lost atomic.Int64
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20 {
				l := &Lease{KV: log.Leases(), Key: fmt.Sprintf("step.held-%d-%d", g, i), Engine: "e1",
					TTL: 30 * time.Second, Scope: fmt.Sprintf("s%d-%d", g, i)}
				if !assert.NoError(t, l.Try(ctx)) {
					return
				}
				if !l.Held(ctx) {
					lost.Add(1)
				}
				if !l.Held(ctx) {
					lost.Add(1)
				}
				_ = l.Release(ctx)
			}
		}()
	}
	wg.Wait()
	assert.Zero(t, lost.Load(), "checks that found a lease no one took over lost")
}

// TestStepLeaseTakenOverOnAClusterIsNotHeld: fencing on a replicated
// bucket. Once another worker has taken an expired step lease over, its
// first holder no longer holds it, and cannot renew it.
func TestStepLeaseTakenOverOnAClusterIsNotHeld(t *testing.T) {
	t.Parallel()
	_, log := openOnFollower(t)
	ctx := testkit.Context(t)
	first := &Lease{KV: log.Leases(), Key: "step.fenced", Engine: "e1", TTL: 300 * time.Millisecond}
	require.NoError(t, first.Try(ctx))
	second := &Lease{KV: log.Leases(), Key: "step.fenced", Engine: "e2", TTL: 30 * time.Second}
	require.ErrorIs(t, second.Try(ctx), ErrHeld)
	time.Sleep(400 * time.Millisecond)
	require.NoError(t, second.Try(ctx))
	assert.False(t, first.Held(ctx), "the first holder after the takeover")
	assert.ErrorIs(t, first.Renew(ctx), events.ErrConflict)
	assert.True(t, second.Held(ctx), "the worker that took the lease over")
}
