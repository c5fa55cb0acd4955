package retention_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
	"github.com/orbitrun/orbit/retention"
)

// TestOneEngineOfAClusterMakesThePasses: two engines on a three-server
// cluster, each with its own views and collector. The first to pass takes
// the pass's lease; the other's pass is refused (ErrElsewhere, naming the
// holder) and removes nothing. The holder's loop renews the lease between
// passes, so the other stays out well past the lease's TTL; when the
// holder stops it gives the lease up and the other passes at once; when
// the holder dies (stops renewing) the other takes over once the lease
// lapses, and the dead one, back, is refused in its turn.
func TestOneEngineOfAClusterMakesThePasses(t *testing.T) {
	t.Parallel()
	logs := testkit.LeasesLeaderAndFollower(t)
	const ttl = 2 * time.Second
	policy := assets.RetentionConfig{Runs: assets.RunRetention{KeepPerJob: 1}, Every: time.Hour}
	var rigs [2]*rig
	var cs [2]*retention.Collector
	for i, l := range logs {
		rigs[i] = rigOn(t, l, t.TempDir())
		cs[i] = retention.New(retention.Config{Log: l, Views: rigs[i].views, Root: rigs[i].root,
			Policy: func() assets.RetentionConfig { return policy }, Now: func() time.Time { return time.Now().Add(48 * time.Hour) },
			Leases: l.Leases(), Engine: []string{"E1", "E2"}[i], LeaseTTL: ttl})
	}
	a, b := rigs[0], rigs[1]
	a.run("A1", "a", "", events.StateSuccess)
	a.run("A2", "a", "", events.StateSuccess)
	for _, r := range rigs {
		last, err := r.log.LastSeq(r.ctx)
		require.NoError(t, err)
		require.NoError(t, r.views.WaitFor(r.ctx, last))
	}

	rep, err := cs[0].Collect(a.ctx, false)
	require.NoError(t, err)
	assert.Equal(t, []string{"A1"}, rep.Runs)
	a.run("A3", "a", "", events.StateSuccess)
	_, err = cs[1].Collect(b.ctx, false)
	require.ErrorIs(t, err, retention.ErrElsewhere)
	assert.Contains(t, err.Error(), "E1")
	dry, err := cs[1].Collect(b.ctx, true)
	require.NoError(t, err, "a dry run needs no lease")
	assert.Contains(t, dry.Runs, "A2")

	// The holder's loop keeps the lease between its passes.
	ctx, stop := context.WithCancel(a.ctx)
	done := make(chan struct{})
	go func() { defer close(done); cs[0].Run(ctx) }()
	time.Sleep(2 * ttl)
	_, err = cs[1].Collect(b.ctx, false)
	require.ErrorIs(t, err, retention.ErrElsewhere, "the holder renews the lease between passes")
	// Stopped, it gives the lease up: the other passes at once.
	stop()
	<-done
	rep, err = cs[1].Collect(b.ctx, false)
	require.NoError(t, err)
	assert.Equal(t, []string{"A2"}, rep.Runs)

	// The new holder dies (no loop renews its lease): the first takes
	// the passes over once the lease lapses, and the dead one is
	// refused when it comes back.
	_, err = cs[0].Collect(a.ctx, false)
	require.ErrorIs(t, err, retention.ErrElsewhere)
	time.Sleep(ttl + 500*time.Millisecond)
	_, err = cs[0].Collect(a.ctx, false)
	require.NoError(t, err)
	_, err = cs[1].Collect(b.ctx, false)
	require.ErrorIs(t, err, retention.ErrElsewhere)
}
