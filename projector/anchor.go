package projector

import (
	"context"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/orbitrun/orbit/events"
)

// checkAnchor makes sure the views are views of this log (DESIGN §2): the
// event the views applied last must still be in the log, at the same
// sequence, with the same id, and every view must be in the format this code
// writes. Otherwise the views are emptied, to be rebuilt from sequence 1 by
// the apply loop; each rebuilt batch commits with its cursor, so a crash
// during the rebuild resumes it.
func (p *Projector) checkAnchor(ctx context.Context, src Source) error {
	p.applyMu.Lock()
	defer p.applyMu.Unlock()
	if p.db == nil {
		return ErrClosed
	}
	var (
		at     cursor
		reason string
	)
	if err := p.db.View(func(tx *bolt.Tx) (err error) {
		reason = formatChange(tx)
		at, err = readCursor(tx)
		return err
	}); err != nil {
		return err
	}
	if reason == "" && at.Seq > 0 {
		var err error
		if reason, err = anchorMismatch(ctx, src, at); err != nil {
			return err
		}
	}
	if reason != "" {
		p.log.Warn("rebuilding the views from the log", "reason", reason, "applied_seq", at.Seq, "applied_id", at.ID)
		if err := p.db.Update(resetViews); err != nil {
			return fmt.Errorf("projector: emptying the views for a rebuild: %w", err)
		}
		at = cursor{}
	}
	p.setApplied(at.Seq)
	return nil
}

// anchorMismatch says why the log does not support the views applied up to
// at, or "" when it does.
func anchorMismatch(ctx context.Context, src Source, at cursor) (string, error) {
	last, err := src.LastSeq(ctx)
	if err != nil {
		return "", fmt.Errorf("projector: checking the views against the log: %w", err)
	}
	if at.Seq > last {
		return fmt.Sprintf("the views applied sequence %d but the log ends at %d: it was restored from an older copy or replaced", at.Seq, last), nil
	}
	ev, err := src.EventAt(ctx, at.Seq)
	switch {
	case errors.Is(err, events.ErrNotFound):
		return fmt.Sprintf("event %d, the last the views applied, is no longer in the log", at.Seq), nil
	case errors.Is(err, events.ErrInvalidEvent), errors.Is(err, events.ErrUnknownType):
		return fmt.Sprintf("the log holds no valid event at sequence %d, the last the views applied", at.Seq), nil
	case err != nil:
		return "", fmt.Errorf("projector: checking the views against the log: %w", err)
	case ev.ID != at.ID:
		return fmt.Sprintf("the log holds event %s at sequence %d, where the views applied %s", ev.ID, at.Seq, at.ID), nil
	}
	return "", nil
}
