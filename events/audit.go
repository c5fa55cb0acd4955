package events

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Kinds of AuditProblem.
const (
	// ProblemUnsigned, ProblemBadMAC and ProblemUnbound: the message fails
	// verification by the log key (see ReasonUnsigned, ReasonBadMAC,
	// ReasonUnbound).
	ProblemUnsigned = ReasonUnsigned
	ProblemBadMAC   = ReasonBadMAC
	ProblemUnbound  = ReasonUnbound
	// ProblemRepeated: a format-2 event stored out of its time under an id
	// stored before (see ReasonRepeated).
	ProblemRepeated = ReasonRepeated
	// ProblemLate and ProblemEarly: a format-2 event the server stored
	// more than maxLag after, or before, its time (see checkTime). Notes
	// when it is the first message under its id, which every reader
	// reads (an append that reached the server late: an engine suspended
	// between making it and storing it, a publish retried for long, a
	// clock stepped); a copy is ProblemRepeated besides.
	ProblemLate  = "stored late"
	ProblemEarly = "stored before it was made"
	// ProblemUndecodable: the message is not an event this Orbit knows.
	ProblemUndecodable = "undecodable"
	// ProblemMissing: sequences the stream no longer holds that no
	// log.removed record names: the stream denies deletes and allows
	// only the engine's purges, each after its record, so they were
	// removed behind its back.
	ProblemMissing = "missing"
	// ProblemRepeatedID: an event stored a second time, byte for byte, id
	// and time included: the server stores an id once within the
	// duplicate window, so a copy stored past it or under another message
	// id. (An engine that appends a decision again past the window makes
	// it anew, with another time, which is no problem.)
	ProblemRepeatedID = "repeated id"
	// ProblemAfterEnd: an event of a run after its run.finished that no
	// step still running then accounts for (see auditRuns).
	ProblemAfterEnd = "after its run's end"
	// ProblemTimeBackwards: an event made more than maxLag before an
	// earlier event of its run.
	ProblemTimeBackwards = "time going backwards"
	// ProblemDuplicateWindow: the stream's duplicate window is shorter
	// than the time check of format-2 events relies on (see maxLag).
	ProblemDuplicateWindow = "duplicate window"
)

// AuditProblem is one thing wrong with the log.
type AuditProblem struct {
	Kind string `json:"kind"`
	// Seq is the message's sequence; for ProblemMissing the first missing
	// one, and Through the last.
	Seq     uint64 `json:"seq"`
	Through uint64 `json:"through,omitempty"`
	Subject string `json:"subject,omitempty"`
	Detail  string `json:"detail,omitempty"`
}

// String reads like "seq 12 orbit.events.run.R.step.finished: bad MAC".
func (p AuditProblem) String() string {
	switch {
	case p.Kind == ProblemMissing && p.Through > p.Seq:
		return fmt.Sprintf("seq %d-%d: missing", p.Seq, p.Through)
	case p.Kind == ProblemMissing:
		return fmt.Sprintf("seq %d: missing", p.Seq)
	case p.Kind == ProblemDuplicateWindow:
		return fmt.Sprintf("stream %s: %s: %s", EventsStream, p.Kind, p.Detail)
	case p.Detail != "":
		return fmt.Sprintf("seq %d %s: %s: %s", p.Seq, p.Subject, p.Kind, p.Detail)
	}
	return fmt.Sprintf("seq %d %s: %s", p.Seq, p.Subject, p.Kind)
}

// AuditReport is what Audit found.
type AuditReport struct {
	// Messages is how many messages the stream holds; LastSeq the last
	// sequence it ever stored.
	Messages uint64 `json:"messages"`
	LastSeq  uint64 `json:"last_seq"`
	// SignedFrom is the first sequence that must be signed; 0 when the log
	// is not signed (no key), and MACs were not checked. BoundFrom is the
	// first that must carry a format-2 MAC (0: none yet).
	SignedFrom uint64 `json:"signed_from"`
	// Removed is how many events log.removed records say retention
	// removed (archived, then purged); their sequences are no problem.
	Removed   uint64         `json:"removed,omitempty"`
	BoundFrom uint64         `json:"bound_from,omitempty"`
	Problems  []AuditProblem `json:"problems"`
	// Notes are what is unusual and no problem: events stored out of
	// their time that are the first under their id (ProblemLate,
	// ProblemEarly), read as any other.
	Notes []AuditProblem `json:"notes,omitempty"`
}

// Audit checks the whole event log: every message's MAC (when this Log
// has the log key) and, in format 2, its place (stored within maxLag of
// its time, or the first under its id: see placeBefore, which readers
// apply too); that it decodes; that no
// sequence is missing from 1 to the stream's last — removal at the very
// end included, since the stream remembers its last sequence; and what a
// copy of an event stored again would break, whichever format it is in:
// a repeated id, an event after its run's end, time going backwards (see
// auditRuns). It reads the log in batches, never all at once, and records
// nothing (see Log.checkEvent for what readers record). An error means the
// audit could not finish; problems found are in the report.
func (l *Log) Audit(ctx context.Context) (AuditReport, error) {
	ictx, cancel := withDefaultTimeout(ctx)
	info, err := l.events.Info(ictx)
	cancel()
	if err != nil {
		return AuditReport{}, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	rep := AuditReport{Messages: info.State.Msgs, LastSeq: info.State.LastSeq, Problems: []AuditProblem{}}
	if l.key != nil {
		rep.SignedFrom, rep.BoundFrom = l.key.eventsFrom, l.key.boundEventsFrom
	}
	if window := info.Config.Duplicates; window < maxLag+maxClockSkew {
		rep.Problems = append(rep.Problems, AuditProblem{Kind: ProblemDuplicateWindow,
			Detail: fmt.Sprintf("%s, shorter than the %s the time check of signed events relies on: a copy stored past it is not late yet", window, maxLag+maxClockSkew)})
	}
	runs := newAuditRuns(l)
	next := uint64(1)
	// Missing sequences are reported at the end, less those a log.removed
	// record names (it may come after them: it is read as the scan goes).
	removed := newRemovedSet()
	var gaps []SeqRange
	missing := func(upTo uint64) {
		if upTo >= next {
			gaps = append(gaps, SeqRange{next, upTo})
		}
	}
	// Through the stream's last message, as its leader has it: a replica
	// behind it would end the scan short, and audit would pass a log it
	// read a prefix of.
	last, err := l.lastStored(ctx)
	if err != nil {
		return rep, err
	}
	err = l.scanThrough(ctx, EventsStream, "", 1, last, func(seq uint64, msg *nats.Msg) error {
		missing(seq - 1)
		next = seq + 1
		subject := serverHeader(msg.Header, jetstream.SubjectHeader)
		format2 := false
		if l.key != nil {
			var reason string
			if reason, format2 = l.verifyEvent(seq, subject, msg.Header, msg.Data); reason != "" {
				rep.Problems = append(rep.Problems, AuditProblem{Kind: reason, Seq: seq, Subject: subject})
				return nil
			}
		}
		ev, err := DecodeEvent(msg.Data)
		if err != nil {
			rep.Problems = append(rep.Problems, AuditProblem{Kind: ProblemUndecodable, Seq: seq, Subject: subject, Detail: err.Error()})
			return nil
		}
		ev.Seq = seq
		late := false
		if format2 {
			stored := storedTime(msg.Header)
			if off := checkTime(ev.Time, stored, l.lag()); off != "" {
				before, err := l.placeBefore(ctx, seq, subject, msg.Header, ev.Time, stored)
				if err != nil {
					return err
				}
				when := fmt.Sprintf("made %s, stored %s", ev.Time.Format(time.RFC3339Nano), stored.Format(time.RFC3339Nano))
				if before != 0 {
					rep.Problems = append(rep.Problems, AuditProblem{Kind: ProblemRepeated, Seq: seq, Subject: subject,
						Detail: fmt.Sprintf("%s; its id is stored at seq %d", when, before)})
				} else if removed.copyOf(subject, ev.Time) {
					rep.Problems = append(rep.Problems, AuditProblem{Kind: ReasonRemoved, Seq: seq, Subject: subject,
						Detail: fmt.Sprintf("%s; its run or task was removed after it was made", when)})
					return nil
				} else {
					late = true
					rep.Notes = append(rep.Notes, AuditProblem{Kind: off, Seq: seq, Subject: subject,
						Detail: fmt.Sprintf("%s apart (%s); the first message under its id: an append of the engine's that reached the server late (an engine suspended, a publish retried) or a clock that was off; read as any other",
							stored.Sub(ev.Time).Abs().Round(time.Millisecond), when)})
				}
			}
		}
		if ev.Type == LogRemoved {
			var d LogRemovedData
			if err := ev.Decode(&d); err != nil {
				rep.Problems = append(rep.Problems, AuditProblem{Kind: ProblemUndecodable, Seq: seq, Subject: subject, Detail: err.Error()})
				return nil
			}
			removed.add(ev.Time, d)
			rep.Removed += d.Count
		}
		problems, err := runs.check(ctx, ev, msg.Data, subject, late)
		rep.Problems = append(rep.Problems, problems...)
		return err
	})
	if err != nil {
		return rep, err
	}
	missing(info.State.LastSeq)
	for _, g := range gaps {
		for _, r := range removed.explain(g.From, g.Through) {
			rep.Problems = append(rep.Problems, AuditProblem{Kind: ProblemMissing, Seq: r.From, Through: r.Through})
		}
	}
	slices.SortStableFunc(rep.Problems, func(a, b AuditProblem) int { return cmp.Compare(a.Seq, b.Seq) })
	return rep, nil
}
