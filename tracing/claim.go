package tracing

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/orbitrun/orbit/events"
)

// ClaimKey is the key of the orbit_leases bucket that says which engine
// exports the log's spans and how far it has come: one engine of a
// cluster exports them, the others wait to take over when it stops
// renewing the claim.
const ClaimKey = "tracing.export"

// ClaimTTL is how long a claim holds without renewal; its holder renews
// it a third of that after each write.
const ClaimTTL = 6 * time.Second

// Claim is the value of ClaimKey.
type Claim struct {
	Engine  string    `json:"engine"`
	Expires time.Time `json:"expires"`
	// Position is the sequence of the last event whose spans are exported.
	Position uint64 `json:"position"`
	// InFlight, when set, is the last event whose spans were being
	// exported when the claim was written: whether those past Position
	// reached the collector is unknown, so an engine that starts from
	// this claim exports them again marked orbit.reexported.
	InFlight uint64 `json:"in_flight,omitempty"`
}

// errClaimLost is a write of the claim refused: another engine took it.
var errClaimLost = errors.New("tracing: another engine took the export of the spans over")

// claim is this engine's hold on ClaimKey.
type claim struct {
	kv       *events.KV
	engine   string
	takeOver bool // an embedded store: the claim of any other engine is a dead one's
	rev      uint64
	written  time.Time
	Claim
}

// acquire waits until this engine holds the claim: it is free, expired,
// or (on an embedded store, where one engine runs) another engine's.
func (c *claim) acquire(ctx context.Context) error {
	for {
		err := c.try(ctx)
		if err == nil {
			return nil
		}
		if !errors.Is(err, errHeld) && !errors.Is(err, events.ErrConflict) && !errors.Is(err, events.ErrUnavailable) {
			return err
		}
		select {
		case <-time.After(ClaimTTL / 3):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

var errHeld = errors.New("tracing: another engine exports the spans")

func (c *claim) try(ctx context.Context) error {
	cur, err := c.kv.Latest(ctx, ClaimKey)
	if errors.Is(err, events.ErrNotFound) {
		c.Claim = Claim{Engine: c.engine}
		return c.write(ctx, true)
	}
	if err != nil {
		return err
	}
	var held Claim
	if err := json.Unmarshal(cur.Value, &held); err != nil {
		return err
	}
	if held.Engine != c.engine && !c.takeOver && time.Now().Before(held.Expires) {
		return errHeld
	}
	c.Claim, c.rev = held, cur.Revision
	c.Engine = c.engine
	return c.write(ctx, false)
}

// write stores the claim, renewed, at its last revision; errClaimLost when
// another engine wrote it since.
func (c *claim) write(ctx context.Context, create bool) error {
	at := time.Now()
	c.Expires = at.Add(ClaimTTL).UTC()
	value, err := json.Marshal(c.Claim)
	if err != nil {
		return err
	}
	var rev uint64
	if create {
		rev, err = c.kv.Create(ctx, ClaimKey, value)
	} else {
		rev, err = c.kv.Update(ctx, ClaimKey, value, c.rev)
	}
	if errors.Is(err, events.ErrConflict) && !create {
		return errClaimLost
	}
	if err != nil {
		return err
	}
	c.rev, c.written = rev, at
	return nil
}

// due reports whether the claim is to be renewed.
func (c *claim) due() bool { return time.Since(c.written) >= ClaimTTL/3 }

// release gives the claim up at once, keeping the position, so that
// another engine takes over without waiting for it to expire.
func (c *claim) release(ctx context.Context) error {
	c.Expires = time.Time{}
	value, err := json.Marshal(c.Claim)
	if err != nil {
		return err
	}
	_, err = c.kv.Update(ctx, ClaimKey, value, c.rev)
	return err
}
