package events_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

// TestALogMadeBeforeRetentionKeepsDenyingPurges: an event stream made
// with deny_purge (as every log before retention was) cannot have it
// lifted: the server refuses the update (nats-server's stream
// configuration check "can not cancel deny purge"), so the engine cannot
// lift it either. Health and PurgeAllowed report it, for orbit doctor and
// the retention pass.
func TestALogMadeBeforeRetentionKeepsDenyingPurges(t *testing.T) {
	t.Parallel()
	ctx := testkit.Context(t)
	l := testkit.StartLog(t, events.Config{Listen: "127.0.0.1:0"})
	h, err := l.Health(ctx)
	require.NoError(t, err)
	assert.False(t, h[0].DenyPurge)
	js := outsider(t, l)
	cfg := testkit.RemakeDenyingPurges(ctx, t, js)

	cfg.DenyPurge = false
	_, err = js.UpdateStream(ctx, cfg)
	require.Error(t, err, "a stream update lifted deny_purge")
	assert.Contains(t, err.Error(), "can not cancel deny purge")
	h, err = l.Health(ctx)
	require.NoError(t, err)
	assert.True(t, h[0].DenyPurge)
	allowed, err := l.PurgeAllowed(ctx)
	require.NoError(t, err)
	assert.False(t, allowed)
}
