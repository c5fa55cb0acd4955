package events_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

// TestADialledLogHasNoCommandQueue: the command queue's and the buckets'
// methods on a log made by Dial (a client's) return ErrNotEngine instead
// of panicking on what only an engine binds.
func TestADialledLogHasNoCommandQueue(t *testing.T) {
	t.Parallel()
	ctx := testkit.Context(t)
	l := testkit.StartLog(t, events.Config{Listen: "127.0.0.1:0"})
	client := dialAs(ctx, t, l, events.IdentityClient)

	_, err := client.Pending(ctx, "run.R1")
	assert.ErrorIs(t, err, events.ErrNotEngine, "Pending")
	_, err = client.CommandsLastSeq(ctx, "run.request")
	assert.ErrorIs(t, err, events.ErrNotEngine, "CommandsLastSeq")
	_, err = client.Consume(ctx, events.ConsumerSpec{Durable: "d", Command: "run.*"}, func(*events.Command) {})
	assert.ErrorIs(t, err, events.ErrNotEngine, "Consume")
	_, err = client.QueueDepths(ctx)
	assert.ErrorIs(t, err, events.ErrNotEngine, "QueueDepths")
	for _, kv := range []*events.KV{client.Leases(), client.Locks()} {
		_, err = kv.Get(ctx, "k")
		assert.ErrorIs(t, err, events.ErrNotEngine, "Get")
		_, err = kv.Create(ctx, "k", nil)
		assert.ErrorIs(t, err, events.ErrNotEngine, "Create")
		_, err = kv.Update(ctx, "k", nil, 1)
		assert.ErrorIs(t, err, events.ErrNotEngine, "Update")
		assert.ErrorIs(t, kv.Delete(ctx, "k", 1), events.ErrNotEngine, "Delete")
		_, err = kv.Keys(ctx)
		assert.ErrorIs(t, err, events.ErrNotEngine, "Keys")
	}

	_, err = l.CommandsLastSeq(ctx, "step.>")
	assert.NoError(t, err, "the engine's own log has the queue")
}

// dialAs dials l's server as identity, one of the project's, with its seed
// in l's creds directory: a client's or a reader's log. It is closed when
// the test ends.
func dialAs(ctx context.Context, t *testing.T, l *events.Log, identity events.Identity) *events.Log {
	t.Helper()
	c, err := events.Dial(ctx, l.ClientURL(), events.Config{NKeySeedFile: events.CredsFile(l.CredsDir(), identity)})
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}
