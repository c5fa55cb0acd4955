package events

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/nats-io/nats.go"
)

// AuditArchive checks an archive's events as Audit checks the log's:
// each one's MAC by the log key in keyFile (from the sequence the key
// signs from; an unsigned one below it only when the archive was read
// from the stream the key was made beside), and that it decodes. An
// empty keyFile checks no MAC (SignedFrom 0).
func AuditArchive(keyFile string, a *Archive) (AuditReport, error) {
	rep := AuditReport{Messages: uint64(len(a.Events)), Problems: []AuditProblem{}}
	var key *logKey
	if keyFile != "" {
		k, err := readLogKey(keyFile)
		if err != nil {
			return rep, err
		}
		key = k
		rep.SignedFrom, rep.BoundFrom = key.eventsFrom, key.boundEventsFrom
	}
	for _, e := range a.Events {
		rep.LastSeq = max(rep.LastSeq, e.Seq)
		if p, ok := checkArchived(key, a.Header, e); !ok {
			rep.Problems = append(rep.Problems, p)
		}
	}
	return rep, nil
}

// checkArchived verifies and decodes one archived event.
func checkArchived(key *logKey, h ArchiveHeader, e ArchivedEvent) (AuditProblem, bool) {
	if key != nil {
		original := func() bool { return !key.eventsCreated.IsZero() && key.eventsCreated.Equal(h.StreamCreated) }
		if reason, _ := key.verify(key.eventsFrom, key.boundEventsFrom, e.Seq, original, e.Subject, nats.Header(e.Headers), e.Data); reason != "" {
			return AuditProblem{Kind: reason, Seq: e.Seq, Subject: e.Subject}, false
		}
	}
	if _, err := DecodeEvent(e.Data); err != nil {
		return AuditProblem{Kind: ProblemUndecodable, Seq: e.Seq, Subject: e.Subject, Detail: err.Error()}, false
	}
	return AuditProblem{}, true
}

// ArchiveSource reads an archive as the projector reads the log, so that
// its events fold into views (orbit replay --from-archive). Events that
// fail verification by the key (when one is given) are left out, as a
// read of the log leaves them out.
type ArchiveSource struct {
	a      *Archive
	events []Event // verified and decoded, by sequence
}

// NewArchiveSource verifies and decodes a's events with the log key in
// keyFile (empty: no MAC is checked).
func NewArchiveSource(keyFile string, a *Archive) (*ArchiveSource, error) {
	var key *logKey
	if keyFile != "" {
		k, err := readLogKey(keyFile)
		if err != nil {
			return nil, err
		}
		key = k
	}
	s := &ArchiveSource{a: a}
	for _, e := range a.Events {
		if _, ok := checkArchived(key, a.Header, e); !ok {
			continue
		}
		ev, _ := DecodeEvent(e.Data)
		ev.Seq = e.Seq
		s.events = append(s.events, ev)
	}
	sort.Slice(s.events, func(i, j int) bool { return s.events[i].Seq < s.events[j].Seq })
	return s, nil
}

// Follow is not offered: an archive does not grow.
func (s *ArchiveSource) Follow(context.Context, FollowOptions) (*Feed, error) {
	return nil, errors.New("events: an archive is read whole, not followed")
}

// Scan hands the archive's events from..upTo to fn in batches of size.
func (s *ArchiveSource) Scan(ctx context.Context, from, upTo uint64, size int, fn func([]Event) error) error {
	size = max(size, 1)
	var batch []Event
	for _, ev := range s.events {
		if ev.Seq < from || ev.Seq > upTo {
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		batch = append(batch, ev)
		if len(batch) == size {
			if err := fn(batch); err != nil {
				return err
			}
			batch = nil
		}
	}
	if len(batch) > 0 {
		return fn(batch)
	}
	return nil
}

// EventAt returns the archived event at seq.
func (s *ArchiveSource) EventAt(_ context.Context, seq uint64) (Event, error) {
	i := sort.Search(len(s.events), func(i int) bool { return s.events[i].Seq >= seq })
	if i < len(s.events) && s.events[i].Seq == seq {
		return s.events[i], nil
	}
	return Event{}, fmt.Errorf("%w: event at sequence %d", ErrNotFound, seq)
}

// LastSeq is the last sequence the archive holds.
func (s *ArchiveSource) LastSeq(context.Context) (uint64, error) {
	if len(s.events) == 0 {
		return 0, nil
	}
	return s.events[len(s.events)-1].Seq, nil
}

// Created is the creation time of the stream the archive was read from.
func (s *ArchiveSource) Created(context.Context) (time.Time, error) {
	return s.a.Header.StreamCreated, nil
}
