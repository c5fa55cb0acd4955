package projector

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/orbitrun/orbit/events"
)

// The log bucket records which log the views were folded from: the events
// stream's creation time and the first event applied (the last one is the
// meta bucket's cursor). It is not a view: Replay does not compare it, and
// the anchor check is what reads it.
var (
	bucketLog      = []byte("log")
	keyLogCreated  = []byte("stream_created") // RFC 3339, nanoseconds, UTC
	keyLogFirstSeq = []byte("first_seq")      // decimal stream sequence
	keyLogFirstID  = []byte("first_id")       // id of the event at first_seq
)

// LogRecord is what a views file records about the log it was folded from.
// Zero fields were not recorded: Created is zero in files written before
// the record was kept, until the anchor check adopts the log's.
type LogRecord struct {
	// Created is when the events stream the views were folded from was
	// created.
	Created time.Time
	// FirstSeq and FirstID are the first event the views applied.
	FirstSeq uint64
	FirstID  string
	// LastSeq and LastID are the last event the views applied: the
	// cursor the apply loop goes on from. LastSeq 0 means the views
	// applied nothing.
	LastSeq uint64
	LastID  string
}

// String describes the log the record expects, for messages.
func (r LogRecord) String() string {
	if r.LastSeq == 0 {
		return "no events applied"
	}
	s := ""
	if !r.Created.IsZero() {
		s = fmt.Sprintf("stream %s created %s, ", events.EventsStream, r.Created.Format(time.RFC3339Nano))
	}
	if r.FirstSeq > 0 {
		s += fmt.Sprintf("events %d (%s) through %d (%s)", r.FirstSeq, r.FirstID, r.LastSeq, r.LastID)
	} else {
		s += fmt.Sprintf("events through %d (%s)", r.LastSeq, r.LastID)
	}
	return s
}

// Recorded returns what the views file records about the log it was folded
// from. An engine reads it before it opens the log: views that applied
// events need that log, and must not see it made anew empty.
func (p *Projector) Recorded() (LogRecord, error) {
	p.dbMu.RLock()
	defer p.dbMu.RUnlock()
	if p.db == nil {
		return LogRecord{}, ErrClosed
	}
	var r LogRecord
	err := p.db.View(func(tx *bolt.Tx) (err error) {
		r, err = readLogRecord(tx)
		return err
	})
	return r, err
}

// CheckLog makes the anchor check that Run makes first (see Run), so that
// an engine can refuse a log that is not the views' before it serves
// anything. It returns an error matching ErrLogMismatch, and leaves the
// views as they are, when the log is not the one the views were folded
// from; ErrNoSource without a source.
func (p *Projector) CheckLog(ctx context.Context) error {
	src, err := p.source()
	if err != nil {
		return err
	}
	return p.checkAnchor(ctx, src)
}

// MismatchError says how the log differs from the one the views were folded
// from. It matches ErrLogMismatch.
type MismatchError struct {
	// Found is what the log is, e.g. "the log ends at sequence 3".
	Found string
	// Expected is what the views record about their log.
	Expected LogRecord
}

func (e *MismatchError) Error() string {
	return fmt.Sprintf("projector: %s: found %s; the views expect %s", ErrLogMismatch, e.Found, e.Expected)
}

// Unwrap makes the error match ErrLogMismatch.
func (e *MismatchError) Unwrap() error { return ErrLogMismatch }

// readLogRecord reads the cursor and the log bucket of tx.
func readLogRecord(tx *bolt.Tx) (LogRecord, error) {
	at, err := readCursor(tx)
	if err != nil {
		return LogRecord{}, err
	}
	r := LogRecord{LastSeq: at.Seq, LastID: at.ID}
	b := tx.Bucket(bucketLog)
	if b == nil {
		return r, nil
	}
	if raw := b.Get(keyLogCreated); raw != nil {
		if r.Created, err = time.Parse(time.RFC3339Nano, string(raw)); err != nil {
			return LogRecord{}, fmt.Errorf("projector: %w: %s %s is %q: %w", errDamaged, bucketLog, keyLogCreated, raw, err)
		}
	}
	if raw := b.Get(keyLogFirstSeq); raw != nil {
		if r.FirstSeq, err = strconv.ParseUint(string(raw), 10, 64); err != nil {
			return LogRecord{}, fmt.Errorf("projector: %w: %s %s is %q: %w", errDamaged, bucketLog, keyLogFirstSeq, raw, err)
		}
	}
	r.FirstID = string(b.Get(keyLogFirstID))
	return r, nil
}

// writeCreated records the creation time of the views' log in tx.
func writeCreated(tx *bolt.Tx, created time.Time) error {
	b, err := tx.CreateBucketIfNotExists(bucketLog)
	if err != nil {
		return fmt.Errorf("projector: creating bucket %s: %w", bucketLog, err)
	}
	return b.Put(keyLogCreated, []byte(created.UTC().Format(time.RFC3339Nano)))
}

// writeFirst records the first event the views applied in tx.
func writeFirst(tx *bolt.Tx, c cursor) error {
	b, err := tx.CreateBucketIfNotExists(bucketLog)
	if err != nil {
		return fmt.Errorf("projector: creating bucket %s: %w", bucketLog, err)
	}
	if err := b.Put(keyLogFirstSeq, []byte(strconv.FormatUint(c.Seq, 10))); err != nil {
		return err
	}
	return b.Put(keyLogFirstID, []byte(c.ID))
}

// recordCreated records src's creation time in a file being built from it.
func recordCreated(ctx context.Context, src Source, db *bolt.DB) error {
	created, err := src.Created(ctx)
	if err != nil {
		return fmt.Errorf("projector: reading the log's identity: %w", err)
	}
	return db.Update(func(tx *bolt.Tx) error { return writeCreated(tx, created) })
}

// logMismatch checks that src is the log r was recorded from: holding the
// last and the first event the views applied at their sequences, and the
// same stream (its creation time). It returns a *MismatchError when it is not,
// another error when the log cannot be read.
func logMismatch(ctx context.Context, src Source, r LogRecord) error {
	mismatch := func(format string, args ...any) error {
		return &MismatchError{Found: fmt.Sprintf(format, args...), Expected: r}
	}
	created, err := src.Created(ctx)
	switch {
	case errors.Is(err, events.ErrLogMissing):
		return mismatch("no stream %s", events.EventsStream)
	case err != nil:
		return fmt.Errorf("projector: checking the views against the log: %w", err)
	}
	last, err := src.LastSeq(ctx)
	if err != nil {
		return fmt.Errorf("projector: checking the views against the log: %w", err)
	}
	if r.LastSeq > last {
		return mismatch("a log that ends at sequence %d: it was restored from an older copy or replaced", last)
	}
	anchors := []cursor{{Seq: r.LastSeq, ID: r.LastID}}
	if r.FirstSeq > 0 {
		anchors = append(anchors, cursor{Seq: r.FirstSeq, ID: r.FirstID})
	}
	for _, at := range anchors {
		ev, err := src.EventAt(ctx, at.Seq)
		switch {
		case errors.Is(err, events.ErrRemoved):
			// Archived and removed by retention, as a log.removed
			// record says: the log's, not lost.
		case errors.Is(err, events.ErrNotFound):
			return mismatch("no event at sequence %d", at.Seq)
		case errors.Is(err, events.ErrInvalidEvent), errors.Is(err, events.ErrUnknownType):
			return mismatch("no valid event at sequence %d", at.Seq)
		case err != nil:
			return fmt.Errorf("projector: checking the views against the log: %w", err)
		case ev.ID != at.ID:
			return mismatch("event %s at sequence %d, where the views applied %s", ev.ID, at.Seq, at.ID)
		}
	}
	// Last, as the least telling: the same events in a stream made anew.
	if !r.Created.IsZero() && !created.Equal(r.Created) {
		return mismatch("stream %s created %s: another stream of the same name", events.EventsStream, created.Format(time.RFC3339Nano))
	}
	return nil
}
