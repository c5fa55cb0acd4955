package projector

import (
	"context"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/orbitrun/orbit/events"
)

// checkAnchor makes sure the views are views of this log (DESIGN §2): the
// stream must be the one the views were folded from (its creation time),
// and the first and the last event the views applied must still be in it,
// at the same sequences, with the same ids. Otherwise the log was lost,
// replaced or restored from an older copy: checkAnchor returns a
// *MismatchError and leaves the views alone, for an operator to restore
// the log or to accept it (the engine's `orbit init --new-log`). Nothing is
// rebuilt from another log silently.
//
// Views in a format this code does not write are our own cache, not the
// log: they are emptied, to be rebuilt from sequence 1 by the apply loop;
// each rebuilt batch commits with its cursor, so a crash during the rebuild
// resumes it. Views that applied nothing, or that were written before the
// log's identity was recorded, adopt the log's.
func (p *Projector) checkAnchor(ctx context.Context, src Source) error {
	p.applyMu.Lock()
	defer p.applyMu.Unlock()
	if p.db == nil {
		return ErrClosed
	}
	var (
		rec    LogRecord
		reason string
	)
	if err := p.db.View(func(tx *bolt.Tx) (err error) {
		reason = formatChange(tx)
		rec, err = readLogRecord(tx)
		return err
	}); err != nil {
		return err
	}
	if rec.LastSeq > 0 {
		if err := logMismatch(ctx, src, rec); err != nil {
			return err
		}
	}
	if reason != "" {
		p.log.Warn("rebuilding the views from the log", "reason", reason, "applied_seq", rec.LastSeq, "applied_id", rec.LastID)
		if err := p.db.Update(resetViews); err != nil {
			return fmt.Errorf("projector: emptying the views for a rebuild: %w", err)
		}
		rec = LogRecord{}
		p.snapAt = 0
	}
	if err := p.adoptLog(ctx, src, rec); err != nil {
		return err
	}
	p.setApplied(rec.LastSeq)
	return nil
}

// adoptLog records src's identity in views that applied nothing, and in
// views the anchor check accepted that were written before the identity was
// recorded (their first event is then taken to be the log's first). The
// caller holds applyMu.
func (p *Projector) adoptLog(ctx context.Context, src Source, rec LogRecord) error {
	fresh := rec.LastSeq == 0
	if !fresh && !rec.Created.IsZero() && rec.FirstSeq > 0 {
		return nil
	}
	created, err := src.Created(ctx)
	if err != nil {
		return fmt.Errorf("projector: reading the log's identity: %w", err)
	}
	var first *cursor
	if !fresh && rec.FirstSeq == 0 {
		ev, err := src.EventAt(ctx, 1)
		switch {
		case err == nil:
			first = &cursor{Seq: ev.Seq, ID: ev.ID}
		case !errors.Is(err, events.ErrNotFound):
			return fmt.Errorf("projector: reading the log's first event: %w", err)
		}
	}
	return p.db.Update(func(tx *bolt.Tx) error {
		if fresh && tx.Bucket(bucketLog) != nil {
			if err := tx.DeleteBucket(bucketLog); err != nil {
				return fmt.Errorf("projector: dropping bucket %s: %w", bucketLog, err)
			}
		}
		if err := writeCreated(tx, created); err != nil {
			return err
		}
		if first != nil {
			return writeFirst(tx, *first)
		}
		return nil
	})
}
