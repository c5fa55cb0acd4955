package projector

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/failpoint"
)

// The meta bucket records how far the views got and in which format.
var (
	bucketMeta    = []byte("meta")
	keyAppliedSeq = []byte("applied_seq") // decimal stream sequence
	keyAppliedID  = []byte("applied_id")  // id of the event at applied_seq
)

// versionKey is the meta key of a view's format version.
func versionKey(name string) []byte { return []byte(versionPrefix + name) }

const versionPrefix = "version:"

// cursor is the last event applied to a views file.
type cursor struct {
	Seq uint64
	ID  string
}

// openDB opens (or creates) a views file. A lock held elsewhere for longer
// than timeout is ErrLocked.
func openDB(path string, timeout time.Duration, noSync bool) (*bolt.DB, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, fmt.Errorf("projector: creating the views directory: %w", err)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: timeout, NoSync: noSync})
	if errors.Is(err, berrors.ErrTimeout) {
		return nil, fmt.Errorf("%w: %s (still held after %s)", ErrLocked, path, timeout)
	}
	if err != nil {
		return nil, fmt.Errorf("projector: opening %s: %w", path, err)
	}
	return db, nil
}

// initViews creates the meta bucket and every view's buckets in a file that
// has none yet, and records the current formats. A file that has them is
// left alone: a format change is the anchor check's business.
func initViews(tx *bolt.Tx) error {
	if tx.Bucket(bucketMeta) != nil {
		return nil
	}
	return createViews(tx)
}

func createViews(tx *bolt.Tx) error {
	meta, err := tx.CreateBucket(bucketMeta)
	if err != nil {
		return fmt.Errorf("projector: creating bucket %s: %w", bucketMeta, err)
	}
	for _, v := range views {
		if err := meta.Put(versionKey(v.name()), []byte(strconv.Itoa(v.version()))); err != nil {
			return err
		}
		for _, name := range v.buckets() {
			if _, err := tx.CreateBucket(name); err != nil {
				return fmt.Errorf("projector: creating bucket %s: %w", name, err)
			}
		}
	}
	return nil
}

// resetViews drops every bucket of the file, including those of views that
// no longer exist, and starts over empty at sequence 0.
func resetViews(tx *bolt.Tx) error {
	var names [][]byte
	if err := tx.ForEach(func(name []byte, _ *bolt.Bucket) error {
		names = append(names, slices.Clone(name))
		return nil
	}); err != nil {
		return err
	}
	for _, name := range names {
		if err := tx.DeleteBucket(name); err != nil {
			return fmt.Errorf("projector: dropping bucket %s: %w", name, err)
		}
	}
	return createViews(tx)
}

// formatChange says why the file's recorded view formats are not the ones
// this code writes, or "" when they are.
func formatChange(tx *bolt.Tx) string {
	meta := tx.Bucket(bucketMeta)
	if meta == nil {
		return "the views file has no meta bucket"
	}
	known := map[string]bool{}
	for _, v := range views {
		known[v.name()] = true
		have, want := meta.Get(versionKey(v.name())), strconv.Itoa(v.version())
		switch {
		case have == nil:
			return fmt.Sprintf("view %s is new (format %s)", v.name(), want)
		case string(have) != want:
			return fmt.Sprintf("view %s changed format from %s to %s", v.name(), have, want)
		}
	}
	var gone string
	_ = meta.ForEach(func(k, _ []byte) error {
		if name, ok := strings.CutPrefix(string(k), versionPrefix); ok && !known[name] && gone == "" {
			gone = name
		}
		return nil
	})
	if gone != "" {
		return fmt.Sprintf("view %s no longer exists", gone)
	}
	return ""
}

// readCursor returns the last applied event recorded in tx.
func readCursor(tx *bolt.Tx) (cursor, error) {
	meta := tx.Bucket(bucketMeta)
	if meta == nil {
		return cursor{}, nil
	}
	var c cursor
	if raw := meta.Get(keyAppliedSeq); raw != nil {
		seq, err := strconv.ParseUint(string(raw), 10, 64)
		if err != nil {
			return cursor{}, fmt.Errorf("projector: %w: meta %s is %q: %w", errDamaged, keyAppliedSeq, raw, err)
		}
		c.Seq = seq
	}
	c.ID = string(meta.Get(keyAppliedID))
	return c, nil
}

func writeCursor(tx *bolt.Tx, c cursor) error {
	meta := tx.Bucket(bucketMeta)
	if meta == nil {
		return fmt.Errorf("projector: the views file has no %s bucket", bucketMeta)
	}
	if err := meta.Put(keyAppliedSeq, []byte(strconv.FormatUint(c.Seq, 10))); err != nil {
		return err
	}
	return meta.Put(keyAppliedID, []byte(c.ID))
}

// appliedCursor reads the cursor of db.
func appliedCursor(db *bolt.DB) (cursor, error) {
	var c cursor
	err := db.View(func(tx *bolt.Tx) (err error) {
		c, err = readCursor(tx)
		return err
	})
	return c, err
}

// applyBatch folds evs into every view of db in one transaction and records
// the last of them as the applied cursor in the same transaction: it decodes
// their data (see decodeEvents) and applies them with applyDecoded.
//
// IMPORTANT: views and cursor commit together, so that after a crash either
// the whole batch and its cursor are there or neither is. Events at or
// below the recorded cursor are skipped: that check, made inside the
// writing transaction, is what makes applying exactly-once even
// when a feed delivers an event again. beforeCommit, when set, runs just
// before the commit and can abort it (a test failpoint).
//
// It returns the new cursor and how many events it folded.
func applyBatch(db *bolt.DB, log *slog.Logger, evs []events.Event, beforeCommit func(seq uint64) error) (cursor, int, error) {
	return applyDecoded(db, log, decodeEvents(evs), beforeCommit)
}

// decodeEvents decodes the data of each event, once for every view that
// folds it. It reads nothing but the events, so a rebuild does it for the
// next batch while the previous one is being applied.
func decodeEvents(evs []events.Event) []decodedEvent {
	decoded := make([]decodedEvent, len(evs))
	for i, ev := range evs {
		decoded[i] = decodeEvent(ev)
	}
	return decoded
}

// applyDecoded is applyBatch for events whose data is decoded. It takes evs
// over: what it skips it removes from the slice.
func applyDecoded(db *bolt.DB, log *slog.Logger, evs []decodedEvent, beforeCommit func(seq uint64) error) (cursor, int, error) {
	tx, err := db.Begin(true)
	if err != nil {
		return cursor{}, 0, fmt.Errorf("projector: beginning a transaction: %w", err)
	}
	defer func() { _ = tx.Rollback() }()

	from, err := readCursor(tx)
	if err != nil {
		return cursor{}, 0, err
	}
	fresh := slices.DeleteFunc(evs, func(ev decodedEvent) bool { return ev.Seq <= from.Seq })
	if len(fresh) == 0 {
		return from, 0, nil
	}
	for _, v := range views {
		for _, name := range v.buckets() {
			if tx.Bucket(name) == nil {
				return cursor{}, 0, fmt.Errorf("projector: view %s: the views file has no %s bucket", v.name(), name)
			}
		}
		b, err := v.begin(tx, log)
		if err != nil {
			return cursor{}, 0, fmt.Errorf("projector: view %s: %w", v.name(), err)
		}
		for _, ev := range fresh {
			err := b.fold(ev)
			if errors.Is(err, events.ErrInvalidEvent) {
				log.Warn("skipping an event whose data does not decode", "view", v.name(),
					"seq", ev.Seq, "type", ev.Type, "id", ev.ID, "err", err)
				continue
			}
			if err != nil {
				return cursor{}, 0, fmt.Errorf("projector: view %s at sequence %d: %w", v.name(), ev.Seq, err)
			}
		}
		if err := b.flush(); err != nil {
			return cursor{}, 0, fmt.Errorf("projector: view %s: writing: %w", v.name(), err)
		}
	}
	last := fresh[len(fresh)-1]
	to := cursor{Seq: last.Seq, ID: last.ID}
	if err := writeCursor(tx, to); err != nil {
		return cursor{}, 0, err
	}
	if from.Seq == 0 {
		if err := writeFirst(tx, cursor{Seq: fresh[0].Seq, ID: fresh[0].ID}); err != nil {
			return cursor{}, 0, err
		}
	}
	if beforeCommit != nil {
		if err := beforeCommit(to.Seq); err != nil {
			return cursor{}, 0, err
		}
	}
	failpoint.Hit("projector-mid-batch")
	if err := tx.Commit(); err != nil {
		return cursor{}, 0, fmt.Errorf("projector: committing through sequence %d: %w", to.Seq, err)
	}
	return to, len(fresh), nil
}
