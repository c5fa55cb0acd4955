package events_test

import (
	"path/filepath"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

// A log that views were folded from is never made anew: with RequireLog,
// Open on a store without the events stream fails and creates nothing.
// Without it (a fresh root) Open creates the stream.
func TestOpenWithRequireLogRefusesAMissingLog(t *testing.T) {
	t.Parallel()
	ctx := testkit.Context(t)
	store := filepath.Join(t.TempDir(), "nats")
	_, err := events.Open(ctx, events.Config{StoreDir: store, RequireLog: true, Redactor: &events.Redactor{}})
	require.ErrorIs(t, err, events.ErrLogMissing)
	assert.Contains(t, err.Error(), events.EventsStream)
	assert.Contains(t, err.Error(), store)

	l := testkit.StartLog(t, events.Config{StoreDir: store})
	last, err := l.LastSeq(ctx)
	require.NoError(t, err)
	assert.Zero(t, last, "the refused Open created no stream: this one is new")
	_, err = l.Append(ctx, events.Event{Type: events.RunStarted, RunID: "R1"}, events.RunStartedData{Engine: "e"})
	require.NoError(t, err)
	require.NoError(t, l.Close())

	l = testkit.StartLog(t, events.Config{StoreDir: store, RequireLog: true})
	last, err = l.LastSeq(ctx)
	require.NoError(t, err)
	assert.Equal(t, uint64(1), last, "an existing log is opened as it is")
}

// The creation time survives a restart of the store, and
// changes when the stream is deleted and made again; a deleted stream is
// ErrLogMissing.
func TestCreatedIdentifiesTheLog(t *testing.T) {
	t.Parallel()
	ctx := testkit.Context(t)
	store := filepath.Join(t.TempDir(), "nats")
	l := testkit.StartLog(t, events.Config{StoreDir: store, Listen: "127.0.0.1:0"})
	created, err := l.Created(ctx)
	require.NoError(t, err)
	assert.False(t, created.IsZero())
	require.NoError(t, l.Close())

	l = testkit.StartLog(t, events.Config{StoreDir: store, Listen: "127.0.0.1:0"})
	again, err := l.Created(ctx)
	require.NoError(t, err)
	assert.True(t, created.Equal(again), "a restart keeps the creation time: %s, then %s", created, again)

	// Deleted by another client with the rights to do it, as `nats stream
	// rm` does it.
	js, err := jetstream.New(testkit.DialEngine(t, l.ClientURL(), l.CredsDir()))
	require.NoError(t, err)
	require.NoError(t, js.DeleteStream(ctx, events.EventsStream))
	_, err = l.Created(ctx)
	require.ErrorIs(t, err, events.ErrLogMissing)
	require.NoError(t, l.Close())

	l = testkit.StartLog(t, events.Config{StoreDir: store})
	remade, err := l.Created(ctx)
	require.NoError(t, err)
	assert.False(t, created.Equal(remade), "a stream made again is another log")
}
