package events_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

// BenchmarkAPIRequest is a client's request to an engine's endpoint and
// its answer, over the embedded server's listener: the path every CLI
// command takes (from the client's account, through the import of the
// API, to the engine's and back), against a JetStream direct get of one
// event over the same connection.
func BenchmarkAPIRequest(b *testing.B) {
	ctx := context.Background()
	store := filepath.Join(b.TempDir(), "nats")
	l := testkit.StartLog(b, events.Config{StoreDir: store, Listen: "127.0.0.1:0"})
	stop, err := l.Serve("", "bench", "0.0.1", 10*time.Second, map[string]events.Handler{
		"engine.info": func(context.Context, json.RawMessage) (any, error) { return map[string]string{"version": "bench"}, nil },
	})
	if err != nil {
		b.Fatal(err)
	}
	defer stop.Stop()
	if _, err := l.Append(ctx, events.Event{Type: events.RunRequested, RunID: "R1"}, events.RunRequestedData{}); err != nil {
		b.Fatal(err)
	}
	c, err := events.Dial(ctx, l.ClientURL(), events.Config{NKeySeedFile: events.CredsFile(filepath.Join(filepath.Dir(store), "creds"), events.IdentityClient)})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	b.Run("request", func(b *testing.B) {
		var answer map[string]string
		for range b.N {
			if err := c.Request(ctx, "engine.info", nil, &answer); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("direct-get", func(b *testing.B) {
		for range b.N {
			if _, err := c.EventAt(ctx, 1); err != nil {
				b.Fatal(err)
			}
		}
	})
}
