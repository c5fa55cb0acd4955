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

// BenchmarkAPIRequest is a client's request to an engine's endpoint that
// answers at once, and its answer, over the embedded server's listener:
// the path every CLI command takes, from the client's account through the
// import of the API to the engine's and back. It reports the same request
// made from the engine's own account (another engine of the cluster, no
// import) as the baseline, in the same run.
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
	creds := filepath.Join(filepath.Dir(store), "creds")
	dial := func(id events.Identity) *events.Log {
		c, err := events.Dial(ctx, l.ClientURL(), events.Config{NKeySeedFile: events.CredsFile(creds, id)})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { c.Close() })
		return c
	}
	client, peer := dial(events.IdentityClient), dial(events.IdentityEngine)
	measure := func(c *events.Log) time.Duration {
		var answer map[string]string
		start := time.Now()
		for range b.N {
			if err := c.Request(ctx, "engine.info", nil, &answer); err != nil {
				b.Fatal(err)
			}
		}
		return time.Since(start)
	}
	b.ResetTimer()
	took := measure(client)
	b.StopTimer()
	base := measure(peer)
	b.ReportMetric(float64(took.Microseconds())/float64(b.N), "client-µs")
	b.ReportMetric(float64(base.Microseconds())/float64(b.N), "engine-µs")
	b.ReportMetric(float64(took)/float64(base), "client/engine")
}
