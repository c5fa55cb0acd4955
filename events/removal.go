package events

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/orbitrun/orbit/internal/failpoint"
)

// Removal from the log (DESIGN §15, docs/architecture/retention.md). The
// event stream allows a purge by subject, and only the engine's identity
// may ask for one (Permissions denies every other identity the stream's
// purge and delete API); messages are never deleted one by one
// (DenyDelete). Every purge is preceded by a signed log.removed naming
// exactly what it removes, so that:
//
//   - Audit explains the missing sequences a record names, and still
//     reports any other;
//   - a reader refuses an event of a removed run or task made before its
//     record and stored again after it (a late copy, which placeBefore no
//     longer finds a first for: see removedCopy);
//   - the projector's anchor accepts views whose first or last applied
//     event was removed (EventAt's ErrRemoved).

// ErrRemoved is returned by EventAt for a sequence a log.removed record
// names: the event was archived and removed, not lost. It wraps
// ErrNotFound.
var ErrRemoved = fmt.Errorf("%w: removed by retention", ErrNotFound)

// ReasonRemoved: an event of a run or task the log removed, made before
// the removal and stored after it: a copy of a removed event.
const ReasonRemoved = "a removed run's or task's event stored again"

// RemovedFilter is the subject filter of every log.removed record.
const RemovedFilter = EventsRoot + "." + AggregateLog + ".*." + LogRemoved

// Removal is one log.removed record as stored.
type Removal struct {
	Seq  uint64
	Time time.Time
	LogRemovedData
}

// Removals returns every log.removed record in the log, in order.
func (l *Log) Removals(ctx context.Context) ([]Removal, error) {
	evs, err := l.Read(ctx, FollowOptions{Filters: []string{RemovedFilter}})
	if err != nil {
		return nil, err
	}
	out := make([]Removal, 0, len(evs))
	for _, ev := range evs {
		r := Removal{Seq: ev.Seq, Time: ev.Time}
		if err := ev.Decode(&r.LogRemovedData); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// RemovalOf returns the log.removed record that names run runID, or nil
// when none does. A record names what it removes before its purge: a run
// it names is being removed, or was.
func (l *Log) RemovalOf(ctx context.Context, runID string) (*Removal, error) {
	recs, err := l.Removals(ctx)
	if err != nil {
		return nil, err
	}
	for i := range recs {
		if slices.Contains(recs[i].Runs, runID) {
			return &recs[i], nil
		}
	}
	return nil, nil
}

// removedSet is what the records say was removed: the sequences, and the
// subject prefix of each removed run and task with the time of its
// record.
type removedSet struct {
	ranges   []SeqRange // sorted, disjoint
	prefixes map[string]time.Time
}

func newRemovedSet() *removedSet { return &removedSet{prefixes: map[string]time.Time{}} }

// add takes in one record.
func (s *removedSet) add(at time.Time, d LogRemovedData) {
	s.ranges = append(s.ranges, d.Seqs...)
	slices.SortFunc(s.ranges, func(a, b SeqRange) int { return cmp.Compare(a.From, b.From) })
	for _, f := range d.Filters() {
		s.prefixes[strings.TrimSuffix(f, ">")] = at
	}
}

// has reports whether seq is one a record removed.
func (s *removedSet) has(seq uint64) bool {
	i, _ := slices.BinarySearchFunc(s.ranges, seq, func(r SeqRange, seq uint64) int {
		switch {
		case r.Through < seq:
			return -1
		case r.From > seq:
			return 1
		}
		return 0
	})
	return i < len(s.ranges) && s.ranges[i].From <= seq && seq <= s.ranges[i].Through
}

// copyOf reports whether an event on subject made at made is a copy of a
// removed one: its run or task was removed by a record made after it.
func (s *removedSet) copyOf(subject string, made time.Time) bool {
	parts := strings.SplitN(subject, ".", 5)
	if len(parts) < 5 {
		return false
	}
	at, ok := s.prefixes[strings.Join(parts[:4], ".")+"."]
	return ok && made.Before(at)
}

// explain returns the parts of the sequences from..through that no record
// removed.
func (s *removedSet) explain(from, through uint64) []SeqRange {
	var out []SeqRange
	next := from
	for _, r := range s.ranges {
		if r.Through < next {
			continue
		}
		if r.From > through {
			break
		}
		if r.From > next {
			out = append(out, SeqRange{next, r.From - 1})
		}
		next = r.Through + 1
		if next > through {
			return out
		}
	}
	if next <= through {
		out = append(out, SeqRange{next, through})
	}
	return out
}

// removed reads the records into a removedSet.
func (l *Log) removed(ctx context.Context) (*removedSet, error) {
	recs, err := l.Removals(ctx)
	if err != nil {
		return nil, err
	}
	s := newRemovedSet()
	for _, r := range recs {
		s.add(r.Time, r.LogRemovedData)
	}
	return s, nil
}

// Failpoints of a removal (see internal/failpoint).
const (
	// FailpointRemovalRecorded: the log.removed is stored, nothing purged.
	FailpointRemovalRecorded = "retention-recorded"
	// FailpointRemovalPurging: the first subject of a record is purged,
	// the others not.
	FailpointRemovalPurging = "retention-purging"
)

// Remove appends the signed log.removed record d and then purges what it
// names. The caller has archived the events first (and d names the
// archive). A Remove interrupted after its record is finished by Purge
// of the same record.
func (l *Log) Remove(ctx context.Context, d LogRemovedData) (Removal, error) {
	if len(d.Seqs) == 0 || len(d.Filters()) == 0 {
		return Removal{}, fmt.Errorf("%w: a removal names no sequence or no subject", ErrInvalidEvent)
	}
	id := DecisionID(LogRemoved, d.ArchiveSHA256, fmt.Sprint(d.Seqs[0].From), fmt.Sprint(d.LastSeq))
	ev := Event{ID: id, Type: LogRemoved}
	a, err := l.Append(ctx, ev, d)
	if err != nil {
		return Removal{}, err
	}
	rec := Removal{Seq: a.Seq, LogRemovedData: d}
	if stored, err := l.EventAt(ctx, a.Seq); err == nil {
		rec.Time = stored.Time
	}
	failpoint.Hit(FailpointRemovalRecorded)
	return rec, l.Purge(ctx, d)
}

// Purge removes from the event stream what the record d names: the
// messages of each of its subjects through its last sequence. It is
// idempotent: finishing an interrupted removal purges again.
func (l *Log) Purge(ctx context.Context, d LogRemovedData) error {
	for i, subject := range d.Filters() {
		pctx, cancel := withDefaultTimeout(ctx)
		err := l.events.Purge(pctx, jetstream.WithPurgeSubject(subject), jetstream.WithPurgeSequence(d.LastSeq+1))
		cancel()
		if err != nil {
			var apiErr *jetstream.APIError
			if errors.As(err, &apiErr) && strings.Contains(strings.ToLower(apiErr.Description), "purge") {
				return fmt.Errorf("%w: the stream %s denies purges (made before retention could remove): %v", ErrPurgeDenied, EventsStream, err)
			}
			return fmt.Errorf("%w: purging %s: %v", ErrUnavailable, subject, err)
		}
		if i == 0 {
			failpoint.Hit(FailpointRemovalPurging)
		}
	}
	return nil
}

// ErrPurgeDenied: the event stream denies purges, as streams made before
// retention do (JetStream cannot lift deny_purge from a stream).
var ErrPurgeDenied = errors.New("the log denies purges")

// PurgeAllowed reports whether the event stream allows the engine's
// purges.
func (l *Log) PurgeAllowed(ctx context.Context) (bool, error) {
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	info, err := l.events.Info(ctx)
	if err != nil {
		return false, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	return !info.Config.DenyPurge, nil
}

// removedCopy reports whether an event on subject made at made, stored
// out of its time as the first under its id, belongs to a run or task a
// log.removed record made after it removed: the first under its id was
// removed, and this is a copy. Read only for such events, which are rare,
// so the records are read each time.
func (l *Log) removedCopy(ctx context.Context, subject string, made time.Time) (bool, error) {
	if strings.HasPrefix(subject, EventsRoot+"."+AggregateLog+".") {
		return false, nil // the records themselves, which are never removed
	}
	removed, err := l.removed(ctx)
	if err != nil {
		return false, err
	}
	return removed.copyOf(subject, made), nil
}
