// Package testkit holds helpers shared by Orbit's tests: real parts in temp
// directories, never mocks.
package testkit

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/orbitrun/orbit/events"
)

// Context returns a context that ends with the test or after a minute.
func Context(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// StartLog starts an embedded JetStream in a temp directory, provisioned as
// an engine would, and closes it when the test ends. Only in-process clients
// can reach it unless cfg.Listen is set.
func StartLog(t testing.TB, cfg events.Config) *events.Log {
	t.Helper()
	if cfg.StoreDir == "" {
		cfg.StoreDir = filepath.Join(t.TempDir(), "nats")
	}
	if cfg.Redactor == nil {
		cfg.Redactor = &events.Redactor{}
	}
	l, err := events.Open(Context(t), cfg)
	if err != nil {
		t.Fatalf("starting event log: %v", err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// DialEngine connects to the server at url with the engine identity in
// credsDir, as a process holding the engine's seed (but not its log key)
// could: the worst an outsider with a stolen seed can do. The connection
// closes when the test ends.
func DialEngine(t testing.TB, url, credsDir string) *nats.Conn {
	t.Helper()
	seed, err := nats.NkeyOptionFromSeed(events.CredsFile(credsDir, events.IdentityEngine))
	if err != nil {
		t.Fatalf("engine seed: %v", err)
	}
	nc, err := nats.Connect(url, seed)
	if err != nil {
		t.Fatalf("connecting as the engine: %v", err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// RemakeDenyingPurges deletes the events stream through js and creates it
// again with deny_purge set, as a log made before retention came was: its
// events are gone, and no stream update can lift the flag. It returns the
// configuration the stream was created with.
func RemakeDenyingPurges(ctx context.Context, t testing.TB, js jetstream.JetStream) jetstream.StreamConfig {
	t.Helper()
	stream, err := js.Stream(ctx, events.EventsStream)
	if err != nil {
		t.Fatalf("the events stream: %v", err)
	}
	cfg := stream.CachedInfo().Config
	if err := js.DeleteStream(ctx, events.EventsStream); err != nil {
		t.Fatalf("deleting the events stream: %v", err)
	}
	cfg.DenyPurge = true
	if _, err := js.CreateStream(ctx, cfg); err != nil {
		t.Fatalf("creating the events stream with deny_purge: %v", err)
	}
	return cfg
}
