package executor

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
	l := &lease{kv: log.Leases(), key: "step.renewed", engine: "e1", ttl: 30 * time.Second, scope: "s1"}
	require.NoError(t, l.try(ctx))
	rctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for rctx.Err() == nil {
			_ = l.renew(rctx)
		}
	}()
	lost := 0
	for range 300 {
		if !l.held(ctx) {
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
	l := &lease{kv: log.Leases(), key: "step.unanswered", engine: "e1", ttl: 300 * time.Millisecond, scope: "s1"}
	require.NoError(t, l.try(ctx))
	landed := &lease{kv: log.Leases(), key: l.key, engine: l.engine, ttl: l.ttl, scope: l.scope, rev: l.rev}
	require.NoError(t, landed.renew(ctx))
	assert.True(t, l.held(ctx), "the lease after a renewal of its own that it did not hear of")

	time.Sleep(400 * time.Millisecond)
	other := &lease{kv: log.Leases(), key: l.key, engine: "e2", ttl: 30 * time.Second, scope: "s2"}
	require.NoError(t, other.try(ctx))
	assert.False(t, l.held(ctx), "the lease after another worker took it over")
	assert.ErrorIs(t, l.renew(ctx), events.ErrConflict)
	assert.True(t, other.held(ctx))
}
