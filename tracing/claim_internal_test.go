package tracing

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

// TestTheExportClaimIsOneEnginesAtATime: a live claim keeps other engines
// out; a lapsed or released one is taken over with its position and what
// was in flight, and the engine that held it learns that it lost it at
// its next write. On an embedded store any other engine's claim is taken
// at once.
func TestTheExportClaimIsOneEnginesAtATime(t *testing.T) {
	t.Parallel()
	ctx := testkit.Context(t)
	l := testkit.StartLog(t, events.Config{})
	a := &claim{kv: l.Leases(), engine: "a"}
	b := &claim{kv: l.Leases(), engine: "b"}
	require.NoError(t, a.try(ctx))
	assert.Zero(t, a.Position)
	assert.ErrorIs(t, b.try(ctx), errHeld)

	a.Position, a.InFlight = 42, 50
	require.NoError(t, a.write(ctx, false))
	assert.ErrorIs(t, b.try(ctx), errHeld, "a renewed claim holds")

	// a stops renewing: its claim lapses.
	cur, err := l.Leases().Latest(ctx, ClaimKey)
	require.NoError(t, err)
	var lapsed Claim
	require.NoError(t, json.Unmarshal(cur.Value, &lapsed))
	lapsed.Expires = time.Now().Add(-time.Second)
	value, err := json.Marshal(lapsed)
	require.NoError(t, err)
	_, err = l.Leases().Update(ctx, ClaimKey, value, cur.Revision)
	require.NoError(t, err)
	require.NoError(t, b.try(ctx))
	assert.Equal(t, uint64(42), b.Position)
	assert.Equal(t, uint64(50), b.InFlight, "the next holder knows what may have been exported")
	assert.ErrorIs(t, a.write(ctx, false), errClaimLost)

	// b stops cleanly: a takes over at once.
	b.Position, b.InFlight = 60, 0
	require.NoError(t, b.write(ctx, false))
	require.NoError(t, b.release(ctx))
	require.NoError(t, a.try(ctx))
	assert.Equal(t, uint64(60), a.Position)

	c := &claim{kv: l.Leases(), engine: "c", takeOver: true}
	require.NoError(t, c.try(ctx), "on an embedded store the claim of another engine is a dead one's")
	assert.Equal(t, uint64(60), c.Position)
	assert.ErrorIs(t, a.write(ctx, false), errClaimLost)
}
