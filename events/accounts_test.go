package events_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

// TestAStoreWithoutAccountsIsTheEnginesAfter: a store an engine wrote
// before the engine had an account of its own (its streams in NATS'
// global account) opens as the same log — the same stream, created at the
// same time, with its events — in the engine's account; a store with
// streams in both is refused, naming them.
func TestAStoreWithoutAccountsIsTheEnginesAfter(t *testing.T) {
	t.Parallel()
	ctx := testkit.Context(t)
	store := filepath.Join(t.TempDir(), "nats")
	srv, err := server.NewServer(&server.Options{JetStream: true, StoreDir: store, DontListen: true, NoLog: true, NoSigs: true})
	require.NoError(t, err)
	srv.Start()
	require.True(t, srv.ReadyForConnections(10*time.Second))
	nc, err := nats.Connect("", nats.InProcessServer(srv))
	require.NoError(t, err)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	s, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: events.EventsStream, Subjects: []string{events.EventsRoot + ".>"}, AllowDirect: true})
	require.NoError(t, err)
	created := s.CachedInfo().Created.UTC()
	body, err := json.Marshal(events.Event{ID: "e1", Type: events.RunRequested, RunID: "R1", Data: json.RawMessage(`{}`)})
	require.NoError(t, err)
	_, err = js.Publish(ctx, events.EventSubject(events.AggregateRun, "R1", events.RunRequested), body)
	require.NoError(t, err)
	nc.Close()
	srv.Shutdown()
	srv.WaitForShutdown()

	l, err := events.Open(ctx, events.Config{StoreDir: store, RequireLog: true, Redactor: &events.Redactor{}})
	require.NoError(t, err, "the log is found in the engine's account")
	got, err := l.Created(ctx)
	require.NoError(t, err)
	assert.Equal(t, created, got, "the same log")
	evs, err := l.Read(ctx, events.FollowOptions{})
	require.NoError(t, err)
	require.Len(t, evs, 1)
	assert.Equal(t, "R1", evs[0].RunID)
	require.NoError(t, l.Close())

	require.NoError(t, os.MkdirAll(filepath.Join(store, "jetstream", "$G", "streams"), 0o750))
	_, err = events.Open(ctx, events.Config{StoreDir: store, Redactor: &events.Redactor{}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "global account")
}

// TestAnEndpointIsTwoTokens: the other accounts import the API as
// orbit.api.<group>.<name>; Serve refuses an endpoint they could not reach.
func TestAnEndpointIsTwoTokens(t *testing.T) {
	t.Parallel()
	l := testkit.StartLog(t, events.Config{})
	h := func(context.Context, json.RawMessage) (any, error) { return nil, nil }
	for _, name := range []string{"info", "runs.tree.cancel"} {
		_, err := l.Serve("", "test", "0.0.1", time.Second, map[string]events.Handler{name: h})
		assert.ErrorContains(t, err, "want <group>.<name>", name)
	}
}
