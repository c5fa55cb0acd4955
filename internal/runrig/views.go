package runrig

import (
	"context"
	"testing"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/projector"
)

// Views opens views in the file at path on the log l and folds the log
// into them, as an engine does, until the test ends, when they are
// stopped and closed.
func Views(t testing.TB, l *events.Log, path string) *projector.Projector {
	t.Helper()
	p, err := projector.Open(context.Background(), projector.Config{Path: path, Source: l})
	if err != nil {
		t.Fatalf("opening views on the log: %v", err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = p.Run(ctx) }()
	t.Cleanup(func() { stop(); <-done; p.Close() })
	return p
}
