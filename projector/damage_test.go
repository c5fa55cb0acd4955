package projector_test

import (
	"encoding/binary"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
	"github.com/orbitrun/orbit/projector"
)

// damagedRun is the run whose record the damage tests flip bits in.
var damagedRun = runID(13)

// realisticHistory appends the recorded histories, two runs of history
// and a Groundhog task, and returns the last sequence.
func (e *env) realisticHistory() uint64 {
	e.t.Helper()
	for _, h := range []string{"history_agents", "history_groundhog", "history_release"} {
		appendHistory(e.t, e, filepath.Join("testdata", h+".jsonl"))
	}
	e.history(runID(11), runID(12))
	e.history(damagedRun, runID(14))
	_, last := e.groundhogHistory("T-31", "01JGHRUN000000000000000031")
	return last
}

// buildViews folds e's log through last into e's views file, in small
// batches (so that freed pages hold older copies of the records), and
// closes it.
func (e *env) buildViews(last uint64) {
	e.t.Helper()
	p := e.open(projector.Config{BatchSize: 5})
	stop := e.start(p)
	require.NoError(e.t, p.WaitFor(e.ctx, last))
	require.NoError(e.t, stop())
	require.NoError(e.t, p.Close())
}

// setAside lists the damaged views files kept next to path.
func setAside(t *testing.T, path string) []string {
	t.Helper()
	names, err := filepath.Glob(path + ".corrupt-*")
	require.NoError(t, err)
	return names
}

// flipMeta flips a bit of the root bucket's page id in the meta pages of
// the bbolt file at path: in both, or only in the one of the last
// transaction.
func flipMeta(t *testing.T, path string, both bool) {
	t.Helper()
	size := testkit.BoltPageSize(t, path)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	// A meta page is a 16-byte page header, then magic, version, page
	// size and flags (4 bytes each), the root bucket (page id, sequence),
	// the freelist's page id, the high water mark and the transaction id
	// (8 bytes each), then the checksum.
	const rootOffset, txidOffset = 32, 64
	txid := func(page int) uint64 { return binary.LittleEndian.Uint64(data[page*size+txidOffset:]) }
	current := 0
	if txid(1) > txid(0) {
		current = 1
	}
	for page := range 2 {
		if both || page == current {
			testkit.FlipBit(t, path, int64(page*size+rootOffset), 0x01)
		}
	}
}

// runRecord is how the runs bucket stores the damaged run's record: its
// key, then its value, which starts with its id.
func runRecord() []byte {
	return []byte(damagedRun + `{"id":"` + damagedRun + `"`)
}

// The views are derived from the log: whatever happened to their file,
// Open and Run end with the views a rebuild of the log gives, and a damaged
// file is kept aside, as it was, for inspection.
func TestDamagedViewsFilesAreSetAsideAndRebuilt(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		damage func(t *testing.T, path string)
		// kept is false for changes that leave a file bbolt and the
		// checks accept: the views are still right, nothing is set aside.
		kept bool
		// problem is part of the problem the warning names: which check
		// found it.
		problem string
	}{
		{name: "truncated before a live page", kept: true, damage: func(t *testing.T, path string) {
			// Half the file's size may keep every live page (bbolt grows
			// its file ahead of use); cutting at a run record's page
			// never does.
			off := testkit.LiveBoltOffset(t, path, runRecord())
			size := int64(testkit.BoltPageSize(t, path))
			require.NoError(t, os.Truncate(path, off-off%size))
		}},
		{name: "truncated to 100 bytes", kept: true, problem: "bbolt cannot open it", damage: func(t *testing.T, path string) {
			require.NoError(t, os.Truncate(path, 100))
		}},
		{name: "a bit flipped in both meta pages", kept: true, problem: "bbolt cannot open it", damage: func(t *testing.T, path string) {
			flipMeta(t, path, true)
		}},
		{name: "a bit flipped in the key of a run record", kept: true, problem: `bucket \"runs\": key \"` + runID(11) + `\" comes after`, damage: func(t *testing.T, path string) {
			// The key's last digit, 3, becomes 1: the key of the run
			// before, out of order.
			off := testkit.LiveBoltOffset(t, path, runRecord())
			testkit.FlipBit(t, path, off+int64(len(damagedRun))-1, 0x02)
		}},
		{name: "a bit flipped in the value of a run record", kept: true, problem: `view runs: bucket runs: key \"` + damagedRun + `\": invalid character`, damage: func(t *testing.T, path string) {
			// The value's opening brace becomes a "z": only decoding it
			// tells.
			off := testkit.LiveBoltOffset(t, path, runRecord())
			testkit.FlipBit(t, path, off+int64(len(damagedRun)), 0x01)
		}},
		{name: "the type of the page of a run record flipped", kept: true, problem: "has no page type bbolt knows", damage: func(t *testing.T, path string) {
			// A leaf page that is no longer one: bbolt would panic reading
			// it.
			off := testkit.LiveBoltOffset(t, path, runRecord())
			size := int64(testkit.BoltPageSize(t, path))
			const flagsOffset = 8
			testkit.FlipBit(t, path, off-off%size+flagsOffset, 0x02)
		}},
		{name: "a record overwritten with invalid JSON", kept: true, problem: `view runs: bucket runs: key \"` + damagedRun + `\"`, damage: func(t *testing.T, path string) {
			testkit.PutBolt(t, path, "runs", damagedRun, []byte(`{"id":"`+damagedRun))
		}},
		{name: "a record with bytes after its JSON", kept: true, problem: "not stored as the view encodes it", damage: func(t *testing.T, path string) {
			dump := testkit.DumpBolt(t, path)
			testkit.PutBolt(t, path, "groundhog_memory", "T-31", []byte(dump["groundhog_memory"]["T-31"]+"}"))
		}},
		{name: "a metrics record that is not JSON", kept: true, problem: `view metrics: bucket metrics: key \"model/claude-sonnet-4-5\"`, damage: func(t *testing.T, path string) {
			testkit.PutBolt(t, path, "metrics", "model/claude-sonnet-4-5", []byte("12"))
		}},
		{name: "a log record that does not parse", kept: true, problem: `log stream_created is \"yesterday\"`, damage: func(t *testing.T, path string) {
			testkit.PutBolt(t, path, "log", "stream_created", []byte("yesterday"))
		}},
		{name: "not a bbolt file", kept: true, problem: "bbolt cannot open it", damage: func(t *testing.T, path string) {
			require.NoError(t, os.WriteFile(path, []byte(fmt.Sprintf("%065536d", 7)), 0o600))
		}},
		{name: "a bit flipped in the meta page of the last transaction", kept: false, damage: func(t *testing.T, path string) {
			// bbolt keeps two meta pages for this: it opens the file as
			// of the transaction before, which the views' cursor
			// describes, and Run applies the rest again.
			flipMeta(t, path, false)
		}},
		{name: "emptied", kept: false, damage: func(t *testing.T, path string) {
			require.NoError(t, os.Truncate(path, 0))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			last := e.realisticHistory()
			e.buildViews(last)
			tt.damage(t, e.path)
			damaged, err := os.ReadFile(e.path)
			require.NoError(t, err)

			var logs testkit.SyncBuffer
			p := e.open(projector.Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			stop := e.start(p)
			require.NoError(t, p.WaitFor(e.ctx, last))

			v, err := p.RunView(e.ctx, damagedRun)
			require.NoError(t, err)
			assert.Equal(t, events.StateCancelled, v.State)
			assert.Len(t, v.Steps, 3)
			runs, err := p.Runs(e.ctx, projector.RunFilter{Job: "ci"})
			require.NoError(t, err)
			assert.NotEmpty(t, runs)
			mem, err := p.GroundhogMemory(e.ctx, "T-31")
			require.NoError(t, err)
			assert.Len(t, mem.Checkpoints, 2)
			_, err = p.Metrics(e.ctx)
			require.NoError(t, err)

			require.NoError(t, stop())
			require.NoError(t, p.Close())
			assert.Equal(t, e.rebuild(last), testkit.DumpBolt(t, e.path), "the views are what the log folds to")

			aside := setAside(t, e.path)
			if !tt.kept {
				assert.Empty(t, aside)
				assert.NotContains(t, logs.String(), "damaged")
				return
			}
			require.Len(t, aside, 1)
			kept, err := os.ReadFile(aside[0])
			require.NoError(t, err)
			assert.True(t, slices.Equal(damaged, kept), "the damaged file is kept as it was")
			assert.Contains(t, logs.String(), "level=WARN msg=\"the views file is damaged")
			assert.Contains(t, logs.String(), "file="+e.path)
			assert.Contains(t, logs.String(), "kept_as="+aside[0])
			assert.Contains(t, logs.String(), tt.problem)
		})
	}
}

// A record damaged after Open's check is found when a batch reads it: the
// batch is not committed, the file is set aside and the views are rebuilt
// from the log, and Run goes on.
func TestDamageFoundWhileApplyingIsRebuiltFromTheLog(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	first := e.history(runID(1), runID(2))
	var logs testkit.SyncBuffer
	p := e.open(projector.Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	stop := e.start(p)
	require.NoError(t, p.WaitFor(e.ctx, first))

	require.NoError(t, projector.PutRaw(p, "run_steps", runID(1)+"\x00build", `{"key":"bu`))
	_, err := p.RunView(e.ctx, runID(1))
	require.Error(t, err, "a damaged record is never served")

	next := e.append(events.Event{Type: events.StepFinished, RunID: runID(1), Job: "ci", StepKey: "build"},
		events.StepFinishedData{Attempt: 3, State: events.StateSuccess, DurationMS: 10})
	require.NoError(t, p.WaitFor(e.ctx, next))
	v, err := p.RunView(e.ctx, runID(1))
	require.NoError(t, err)
	assert.Equal(t, 3, v.Steps[0].Attempts, "the event that met the damage is applied, once")

	last := e.history(runID(3), runID(4))
	require.NoError(t, p.WaitFor(e.ctx, last))
	require.NoError(t, stop())
	require.NoError(t, p.Close())
	assert.Equal(t, e.rebuild(last), testkit.DumpBolt(t, e.path))
	assert.Len(t, setAside(t, e.path), 1)
	assert.Contains(t, logs.String(), "the views file is damaged")
	assert.Contains(t, logs.String(), `stored step build of run `+runID(1))
}

// Damage that a rebuild from the log meets again, at the same place, is
// not the file's (a fold that cannot read what it wrote): Run stops with
// it rather than rebuild forever. Damage found further on is a new one.
func TestDamageTheRebuildMeetsAgainStopsRun(t *testing.T) {
	t.Parallel()
	planted := fmt.Errorf("%w: planted", projector.ErrDamaged)

	t.Run("at the same place", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		e.history(runID(1), runID(2))
		p := e.open(projector.Config{BatchSize: 4})
		projector.SetBeforeCommit(p, func(seq uint64) error {
			if seq >= 10 {
				return planted
			}
			return nil
		})
		err := p.Run(e.ctx)
		require.ErrorIs(t, err, projector.ErrDamaged)
		assert.Contains(t, err.Error(), "again")
		assert.Len(t, setAside(t, e.path), 1, "the first time, the file was set aside")
		assert.Less(t, p.Applied(), uint64(10))
	})

	t.Run("further on", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		last := e.history(runID(1), runID(2))
		p := e.open(projector.Config{BatchSize: 4})
		var (
			mu    sync.Mutex
			fired = map[uint64]bool{}
		)
		projector.SetBeforeCommit(p, func(seq uint64) error {
			mu.Lock()
			defer mu.Unlock()
			for _, at := range []uint64{8, 16} {
				if seq >= at && !fired[at] {
					fired[at] = true
					return planted
				}
			}
			return nil
		})
		e.runThrough(p, last)
		assert.Len(t, setAside(t, e.path), 2)
		assert.Equal(t, e.rebuild(last), testkit.DumpBolt(t, e.path))
	})
}

// A sound file is neither set aside nor rebuilt: Run goes on from its
// cursor.
func TestASoundViewsFileIsKept(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	last := e.realisticHistory()
	e.buildViews(last)
	before := testkit.DumpBolt(t, e.path)

	var logs testkit.SyncBuffer
	p := e.open(projector.Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	committed := recordCommits(p)
	stop := e.start(p)
	require.NoError(t, p.WaitFor(e.ctx, last))
	next := e.append(events.Event{Type: events.RunRequested, RunID: runID(20)}, events.RunRequestedData{JobName: "ci"})
	require.NoError(t, p.WaitFor(e.ctx, next))
	require.NoError(t, stop())
	require.NoError(t, p.Close())

	assert.Equal(t, []uint64{next}, committed(), "only the new event was applied")
	assert.Empty(t, setAside(t, e.path))
	assert.NotContains(t, logs.String(), "damaged")
	assert.NotContains(t, logs.String(), "rebuilding")
	after := testkit.DumpBolt(t, e.path)
	delete(after["runs"], runID(20))
	delete(after["runs_by_job"], "ci\x00"+runID(20))
	delete(after["runs_active"], fmt.Sprintf("%020d", next))
	delete(after["run_chains"], runID(20))
	after["meta"], before["meta"] = nil, nil
	assert.Equal(t, before, after)
}

// A file another engine holds is locked, never damaged, even when it is:
// only the holder of the lock may judge it.
func TestALockedDamagedFileIsLocked(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	last := e.realisticHistory()
	e.buildViews(last)
	require.NoError(t, os.Truncate(e.path, 100))

	other, err := os.OpenFile(e.path, os.O_RDWR, 0)
	require.NoError(t, err)
	require.NoError(t, syscall.Flock(int(other.Fd()), syscall.LOCK_EX|syscall.LOCK_NB))
	_, err = projector.Open(e.ctx, projector.Config{Path: e.path, Source: e.log, LockTimeout: 200 * time.Millisecond})
	require.ErrorIs(t, err, projector.ErrLocked)
	assert.Empty(t, setAside(t, e.path))
	info, err := os.Stat(e.path)
	require.NoError(t, err)
	assert.EqualValues(t, 100, info.Size(), "the file is untouched")
	require.NoError(t, other.Close())

	e.running(projector.Config{}, last)
	assert.Len(t, setAside(t, e.path), 1)
}

// Only the newest damaged files are kept.
func TestOnlyTheNewestDamagedFilesAreKept(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	last := e.history(runID(1), runID(2))
	e.buildViews(last)
	now := time.Now().Unix()
	older := []string{
		fmt.Sprintf("%s.corrupt-%d", e.path, now-300),
		fmt.Sprintf("%s.corrupt-%d", e.path, now-200),
		fmt.Sprintf("%s.corrupt-%d", e.path, now-100),
		fmt.Sprintf("%s.corrupt-%d-2", e.path, now-100),
	}
	unrelated := e.path + ".corrupt-notes"
	for _, name := range append(older, unrelated) {
		require.NoError(t, os.WriteFile(name, []byte("old"), 0o600))
	}
	require.NoError(t, os.Truncate(e.path, 100))

	e.running(projector.Config{}, last)
	kept := setAside(t, e.path)
	assert.Len(t, kept, 4)
	assert.Contains(t, kept, fmt.Sprintf("%s.corrupt-%d", e.path, now-100))
	assert.Contains(t, kept, fmt.Sprintf("%s.corrupt-%d-2", e.path, now-100))
	assert.Contains(t, kept, unrelated, "a file the projector did not name is not its to delete")
	assert.NotContains(t, kept, older[0])
	assert.NotContains(t, kept, older[1])
}

// A views file ahead of its log (the log's store restored from an older
// copy) is refused through Open and Run, whether the restored log ends
// before the views' cursor or has since been appended to past it: the
// views are not damaged, the log lost events. Once they are set aside
// (`orbit init --new-log`), the views are rebuilt from the restored log.
func TestViewsAheadOfARestoredLogAreRefused(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// appendAfterRestore appends to the restored log.
		appendAfterRestore func(e *env, l *events.Log)
		found              string
	}{
		{name: "the restored log ends before the views", found: "a log that ends at sequence"},
		{name: "the restored log has moved on since", found: "where the views applied", appendAfterRestore: func(e *env, l *events.Log) {
			for i := range 30 {
				appendTo(e.t, e.ctx, l, &e.at, events.Event{Type: events.RunRequested, RunID: runID(100 + i)}, events.RunRequestedData{JobName: "after"})
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			store := filepath.Join(t.TempDir(), "nats")
			l := testkit.StartLog(t, events.Config{StoreDir: store})
			e.log = l
			old := e.history(runID(1), runID(2))
			require.NoError(t, l.Close())
			backup := filepath.Join(t.TempDir(), "nats")
			require.NoError(t, os.CopyFS(backup, os.DirFS(store)))

			l = testkit.StartLog(t, events.Config{StoreDir: store})
			e.log = l
			last := e.history(runID(3), runID(4))
			require.Greater(t, last, old)
			e.buildViews(last)
			require.NoError(t, l.Close())
			before := testkit.DumpBolt(t, e.path)

			restored := testkit.StartLog(t, events.Config{StoreDir: backup})
			e.log = restored
			if tt.appendAfterRestore != nil {
				tt.appendAfterRestore(e, restored)
			}
			end, err := restored.LastSeq(e.ctx)
			require.NoError(t, err)

			p := e.open(projector.Config{})
			err = p.Run(e.ctx)
			var mismatch *projector.MismatchError
			require.ErrorAs(t, err, &mismatch)
			assert.Contains(t, mismatch.Found, tt.found)
			assert.NotContains(t, mismatch.Found, "another stream", "a copy of the store is the same stream")
			assert.Equal(t, last, mismatch.Expected.LastSeq)
			require.NoError(t, p.Close())
			assert.Empty(t, setAside(t, e.path), "views ahead of the log are not damaged")
			assert.Equal(t, before, testkit.DumpBolt(t, e.path), "nor rebuilt")

			_, err = projector.SetAsideLost(e.path, time.Second)
			require.NoError(t, err)
			p = e.open(projector.Config{})
			stop := e.start(p)
			require.NoError(t, p.WaitFor(e.ctx, end))
			assert.Equal(t, end, p.Applied())
			_, err = p.RunView(e.ctx, runID(3))
			assert.ErrorIs(t, err, projector.ErrNotFound, "a run only the lost part of the log had is gone")
			_, err = p.RunView(e.ctx, runID(1))
			require.NoError(t, err)
			require.NoError(t, stop())
			require.NoError(t, p.Close())
			assert.Equal(t, e.rebuild(end), testkit.DumpBolt(t, e.path))
		})
	}
}
