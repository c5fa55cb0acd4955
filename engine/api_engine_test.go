package engine

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

// TestAStopStopsOnlyTheEngineItNames: engine.stop refuses a request that
// names another engine (one that reached it by the shared subject); one
// that names it is answered, and Run then returns without an error.
func TestAStopStopsOnlyTheEngineItNames(t *testing.T) {
	t.Parallel()
	ctx := testkit.Context(t)
	e, err := Open(ctx, Config{Root: t.TempDir(), Listen: "127.0.0.1:0"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })
	done := make(chan error, 1)
	go func() { done <- e.Run(context.WithoutCancel(ctx)) }()
	require.Eventually(t, func() bool {
		var st Status
		return e.log.RequestEngine(ctx, e.id, EndpointStatus, nil, &st) == nil
	}, 30*time.Second, 20*time.Millisecond, "the engine serves")

	var st Status
	require.NoError(t, e.log.RequestEngine(ctx, e.id, EndpointStatus, nil, &st))
	assert.Equal(t, e.id, st.Engine)
	assert.Equal(t, Version, st.Version)
	assert.True(t, st.Config.Missing)

	var stopping Stopping
	err = e.log.Request(ctx, EndpointStop, StopRequest{Engine: "01ANOTHERENGINE", Requester: "test"}, &stopping)
	require.ErrorIs(t, err, events.ErrInvalidRequest)
	select {
	case err := <-done:
		t.Fatalf("Run returned (%v) on a stop meant for another engine", err)
	case <-time.After(200 * time.Millisecond):
	}

	require.NoError(t, e.log.RequestEngine(ctx, e.id, EndpointStop, StopRequest{Engine: e.id, Requester: "test"}, &stopping))
	assert.Equal(t, e.id, stopping.Engine)
	select {
	case err := <-done:
		assert.NoError(t, err, "a stop on request is a clean end")
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return after the stop")
	}
}
