package projector_test

import (
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
	"github.com/orbitrun/orbit/projector"
)

// Views the log no longer supports are refused, not rebuilt (DESIGN §2):
// Run and CheckLog fail with a *MismatchError that says what the log is and
// what the views expect, and leave the views as they are. Setting the views
// aside (what `orbit init --new-log` does) accepts the log: the next
// projector rebuilds from it.
func TestViewsTheLogNoLongerSupportsAreRefused(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// appendNew appends to the new log; the old one holds
		// history_release.jsonl.
		appendNew func(e *env, l *events.Log) uint64
		found     string
	}{
		{
			name:      "the log ends before the applied sequence",
			appendNew: appendRequests(3),
			found:     "a log that ends at sequence 3",
		},
		{
			name:      "another event at the applied sequence",
			appendNew: appendRequests(60),
			found:     "where the views applied",
		},
		{
			// The same events, ids included, in a stream made anew: only
			// the stream's creation time tells it from the old one.
			name: "another stream of the same name",
			appendNew: func(e *env, l *events.Log) uint64 {
				return appendHistory(e.t, &env{t: e.t, ctx: e.ctx, log: l}, "testdata/history_release.jsonl")
			},
			found: "another stream of the same name",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			old := appendHistory(t, e, "testdata/history_release.jsonl")
			e.buildViews(old)
			before := testkit.DumpBolt(t, e.path)

			// The same views file, pointed at a different log.
			fresh := testkit.StartLog(t, events.Config{})
			last := tt.appendNew(e, fresh)
			var logs testkit.SyncBuffer
			p := e.open(projector.Config{Source: fresh, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			rec, err := p.Recorded()
			require.NoError(t, err)
			assert.Equal(t, old, rec.LastSeq)
			assert.Equal(t, uint64(1), rec.FirstSeq)
			assert.False(t, rec.Created.IsZero())

			err = p.CheckLog(e.ctx)
			var mismatch *projector.MismatchError
			require.ErrorAs(t, err, &mismatch)
			assert.ErrorIs(t, err, projector.ErrLogMismatch)
			assert.Contains(t, mismatch.Found, tt.found)
			assert.Equal(t, rec, mismatch.Expected)
			assert.Contains(t, err.Error(), fmt.Sprintf("through %d (%s)", rec.LastSeq, rec.LastID))
			err = p.Run(e.ctx)
			assert.ErrorIs(t, err, projector.ErrLogMismatch, "Run refuses the log too")
			assert.Zero(t, p.Applied(), "views are not trusted")
			require.NoError(t, p.Close())
			assert.NotContains(t, logs.String(), "rebuilding")
			assert.Equal(t, before, testkit.DumpBolt(t, e.path), "the views are left as they were")

			aside, err := projector.SetAsideLost(e.path, time.Second)
			require.NoError(t, err)
			assert.Regexp(t, `views\.db\.lost-\d+$`, aside)
			assert.Equal(t, before, testkit.DumpBolt(t, aside))
			p = e.open(projector.Config{Source: fresh})
			e.start(p)
			require.NoError(t, p.WaitFor(e.ctx, last))
			assert.Equal(t, last, p.Applied())
			require.NoError(t, p.Close())
			e.log = fresh
			assert.Equal(t, e.rebuild(last), testkit.DumpBolt(t, e.path), "the views are the new log's")
		})
	}
}

// appendRequests appends n run requests of job new to a log, returning
// the last one's sequence.
func appendRequests(n int) func(e *env, l *events.Log) uint64 {
	return func(e *env, l *events.Log) uint64 {
		var last uint64
		for i := range n {
			last = appendTo(e.t, e.ctx, l, &e.at, events.Event{Type: events.RunRequested, RunID: runID(10 + i)}, events.RunRequestedData{JobName: "new"})
		}
		return last
	}
}

func TestViewsTheLogSupportsAreKept(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	first := e.history(runID(1), runID(2))
	p := e.open(projector.Config{})
	e.runThrough(p, first)

	var logs testkit.SyncBuffer
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
	p := e.running(projector.Config{}, last)
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

// Views written before the log's identity was recorded are kept, and adopt
// the identity of the log that supports them: the same record a rebuild
// writes.
func TestViewsWithoutALogRecordAdoptTheLog(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	last := e.history(runID(1), runID(2))
	e.buildViews(last)
	db, err := bolt.Open(e.path, 0o600, nil)
	require.NoError(t, err)
	require.NoError(t, db.Update(func(tx *bolt.Tx) error { return tx.DeleteBucket([]byte("log")) }))
	require.NoError(t, db.Close())

	p := e.open(projector.Config{})
	require.NoError(t, p.CheckLog(e.ctx))
	assert.Equal(t, last, p.Applied())
	rec, err := p.Recorded()
	require.NoError(t, err)
	created, err := e.log.Created(e.ctx)
	require.NoError(t, err)
	assert.True(t, created.Equal(rec.Created))
	assert.Equal(t, uint64(1), rec.FirstSeq)
	require.NoError(t, p.Close())
	assert.Equal(t, e.rebuild(last), testkit.DumpBolt(t, e.path))
}
