package events

import (
	"context"
	"fmt"
	"hash/maphash"
	"time"
)

// auditRuns is what Audit remembers of the log it has read so far, to find
// what an event stored a second time breaks, whatever its format and
// whether the log is signed at all: its id was seen before, its run had
// ended, or its time lies before that of its run's earlier events.
//
// Memory: 8 bytes of hash and a sequence per event (ids are compared in
// full only when their hashes meet), and a little per run.
type auditRuns struct {
	l     *Log
	seed  maphash.Seed
	ids   map[uint64]uint64 // hash of an event id → sequence of the first event with it
	exact map[string]uint64 // ids whose hash an earlier, different id has
	runs  map[string]*auditRun
}

// auditRun is what Audit knows of one run at the point it has read to.
type auditRun struct {
	latest time.Time // the latest time of its events
	// endedAt is the sequence of the run.finished the run ended with; 0
	// while it is live (a run.budget_raised makes it live again).
	endedAt uint64
	running map[string]bool // keys of the steps started and not finished
}

func newAuditRuns(l *Log) *auditRuns {
	return &auditRuns{l: l, seed: maphash.MakeSeed(), ids: map[uint64]uint64{}, exact: map[string]uint64{}, runs: map[string]*auditRun{}}
}

// afterEnd are the event types a run may get after its run.finished: a
// cancel or a signal sent to a finished run is recorded and changes
// nothing, a budget raised makes a run that ended for its budget live
// again, and a rejection is recorded under the run its message named.
var afterEnd = map[string]bool{
	RunCancelRequested: true,
	RunSignalled:       true,
	RunBudgetRaised:    true,
	IntegrityRejected:  true,
}

// check returns what is wrong with ev, at its place in the log, given what
// came before it, and remembers it.
func (a *auditRuns) check(ctx context.Context, ev Event, subject string) ([]AuditProblem, error) {
	var out []AuditProblem
	problem := func(kind, detail string) {
		out = append(out, AuditProblem{Kind: kind, Seq: ev.Seq, Subject: subject, Detail: detail})
	}
	// integrity.rejected's id is derived from the message it rejects, and
	// an engine that reads that message again past the duplicate window
	// (a rebuild) records it again.
	if ev.Type != IntegrityRejected {
		first, err := a.firstWithID(ctx, ev)
		if err != nil {
			return nil, err
		}
		if first != 0 {
			problem(ProblemRepeatedID, fmt.Sprintf("%s was stored at seq %d", ev.ID, first))
		}
	}
	info, ok := Lookup(ev.Type)
	if !ok || info.Aggregate != AggregateRun || ev.RunID == "" {
		return out, nil
	}
	r := a.runs[ev.RunID]
	if r == nil {
		r = &auditRun{running: map[string]bool{}}
		a.runs[ev.RunID] = r
	}
	if behind := r.latest.Sub(ev.Time); behind > a.l.lag() {
		problem(ProblemTimeBackwards, fmt.Sprintf("made %s, %s before an earlier event of run %s", ev.Time.Format(time.RFC3339Nano), behind.Round(time.Millisecond), ev.RunID))
	}
	if ev.Time.After(r.latest) {
		r.latest = ev.Time
	}
	if r.endedAt != 0 && !afterEnd[ev.Type] && !(r.running[ev.StepKey] && ev.Type != StepStarted) {
		problem(ProblemAfterEnd, fmt.Sprintf("run %s ended at seq %d", ev.RunID, r.endedAt))
	}
	switch ev.Type {
	case StepStarted:
		r.running[ev.StepKey] = true
	case StepFinished, StepDeadLettered, StepSkipped:
		delete(r.running, ev.StepKey)
	case RunFinished:
		r.endedAt = ev.Seq
	case RunBudgetRaised:
		r.endedAt = 0
	}
	return out, nil
}

// firstWithID returns the sequence of the first event with ev's id, 0 when
// ev is the first, and remembers ev.
func (a *auditRuns) firstWithID(ctx context.Context, ev Event) (uint64, error) {
	h := maphash.String(a.seed, ev.ID)
	first, seen := a.ids[h]
	if !seen {
		a.ids[h] = ev.Seq
		return 0, nil
	}
	if seq, ok := a.exact[ev.ID]; ok {
		return seq, nil
	}
	earlier, err := a.idAt(ctx, first)
	if err != nil {
		return 0, err
	}
	if earlier == ev.ID {
		return first, nil
	}
	a.exact[ev.ID] = ev.Seq
	return 0, nil
}

// idAt returns the id of the event stored at seq.
func (a *auditRuns) idAt(ctx context.Context, seq uint64) (string, error) {
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	raw, err := a.l.events.GetMsg(ctx, seq)
	if err != nil {
		return "", fmt.Errorf("%w: event at sequence %d: %v", ErrUnavailable, seq, err)
	}
	ev, err := DecodeEvent(raw.Data)
	if err != nil {
		return "", err
	}
	return ev.ID, nil
}
