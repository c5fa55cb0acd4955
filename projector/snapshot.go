package projector

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
)

// DefaultSnapshotEvery is how many events the views apply between two
// snapshots unless Config.SnapshotEvery says otherwise.
const DefaultSnapshotEvery = 100_000

// snapshotSuffix names the snapshot of the views file at path:
// path + snapshotSuffix.
const snapshotSuffix = ".snap"

// SnapshotPath is where the snapshot of the views file at path is kept.
//
// A snapshot is a copy of the views as one committed batch left them, with
// the cursor of the last event they applied, taken every SnapshotEvery
// events by the apply loop, in the background (bbolt's consistent copy in a
// read transaction, written to a temporary file, synced, then renamed over
// the previous snapshot). When the views file is missing, Open starts from
// the snapshot instead of from nothing, so that a rebuild reads only the
// events that came after it: the log's tail, however long the log. The
// restored views are checked as any views file is (pages, records), and
// against the log as any views are (its identity and the first and last
// events they applied): a snapshot of another log is refused as live
// views of another log are, and a damaged one is deleted and the views
// rebuilt from sequence 1. A snapshot is a cache: deleting it costs only
// a longer rebuild.
func SnapshotPath(path string) string { return path + snapshotSuffix }

// maybeSnapshot starts a snapshot in the background when the views have
// applied SnapshotEvery events since the last one and none is being
// written. The caller holds applyMu.
func (p *Projector) maybeSnapshot(through uint64) {
	every := p.cfg.SnapshotEvery
	if every < 0 || through < p.snapAt+uint64(every) || !p.snapping.CompareAndSwap(false, true) {
		return
	}
	p.snapAt = through
	p.snapWG.Add(1)
	go func() {
		defer p.snapWG.Done()
		defer p.snapping.Store(false)
		if err := p.writeSnapshot(); err != nil && !p.isClosed() {
			p.log.Warn("could not write a snapshot of the views; the next one is tried after as many events again", "file", SnapshotPath(p.cfg.Path), "error", err)
		}
	}()
}

// writeSnapshot copies the views, as of their last committed batch, to
// the snapshot's path.
func (p *Projector) writeSnapshot() error {
	if p.isClosed() {
		return nil
	}
	p.dbMu.RLock()
	defer p.dbMu.RUnlock()
	if p.db == nil {
		return nil
	}
	return writeAtomically(SnapshotPath(p.cfg.Path), true, func(f *os.File) error {
		return p.db.View(func(tx *bolt.Tx) error {
			_, err := tx.WriteTo(f)
			return err
		})
	})
}

// writeAtomically writes a file at path with write, through a temporary
// file beside it that is synced before it takes path's name, and syncs
// the directory: path holds the old contents or the new, whole. With
// replace false the file takes the name only if nothing has it (a hard
// link, which fails when path exists: fs.ErrExist), so that two engines
// starting on one root never put a file under the other's lock.
func writeAtomically(path string, replace bool, write func(*os.File) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	done := false
	defer func() {
		if !done {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	if err := write(tmp); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	done = true
	if replace {
		err = os.Rename(tmp.Name(), path)
	} else {
		err = os.Link(tmp.Name(), path)
	}
	if !replace || err != nil {
		if rerr := os.Remove(tmp.Name()); err == nil {
			err = rerr
		}
	}
	if err != nil {
		return err
	}
	return syncDir(filepath.Dir(path))
}

// restoreSnapshot puts a copy of the snapshot at the views path, which
// must not exist, and reports whether there was a snapshot to copy.
func restoreSnapshot(path string, log *slog.Logger) (bool, error) {
	snap, err := os.Open(SnapshotPath(path))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("projector: opening the views' snapshot: %w", err)
	}
	defer snap.Close()
	err = writeAtomically(path, false, func(f *os.File) error {
		_, err := io.Copy(f, snap)
		return err
	})
	if errors.Is(err, fs.ErrExist) {
		return false, nil // another engine put a views file there first
	}
	if err != nil {
		return false, fmt.Errorf("projector: restoring the views from %s: %w", snap.Name(), err)
	}
	log.Info("the views file was missing: starting from its snapshot; the events after it are applied from the log", "file", path, "snapshot", snap.Name())
	return true, nil
}

// dropSnapshot deletes a snapshot whose copy was found damaged.
func dropSnapshot(path string, log *slog.Logger) {
	err := os.Remove(SnapshotPath(path))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		log.Warn("could not delete the damaged snapshot of the views", "file", SnapshotPath(path), "error", err)
		return
	}
	log.Warn("the snapshot of the views was damaged: deleted it; the views are rebuilt from sequence 1", "file", SnapshotPath(path))
}

// snapshotSeq is the last event the snapshot of the views at path
// applied, 0 when there is none or it cannot be read (the next snapshot
// then replaces it as soon as it is due).
func snapshotSeq(path string) uint64 {
	if _, err := os.Stat(SnapshotPath(path)); err != nil {
		return 0
	}
	db, err := bolt.Open(SnapshotPath(path), 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		return 0
	}
	defer db.Close()
	var c cursor
	err = guard(func() error {
		return db.View(func(tx *bolt.Tx) (err error) {
			c, err = readCursor(tx)
			return err
		})
	})
	if err != nil {
		return 0
	}
	return c.Seq
}

// Snapshot writes a snapshot of the views now, as their last committed
// batch left them, whatever SnapshotEvery says: retention takes one after
// a removal, so that a rebuild from the snapshot reads only what the log
// retains.
func (p *Projector) Snapshot() error {
	p.applyMu.Lock()
	p.snapAt = p.Applied()
	p.applyMu.Unlock()
	return p.writeSnapshot()
}
