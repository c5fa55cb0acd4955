package lease

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

// TestStepLeaseHeldWhileItIsRenewed: a step ends while its lease is being
// renewed beside it. The check that the lease is still the worker's must
// not mistake the worker's own renewal for a takeover.
func TestStepLeaseHeldWhileItIsRenewed(t *testing.T) {
	t.Parallel()
	log := testkit.StartLog(t, events.Config{})
	ctx := testkit.Context(t)
	l := &Lease{KV: log.Leases(), Key: "step.renewed", Engine: "e1", TTL: 30 * time.Second, Scope: "s1"}
	require.NoError(t, l.Try(ctx))
	rctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for rctx.Err() == nil {
			_ = l.Renew(rctx)
		}
	}()
	lost := 0
	for range 300 {
		if !l.Held(ctx) {
			lost++
		}
	}
	stop()
	wg.Wait()
	assert.Zero(t, lost, "checks that found the renewed lease lost")
}

// TestStepLeaseHeldAfterARenewalWhoseAnswerWasLost: a renewal reached the
// bucket but its answer did not reach the worker (a timeout under load),
// so the worker's revision is behind its own lease. The lease is still
// the worker's; once another worker takes it over, it is not.
func TestStepLeaseHeldAfterARenewalWhoseAnswerWasLost(t *testing.T) {
	t.Parallel()
	log := testkit.StartLog(t, events.Config{})
	ctx := testkit.Context(t)
	l := &Lease{KV: log.Leases(), Key: "step.unanswered", Engine: "e1", TTL: 300 * time.Millisecond, Scope: "s1"}
	require.NoError(t, l.Try(ctx))
	landed := &Lease{KV: log.Leases(), Key: l.Key, Engine: l.Engine, TTL: l.TTL, Scope: l.Scope, rev: l.rev}
	require.NoError(t, landed.Renew(ctx))
	assert.True(t, l.Held(ctx), "the lease after a renewal of its own that it did not hear of")

	time.Sleep(400 * time.Millisecond)
	other := &Lease{KV: log.Leases(), Key: l.Key, Engine: "e2", TTL: 30 * time.Second, Scope: "s2"}
	require.NoError(t, other.Try(ctx))
	assert.False(t, l.Held(ctx), "the lease after another worker took it over")
	assert.ErrorIs(t, l.Renew(ctx), events.ErrConflict)
	assert.True(t, other.Held(ctx))
}
