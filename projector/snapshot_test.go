package projector_test

import (
	"context"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
	"github.com/orbitrun/orbit/projector"
)

// followFrom is a log that records where the projector asks it to follow
// from.
type followFrom struct {
	*events.Log
	mu   sync.Mutex
	from []uint64
}

func (f *followFrom) Follow(ctx context.Context, opts events.FollowOptions) (*events.Feed, error) {
	f.mu.Lock()
	f.from = append(f.from, opts.FromSeq)
	f.mu.Unlock()
	return f.Log.Follow(ctx, opts)
}

func (f *followFrom) starts() []uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]uint64(nil), f.from...)
}

// snapshotted builds views of five runs with a snapshot every 40 events,
// closes them, and returns the log's last sequence and the sequence the
// latest snapshot reflects.
func snapshotted(t *testing.T, e *env) (last, snapped uint64) {
	t.Helper()
	p := e.open(projector.Config{SnapshotEvery: 40, BatchSize: 5})
	stop := e.start(p)
	for i := range 5 {
		last = e.history(runID(i), runID(100+i))
	}
	require.NoError(t, p.WaitFor(e.ctx, last))
	require.Eventually(t, func() bool {
		snapped = snapshotAt(t, e.path)
		return snapped+40 > last
	}, 10*time.Second, 20*time.Millisecond, "a snapshot within 40 events of the end")
	require.NoError(t, stop())
	require.NoError(t, p.Close())
	testkit.CheckBolt(t, projector.SnapshotPath(e.path))
	return last, snapped
}

// snapshotAt is the sequence the snapshot of the views at path reflects,
// 0 when there is none.
func snapshotAt(t *testing.T, path string) uint64 {
	t.Helper()
	if _, err := os.Stat(projector.SnapshotPath(path)); err != nil {
		return 0
	}
	seq, err := strconv.ParseUint(testkit.DumpBolt(t, projector.SnapshotPath(path))["meta"]["applied_seq"], 10, 64)
	require.NoError(t, err)
	return seq
}

func TestMissingViewsStartFromTheirSnapshot(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, snapped := snapshotted(t, e)
	require.Positive(t, snapped)
	last := e.history(runID(9), runID(109))
	require.NoError(t, os.Remove(e.path))

	var logs testkit.SyncBuffer
	src := &followFrom{Log: e.log}
	p := e.open(projector.Config{Source: src, SnapshotEvery: -1, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	e.runThrough(p, last)

	assert.Equal(t, []uint64{snapped + 1}, src.starts(), "only the events after the snapshot are read")
	assert.Contains(t, logs.String(), "starting from its snapshot")
	assert.Equal(t, e.rebuild(last), testkit.DumpBolt(t, e.path), "the views are what the whole log folds to")
}

func TestADamagedSnapshotIsDroppedAndTheViewsRebuilt(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	last, _ := snapshotted(t, e)
	require.NoError(t, os.Remove(e.path))
	require.NoError(t, os.Truncate(projector.SnapshotPath(e.path), 100))

	var logs testkit.SyncBuffer
	src := &followFrom{Log: e.log}
	p := e.open(projector.Config{Source: src, SnapshotEvery: -1, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	e.runThrough(p, last)

	assert.Equal(t, []uint64{1}, src.starts(), "rebuilt from the start")
	assert.Contains(t, logs.String(), "snapshot of the views was damaged")
	assert.NoFileExists(t, projector.SnapshotPath(e.path))
	assert.Equal(t, e.rebuild(last), testkit.DumpBolt(t, e.path))
}

func TestASnapshotOfAnotherLogIsRefusedAndSetAsideWithItsViews(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, _ = snapshotted(t, e)
	require.NoError(t, os.Remove(e.path))
	snapshot := testkit.DumpBolt(t, projector.SnapshotPath(e.path))

	fresh := testkit.StartLog(t, events.Config{})
	var last uint64
	for i := range 60 {
		last = appendTo(t, e.ctx, fresh, &e.at, events.Event{Type: events.RunRequested, RunID: runID(200 + i)}, events.RunRequestedData{JobName: "new"})
	}
	p := e.open(projector.Config{Source: fresh, SnapshotEvery: -1})
	ctx, cancel := context.WithTimeout(e.ctx, 20*time.Second)
	defer cancel()
	err := p.Run(ctx)
	assert.ErrorIs(t, err, projector.ErrLogMismatch, "a snapshot of another log is not the new log's views")
	require.NoError(t, p.Close())

	aside, err := projector.SetAsideLost(e.path, time.Second)
	require.NoError(t, err)
	assert.NoFileExists(t, projector.SnapshotPath(e.path))
	assert.Equal(t, snapshot, testkit.DumpBolt(t, projector.SnapshotPath(aside)), "the snapshot goes with its views")

	p = e.open(projector.Config{Source: fresh, SnapshotEvery: -1})
	e.start(p)
	require.NoError(t, p.WaitFor(e.ctx, last))
	require.NoError(t, p.Close())
	e.log = fresh
	assert.Equal(t, e.rebuild(last), testkit.DumpBolt(t, e.path), "the views are the new log's")
}
