package executor

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/lease"
)

// adoptOrphans takes over, every third of the lease TTL, the started runs
// whose lease no engine renews: their engine died or was cut off. Each is
// admitted as after a restart (it holds its slot) and its interpreter
// picks up where the history stops. On an embedded store, where one engine
// runs by the file lock, recover at start does this. The returned func
// waits until the watch has stopped (ctx ended).
//
// A run is taken over between one TTL and a TTL and a third after its
// holder's last renewal; its in-flight steps are redelivered to the
// workers of live engines after the ack wait.
func (o *Orchestrator) adoptOrphans(ctx context.Context) func() {
	done := make(chan struct{})
	if o.cfg.Log.Embedded() || o.cfg.ActiveRuns == nil {
		close(done)
		return func() { <-done }
	}
	go func() {
		defer close(done)
		tick := time.NewTicker(o.cfg.LeaseTTL / 3)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				if err := o.adopt(ctx); err != nil && ctx.Err() == nil {
					o.log.Warn("looking for runs to take over", "err", err)
				}
				o.retryQueued(ctx)
			}
		}
	}()
	return func() { <-done }
}

// adopt admits every unfinished started run this engine does not hold
// whose lease has lapsed.
func (o *Orchestrator) adopt(ctx context.Context) error {
	ids, err := o.cfg.ActiveRuns(ctx)
	if err != nil {
		return err
	}
	for _, id := range ids {
		o.mu.Lock()
		_, known := o.runs[id]
		o.mu.Unlock()
		if known || !o.orphaned(ctx, id) {
			continue
		}
		rc, err := o.loadRun(ctx, id)
		if err != nil {
			return err
		}
		if !rc.started {
			continue
		}
		o.log.Info("taking over a run whose lease lapsed", "run", id)
		o.admit(ctx, rc)
	}
	return nil
}

// leaseKey names run runID's lease in the leases bucket.
func leaseKey(runID string) string { return "run." + events.Token(runID) }

// orphaned reports whether run id's lease has lapsed or is gone. A lease
// that cannot be read is not taken for lapsed.
func (o *Orchestrator) orphaned(ctx context.Context, id string) bool {
	entry, err := o.cfg.Log.Leases().Get(ctx, leaseKey(id))
	if errors.Is(err, events.ErrNotFound) {
		return true
	}
	if err != nil {
		return false
	}
	var held lease.Record
	if err := json.Unmarshal(entry.Value, &held); err != nil {
		return true
	}
	return time.Now().After(held.Expires)
}
