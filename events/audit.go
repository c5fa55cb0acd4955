package events

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Kinds of AuditProblem.
const (
	// ProblemUnsigned and ProblemBadMAC: the message fails verification by
	// the log key (see ReasonUnsigned, ReasonBadMAC).
	ProblemUnsigned = ReasonUnsigned
	ProblemBadMAC   = ReasonBadMAC
	// ProblemUndecodable: the message is not an event this Orbit knows.
	ProblemUndecodable = "undecodable"
	// ProblemMissing: sequences the stream no longer holds. The stream
	// denies deletes and purges, so they were removed behind its back.
	ProblemMissing = "missing"
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
	// is not signed (no key), and MACs were not checked.
	SignedFrom uint64         `json:"signed_from"`
	Problems   []AuditProblem `json:"problems"`
}

// Audit checks the whole event log: every message's MAC (when this Log
// has the log key), that it decodes, and that no sequence is missing from
// 1 to the stream's last — removal at the very end included, since the
// stream remembers its last sequence. It reads the log in batches, never
// all at once, and records nothing (see Log.checkEvent for what readers
// record). An error means the audit could not finish; problems found are
// in the report.
func (l *Log) Audit(ctx context.Context) (AuditReport, error) {
	ictx, cancel := withDefaultTimeout(ctx)
	info, err := l.events.Info(ictx)
	cancel()
	if err != nil {
		return AuditReport{}, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	rep := AuditReport{Messages: info.State.Msgs, LastSeq: info.State.LastSeq, Problems: []AuditProblem{}}
	if l.key != nil {
		rep.SignedFrom = l.key.eventsFrom
	}
	next := uint64(1)
	missing := func(upTo uint64) {
		if upTo >= next {
			rep.Problems = append(rep.Problems, AuditProblem{Kind: ProblemMissing, Seq: next, Through: upTo})
		}
	}
	err = l.scan(ctx, "", 1, info.State.LastSeq, func(seq uint64, msg *nats.Msg) error {
		missing(seq - 1)
		next = seq + 1
		subject := serverHeader(msg.Header, jetstream.SubjectHeader)
		if l.key != nil {
			if reason := l.verifyEvent(seq, subject, msg.Header, msg.Data); reason != "" {
				rep.Problems = append(rep.Problems, AuditProblem{Kind: reason, Seq: seq, Subject: subject})
				return nil
			}
		}
		if _, err := DecodeEvent(msg.Data); err != nil {
			rep.Problems = append(rep.Problems, AuditProblem{Kind: ProblemUndecodable, Seq: seq, Subject: subject, Detail: err.Error()})
		}
		return nil
	})
	if err != nil {
		return rep, err
	}
	missing(info.State.LastSeq)
	return rep, nil
}
