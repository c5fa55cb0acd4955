package events_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

// TestAFullDiskStopsWritesCleanly: below the reserve every write fails with
// ErrStoreFull and nothing is stored; once space is freed, writes go on,
// and everything stored before is intact.
func TestAFullDiskStopsWritesCleanly(t *testing.T) {
	t.Parallel()
	ctx := testkit.Context(t)
	var free atomic.Uint64
	free.Store(1 << 30)
	l := testkit.StartLog(t, events.Config{MinFreeBytes: 64 << 20, FreeSpace: func(string) (uint64, error) { return free.Load(), nil }})
	ev := events.Event{Type: events.RunStarted, RunID: "R"}
	_, err := l.Append(ctx, ev, events.RunStartedData{Engine: "before"})
	require.NoError(t, err)

	free.Store(10 << 20)
	time.Sleep(300 * time.Millisecond) // past the guard's cache
	_, err = l.Append(ctx, ev, events.RunStartedData{Engine: "during"})
	assert.ErrorIs(t, err, events.ErrStoreFull)
	assert.Contains(t, err.Error(), "10 MiB free")
	_, err = l.AppendAsync(ctx, ev, events.RunStartedData{})
	assert.ErrorIs(t, err, events.ErrStoreFull)
	assert.ErrorIs(t, l.Send(ctx, "step.x", "id", map[string]string{}), events.ErrStoreFull)
	_, err = l.PutBlob(ctx, []byte("data"))
	assert.ErrorIs(t, err, events.ErrStoreFull)

	free.Store(1 << 30) // a full disk is looked at on every write: no wait
	_, err = l.Append(ctx, ev, events.RunStartedData{Engine: "after"})
	require.NoError(t, err)
	evs, err := l.Read(ctx, events.FollowOptions{})
	require.NoError(t, err)
	var engines []string
	for _, e := range evs {
		var d events.RunStartedData
		require.NoError(t, e.Decode(&d))
		engines = append(engines, d.Engine)
	}
	assert.Equal(t, []string{"before", "after"}, engines)
}

// TestWritesUnderWaitForSpaceWaitForIt: the engine's own writes wait while
// the disk is full, and are stored once space is freed; a wait that ends
// with its context reports the shortage.
func TestWritesUnderWaitForSpaceWaitForIt(t *testing.T) {
	t.Parallel()
	ctx := testkit.Context(t)
	var free atomic.Uint64
	free.Store(1 << 20)
	l := testkit.StartLog(t, events.Config{FreeSpace: func(string) (uint64, error) { return free.Load(), nil }})
	ev := events.Event{Type: events.RunStarted, RunID: "R"}

	short, cancel := context.WithTimeout(events.WaitForSpace(ctx), 300*time.Millisecond)
	defer cancel()
	_, err := l.Append(short, ev, events.RunStartedData{})
	assert.ErrorIs(t, err, events.ErrStoreFull)

	stored := make(chan error, 1)
	go func() {
		_, err := l.Append(events.WaitForSpace(ctx), ev, events.RunStartedData{Engine: "waited"})
		stored <- err
	}()
	select {
	case err := <-stored:
		t.Fatalf("the append did not wait: %v", err)
	case <-time.After(500 * time.Millisecond):
	}
	free.Store(1 << 30)
	require.NoError(t, <-stored)
	evs, err := l.Read(ctx, events.FollowOptions{})
	require.NoError(t, err)
	require.Len(t, evs, 1)
}
