package retention

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/lease"
)

// LeaseKey is the key of the orbit_leases bucket whose holder makes the
// retention passes of the engines sharing a log: one engine of a cluster
// makes them, the others take over when it stops renewing the lease.
const LeaseKey = "retention.pass"

// DefaultLeaseTTL is how long the pass's lease holds without a renewal.
// Its holder renews it a third of that apart, during a pass and between
// passes.
const DefaultLeaseTTL = 30 * time.Second

// ErrElsewhere: another engine holds the retention pass's lease; the pass
// is its to make.
var ErrElsewhere = fmt.Errorf("%w: another engine makes the retention passes", events.ErrConflict)

// newLease is the pass's lease: held by definition without a bucket.
func newLease(cfg Config) *lease.Lease {
	if cfg.Leases == nil {
		return &lease.Lease{}
	}
	ttl := cfg.LeaseTTL
	if ttl <= 0 {
		ttl = DefaultLeaseTTL
	}
	return &lease.Lease{KV: cfg.Leases, Key: LeaseKey, Engine: cfg.Engine, TTL: ttl, TakeOver: cfg.TakeOver}
}

// take takes or renews the pass's lease; ErrElsewhere when another
// engine holds it, or took it at the same moment.
func (c *Collector) take(ctx context.Context) error {
	err := c.lease.Try(ctx)
	var held *lease.HeldError
	switch {
	case errors.As(err, &held):
		return fmt.Errorf("%w: engine %s, whose lease holds until %s unless renewed", ErrElsewhere, held.Holder, held.Until.Format(time.RFC3339))
	case errors.Is(err, events.ErrConflict):
		return fmt.Errorf("%w: an engine took the lease at the same moment", ErrElsewhere)
	case err != nil:
		return err
	}
	c.holding.Store(true)
	return nil
}

// errLeaseLost ends a pass whose lease another engine took over (this
// engine stopped renewing it in time: a pause, a partition).
var errLeaseLost = errors.New("the retention pass's lease was taken over by another engine")

// held runs pass under the lease, renewed while it runs: a pass whose
// lease is lost is cancelled at once, so that two engines never purge
// at the same time.
func (c *Collector) held(ctx context.Context, pass func(context.Context) error) error {
	if c.lease.KV == nil {
		return pass(ctx)
	}
	pctx, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.lease.Hold(pctx, func(err error) {
			c.holding.Store(false)
			cancel(fmt.Errorf("%w: %v", errLeaseLost, err))
		})
	}()
	err := pass(pctx)
	cancel(nil)
	<-done
	if cause := context.Cause(pctx); errors.Is(cause, errLeaseLost) {
		return cause
	}
	return err
}

// renew keeps the lease between passes while this engine holds it.
func (c *Collector) renew(ctx context.Context) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.holding.Load() {
		return
	}
	if err := c.lease.Renew(ctx); errors.Is(err, events.ErrConflict) {
		c.holding.Store(false)
		c.cfg.Logger.Info("another engine took the retention passes over")
	}
}

// release gives the lease up when this engine stops, so that another
// takes the passes over without waiting for it to lapse.
func (c *Collector) release() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.holding.Load() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.lease.Release(ctx); err != nil {
		c.cfg.Logger.Warn("could not give the retention pass's lease up; another engine takes it when it lapses", "err", err)
	}
	c.holding.Store(false)
}
