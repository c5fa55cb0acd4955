package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/orbitrun/orbit/events"
)

// lease is an engine's claim on a run in the orbit_leases bucket. Only the
// holder interprets the run. A lease that is not renewed within its TTL may
// be taken over; on an embedded store, where the file lock guarantees a
// single engine, any lease held by another engine id is a dead engine's and
// is taken over at once.
type lease struct {
	kv       *events.KV
	key      string
	engine   string
	ttl      time.Duration
	takeOver bool // steal leases of other engines without waiting for expiry
	rev      uint64
}

type leaseRecord struct {
	Engine  string    `json:"engine"`
	Expires time.Time `json:"expires"`
}

func leaseKey(runID string) string { return "run." + events.Token(runID) }

// acquire takes the lease, waiting (and retrying) while a live engine holds it.
func (l *lease) acquire(ctx context.Context) error {
	for {
		err := l.try(ctx)
		if !errors.Is(err, ErrLeaseHeld) && !errors.Is(err, events.ErrConflict) {
			return err
		}
		select {
		case <-time.After(l.ttl / 3):
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

func (l *lease) try(ctx context.Context) error {
	value, err := json.Marshal(leaseRecord{Engine: l.engine, Expires: time.Now().Add(l.ttl).UTC()})
	if err != nil {
		return err
	}
	cur, err := l.kv.Get(ctx, l.key)
	if errors.Is(err, events.ErrNotFound) {
		l.rev, err = l.kv.Create(ctx, l.key, value)
		return err
	}
	if err != nil {
		return err
	}
	var held leaseRecord
	if json.Unmarshal(cur.Value, &held) == nil && held.Engine != l.engine && !l.takeOver && time.Now().Before(held.Expires) {
		return fmt.Errorf("%w: %s until %s", ErrLeaseHeld, held.Engine, held.Expires.Format(time.RFC3339))
	}
	l.rev, err = l.kv.Update(ctx, l.key, value, cur.Revision)
	return err
}

// renew extends the lease. It fails with events.ErrConflict when another
// engine took the lease over.
func (l *lease) renew(ctx context.Context) error {
	value, err := json.Marshal(leaseRecord{Engine: l.engine, Expires: time.Now().Add(l.ttl).UTC()})
	if err != nil {
		return err
	}
	rev, err := l.kv.Update(ctx, l.key, value, l.rev)
	if err != nil {
		return err
	}
	l.rev = rev
	return nil
}

// release gives the lease up.
func (l *lease) release(ctx context.Context) error {
	return l.kv.Delete(ctx, l.key, l.rev)
}

// hold renews the lease until ctx ends, and calls lost if it cannot (another
// engine took it over, or the store stayed unreachable past the TTL).
func (l *lease) hold(ctx context.Context, lost func(error)) {
	tick := time.NewTicker(l.ttl / 3)
	defer tick.Stop()
	lastOK := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			err := l.renew(ctx)
			switch {
			case err == nil:
				lastOK = time.Now()
			case errors.Is(err, events.ErrConflict) || time.Since(lastOK) > l.ttl:
				lost(err)
				return
			}
		}
	}
}
