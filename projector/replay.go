package projector

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"

	bolt "go.etcd.io/bbolt"

	"github.com/orbitrun/orbit/events"
)

// MaxDifferences bounds the differences a ReplayReport lists.
const MaxDifferences = 50

// rebuildBatchSize is the batch size of rebuilds: larger than the live
// default because nothing waits for a rebuilt file until it is complete. The
// views do not depend on it. A record that many events update (a job's or
// a step's metrics, a long run) is read, decoded, encoded and written once
// per batch: 4,096 took about 5% off a rebuild's CPU time against 1,024.
const rebuildBatchSize = 4096

// ReplayReport is the outcome of Replay.
type ReplayReport struct {
	// Applied is the sequence both the live and the replayed views reached.
	Applied uint64 `json:"applied"`
	// Events is how many events the replay folded.
	Events int `json:"events"`
	// Differences are the first MaxDifferences keys whose values differ
	// between the live views and the replayed ones, in bucket and key
	// order; TotalDifferences counts all of them.
	Differences      []Difference `json:"differences,omitempty"`
	TotalDifferences int          `json:"total_differences"`
	// Swapped is true when the replayed views replaced the live ones.
	Swapped bool `json:"swapped"`
}

// Difference is one key whose value differs between the live and the
// replayed views. Key is the raw bbolt key (index keys contain NUL
// separators). A side that lacks the key has an empty value: views never
// store empty values.
type Difference struct {
	Bucket   string `json:"bucket"`
	Key      string `json:"key"`
	Live     string `json:"live"`
	Replayed string `json:"replayed"`
}

// Rebuild folds the events of src from sequence 1 through upTo (0 means the
// log's last sequence at the call) into a new views file at path, with the
// same folds as the live projector. It refuses to overwrite an existing file
// (the error wraps fs.ErrExist) and removes what it wrote when it fails. A
// log that ends before upTo is rebuilt to its end.
func Rebuild(ctx context.Context, src Source, path string, upTo uint64) error {
	if _, err := os.Stat(path); err == nil {
		return fmt.Errorf("projector: rebuilding into %s: %w", path, fs.ErrExist)
	}
	if upTo == 0 {
		last, err := src.LastSeq(ctx)
		if err != nil {
			return fmt.Errorf("projector: rebuilding: %w", err)
		}
		upTo = last
	}
	db, err := openDB(path, DefaultLockTimeout, true)
	if err != nil {
		return err
	}
	_, err = buildFresh(ctx, src, db, upTo)
	if err == nil {
		err = db.Sync()
	}
	if cerr := db.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("projector: closing %s: %w", path, cerr)
	}
	if err != nil {
		_ = os.Remove(path)
		return err
	}
	return nil
}

// buildFresh prepares an empty file and folds the log into it through upTo.
func buildFresh(ctx context.Context, src Source, db *bolt.DB, upTo uint64) (int, error) {
	if err := db.Update(initViews); err != nil {
		return 0, fmt.Errorf("projector: preparing %s: %w", db.Path(), err)
	}
	if err := recordCreated(ctx, src, db); err != nil {
		return 0, err
	}
	return build(ctx, src, db, upTo)
}

// build folds the events after db's cursor through upTo into db, in batches,
// and returns how many it folded. It stops early, without error, when the
// log ends before upTo.
//
// Reading and applying overlap: the scan's goroutine reads and decodes
// each batch (envelopes in events.Log.Scan, data in decodeEvents) while
// the one before it is applied, so a rebuild keeps two CPUs busy where it
// has them.
func build(ctx context.Context, src Source, db *bolt.DB, upTo uint64) (int, error) {
	from, err := appliedCursor(db)
	if err != nil || from.Seq >= upTo {
		return 0, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	batches := make(chan []decodedEvent, 1)
	var readErr error // set before batches is closed
	go func() {
		defer close(batches)
		readErr = src.Scan(ctx, from.Seq+1, upTo, rebuildBatchSize, func(evs []events.Event) error {
			select {
			case batches <- decodeEvents(evs): // a copy: evs is reused
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
	}()

	discard := slog.New(slog.DiscardHandler) // the live projector already reported what the events hold
	n := 0
	for batch := range batches {
		size := len(batch)
		if _, _, err := applyDecoded(db, discard, batch, nil); err != nil {
			cancel()
			for range batches {
				// Drained, so that the scan has returned.
			}
			return n, err
		}
		n += size
	}
	if readErr != nil {
		return n, fmt.Errorf("projector: reading the log: %w", readErr)
	}
	return n, nil
}

// Replay rebuilds the views from sequence 1 into a fresh file next to the
// live one, up to the sequence the live views have applied, and compares the
// two key by key. The bulk of the rebuild runs while the live projector
// keeps applying; then the apply loop is paused, the fresh file is brought
// up to where the live one got, and the comparison is made.
//
// With verify, the report lists the differences and the fresh file is
// deleted: no differences means the live views are exactly what the log
// folds to. Without verify, the fresh file atomically replaces the live one
// (close, rename, reopen) and Run goes on applying from there; the report
// then lists what the replay corrected. The file lock is released for the
// moment of the swap.
func (p *Projector) Replay(ctx context.Context, verify bool) (*ReplayReport, error) {
	src, err := p.source()
	if err != nil {
		return nil, err
	}
	target, err := p.liveCursor(ctx)
	if err != nil {
		return nil, err
	}
	tmp, err := os.CreateTemp(filepath.Dir(p.cfg.Path), filepath.Base(replayPattern(p.cfg.Path)))
	if err != nil {
		return nil, fmt.Errorf("projector: creating the replay file: %w", err)
	}
	name := tmp.Name()
	_ = tmp.Close()
	defer func() { _ = os.Remove(name) }() // after a swap it no longer exists
	fresh, err := openDB(name, p.cfg.LockTimeout, true)
	if err != nil {
		return nil, err
	}
	freshOpen := true
	defer func() {
		if freshOpen {
			_ = fresh.Close()
		}
	}()

	n, err := buildFresh(ctx, src, fresh, target.Seq)
	if err != nil {
		return nil, err
	}
	if p.replayBuilt != nil {
		p.replayBuilt()
	}

	p.applyMu.Lock()
	defer p.applyMu.Unlock()
	if p.db == nil {
		return nil, ErrClosed
	}
	live, err := appliedCursor(p.db)
	if err != nil {
		return nil, err
	}
	more, err := build(ctx, src, fresh, live.Seq)
	if err != nil {
		return nil, err
	}
	replayed, err := appliedCursor(fresh)
	if err != nil {
		return nil, err
	}
	if replayed.Seq < live.Seq {
		// The log's scan never ends short of the last event the stream's
		// leader holds (events.Log.Scan), so this log ends before events
		// the live views were folded from: a difference of every one of
		// them would hide that.
		return nil, fmt.Errorf("projector: the replay read the log through sequence %d (%s), short of %d (%s) that the live views applied: the log lost events they were folded from",
			replayed.Seq, replayed.ID, live.Seq, live.ID)
	}
	report := &ReplayReport{Applied: live.Seq, Events: n + more}
	if report.Differences, report.TotalDifferences, err = compare(p.db, fresh); err != nil {
		return nil, err
	}
	if verify {
		return report, nil
	}
	if replayed != live {
		return nil, fmt.Errorf("projector: the replay reached sequence %d (%s) but the live views %d (%s): the log changed under them; restart to rebuild",
			replayed.Seq, replayed.ID, live.Seq, live.ID)
	}
	if err := fresh.Sync(); err != nil {
		return nil, fmt.Errorf("projector: syncing the replayed views: %w", err)
	}
	freshOpen = false
	if err := fresh.Close(); err != nil {
		return nil, fmt.Errorf("projector: closing the replayed views: %w", err)
	}
	if err := p.swap(name); err != nil {
		return nil, err
	}
	report.Swapped = true
	p.log.Info("replaced the views with a replay of the log", "applied_seq", live.Seq, "corrected", report.TotalDifferences)
	return report, nil
}

// swap replaces the live file with the file at name. The caller holds
// applyMu.
func (p *Projector) swap(name string) error {
	p.dbMu.Lock()
	defer p.dbMu.Unlock()
	if err := p.db.Close(); err != nil {
		return fmt.Errorf("projector: closing the live views: %w", err)
	}
	p.db = nil
	renameErr := os.Rename(name, p.cfg.Path)
	if renameErr == nil {
		renameErr = syncDir(filepath.Dir(p.cfg.Path))
	}
	db, err := openDB(p.cfg.Path, p.cfg.LockTimeout, false)
	if err != nil {
		return fmt.Errorf("projector: reopening the views after a replay: %w", err)
	}
	p.db = db
	if renameErr != nil {
		return fmt.Errorf("projector: replacing the live views: %w", renameErr)
	}
	return nil
}

func (p *Projector) liveCursor(ctx context.Context) (cursor, error) {
	var c cursor
	err := p.read(ctx, func(tx *bolt.Tx) (err error) {
		c, err = readCursor(tx)
		return err
	})
	return c, err
}

// replayPattern is the os.CreateTemp pattern of the replay files of path.
func replayPattern(path string) string { return path + ".replay-*" }

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// compare lists the keys whose values differ between two views files, over
// the union of their buckets, in bucket and key order.
func compare(live, fresh *bolt.DB) ([]Difference, int, error) {
	var (
		diffs []Difference
		total int
	)
	add := func(bucket, key, l, r []byte) {
		total++
		if len(diffs) < MaxDifferences {
			diffs = append(diffs, Difference{Bucket: string(bucket), Key: string(key), Live: string(l), Replayed: string(r)})
		}
	}
	err := live.View(func(ltx *bolt.Tx) error {
		return fresh.View(func(ftx *bolt.Tx) error {
			for _, name := range bucketNames(ltx, ftx) {
				if bytes.Equal(name, bucketLog) {
					continue // the log's identity, not a view: the anchor check's business
				}
				lc, fc := cursorOf(ltx, name), cursorOf(ftx, name)
				lk, lv := first(lc)
				fk, fv := first(fc)
				for lk != nil || fk != nil {
					switch c := compareKeys(lk, fk); {
					case c < 0:
						add(name, lk, lv, nil)
						lk, lv = lc.Next()
					case c > 0:
						add(name, fk, nil, fv)
						fk, fv = fc.Next()
					default:
						if !bytes.Equal(lv, fv) {
							add(name, lk, lv, fv)
						}
						lk, lv = lc.Next()
						fk, fv = fc.Next()
					}
				}
			}
			return nil
		})
	})
	if err != nil {
		return nil, 0, fmt.Errorf("projector: comparing views: %w", err)
	}
	return diffs, total, nil
}

func bucketNames(txs ...*bolt.Tx) [][]byte {
	var names [][]byte
	for _, tx := range txs {
		_ = tx.ForEach(func(name []byte, _ *bolt.Bucket) error {
			names = append(names, slices.Clone(name))
			return nil
		})
	}
	slices.SortFunc(names, bytes.Compare)
	return slices.CompactFunc(names, bytes.Equal)
}

func cursorOf(tx *bolt.Tx, name []byte) *bolt.Cursor {
	if b := tx.Bucket(name); b != nil {
		return b.Cursor()
	}
	return nil
}

func first(c *bolt.Cursor) ([]byte, []byte) {
	if c == nil {
		return nil, nil
	}
	return c.First()
}

// compareKeys orders keys with nil (an exhausted cursor) last.
func compareKeys(a, b []byte) int {
	switch {
	case a == nil:
		return 1
	case b == nil:
		return -1
	}
	return bytes.Compare(a, b)
}
