package projector_test

import (
	"bytes"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
	"github.com/orbitrun/orbit/projector"
)

// lockedBuffer collects log output written from Run's goroutine.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestViewsTheLogNoLongerSupportsAreRebuilt(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// events of the new log; the old one holds 21.
		appendNew func(e *env, l *events.Log) uint64
		reason    string
	}{
		{
			name: "the log ends before the applied sequence",
			appendNew: func(e *env, l *events.Log) uint64 {
				var last uint64
				for i := 0; i < 3; i++ {
					last = appendTo(e.t, e.ctx, l, &e.at, events.Event{Type: events.RunRequested, RunID: runID(10 + i)}, events.RunRequestedData{JobName: "new"})
				}
				return last
			},
			reason: "the log ends at 3",
		},
		{
			name: "another event at the applied sequence",
			appendNew: func(e *env, l *events.Log) uint64 {
				var last uint64
				for i := 0; i < 25; i++ {
					last = appendTo(e.t, e.ctx, l, &e.at, events.Event{Type: events.RunRequested, RunID: runID(10 + i)}, events.RunRequestedData{JobName: "new"})
				}
				return last
			},
			reason: "where the views applied",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			old := e.history(runID(1), runID(2))
			p := e.open(projector.Config{})
			stop := e.start(p)
			require.NoError(t, p.WaitFor(e.ctx, old))
			require.NoError(t, stop())
			require.NoError(t, p.Close())

			// The same views file, pointed at a different log.
			fresh := testkit.StartLog(t, events.Config{})
			last := tt.appendNew(e, fresh)
			var logs lockedBuffer
			p = e.open(projector.Config{Source: fresh, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			assert.Zero(t, p.Applied(), "views are not trusted before the anchor check")
			stop = e.start(p)
			require.NoError(t, p.WaitFor(e.ctx, last))
			assert.Equal(t, last, p.Applied())

			_, err := p.RunView(e.ctx, runID(1))
			assert.ErrorIs(t, err, projector.ErrNotFound, "the old log's runs are gone")
			v, err := p.RunView(e.ctx, runID(10))
			require.NoError(t, err)
			assert.Equal(t, "new", v.Job)
			require.NoError(t, stop())
			assert.Contains(t, logs.String(), "rebuilding the views from the log")
			assert.Contains(t, logs.String(), tt.reason)

			require.NoError(t, p.Close())
			rebuilt := newViewsPath(t)
			require.NoError(t, projector.Rebuild(e.ctx, fresh, rebuilt, 0))
			assert.Equal(t, testkit.DumpBolt(t, rebuilt), testkit.DumpBolt(t, e.path))
		})
	}
}

func TestViewsTheLogSupportsAreKept(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	first := e.history(runID(1), runID(2))
	p := e.open(projector.Config{})
	stop := e.start(p)
	require.NoError(t, p.WaitFor(e.ctx, first))
	require.NoError(t, stop())
	require.NoError(t, p.Close())

	var logs lockedBuffer
	p = e.open(projector.Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	e.start(p)
	require.NoError(t, p.WaitFor(e.ctx, first), "the anchor check publishes the applied sequence")
	last := e.append(events.Event{Type: events.RunRequested, RunID: runID(3)}, events.RunRequestedData{JobName: "ci"})
	require.NoError(t, p.WaitFor(e.ctx, last))
	assert.NotContains(t, logs.String(), "rebuilding")
}

func TestOpenFailsOnALockedFile(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.open(projector.Config{})
	start := time.Now()
	_, err := projector.Open(e.ctx, projector.Config{Path: e.path, Source: e.log, LockTimeout: 200 * time.Millisecond})
	assert.ErrorIs(t, err, projector.ErrLocked)
	assert.Less(t, time.Since(start), 5*time.Second)
}

func TestConfigIsValidated(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tests := []struct {
		name string
		cfg  projector.Config
	}{
		{"no path", projector.Config{Source: e.log}},
		{"negative batch", projector.Config{Path: e.path, Source: e.log, BatchSize: -1}},
		{"negative lock timeout", projector.Config{Path: e.path, Source: e.log, LockTimeout: -time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := projector.Open(e.ctx, tt.cfg)
			assert.Error(t, err)
		})
	}
}

func TestCloseEndsRunAndWaitFor(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p := e.open(projector.Config{})
	stop := e.start(p)
	waited := make(chan error, 1)
	go func() { waited <- p.WaitFor(e.ctx, 1000) }()
	require.NoError(t, p.Close())
	assert.ErrorIs(t, <-waited, projector.ErrClosed)
	assert.ErrorIs(t, stop(), projector.ErrClosed)
	_, err := p.Runs(e.ctx, projector.RunFilter{})
	assert.ErrorIs(t, err, projector.ErrClosed)
	assert.NoError(t, p.Close(), "Close twice")
}

func TestRunTwiceAtOnceIsRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	last := e.append(events.Event{Type: events.RunRequested, RunID: runID(1)}, events.RunRequestedData{JobName: "ci"})
	p := e.open(projector.Config{})
	e.start(p)
	require.NoError(t, p.WaitFor(e.ctx, last))
	assert.ErrorIs(t, p.Run(e.ctx), projector.ErrRunning)
}

// An engine locks the views file before it opens the log (DESIGN §2), so the
// source may come after Open.
func TestTheSourceMayBeSetAfterOpen(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	last := e.append(events.Event{Type: events.RunRequested, RunID: runID(1)}, events.RunRequestedData{JobName: "ci"})
	p, err := projector.Open(e.ctx, projector.Config{Path: e.path})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Close()) })
	assert.ErrorIs(t, p.Run(e.ctx), projector.ErrNoSource)
	_, err = p.Replay(e.ctx, true)
	assert.ErrorIs(t, err, projector.ErrNoSource)

	p.SetSource(e.log)
	e.start(p)
	require.NoError(t, p.WaitFor(e.ctx, last))
}
