package events

import (
	"bytes"
	"context"
	"fmt"
	"hash/maphash"
	"time"
)

// auditRuns is what Audit remembers of the log it has read so far, to find
// what an event stored a second time breaks, whatever its format and
// whether the log is signed at all: it is a copy of an earlier event, its
// run had ended, or its time lies before that of its run's earlier
// events.
//
// Memory: 8 bytes of hash and a sequence per event (bodies are compared
// in full only when their hashes meet), and a little per run.
type auditRuns struct {
	l      *Log
	seed   maphash.Seed
	bodies map[uint64]uint64 // hash of an event's stored bytes → the sequence of the first with them
	runs   map[string]*auditRun
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
	return &auditRuns{l: l, seed: maphash.MakeSeed(), bodies: map[uint64]uint64{}, runs: map[string]*auditRun{}}
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

// check returns what is wrong with ev, stored as body, at its place in
// the log given what came before it, and remembers it. late says ev was
// stored out of its time as the first under its id (a note of Audit's):
// then that its time lies before that of events stored before it is no
// more than its lateness, and no problem; nor is its time the run's
// latest, which a clock that ran ahead would set for the events after it.
func (a *auditRuns) check(ctx context.Context, ev Event, body []byte, subject string, late bool) ([]AuditProblem, error) {
	var out []AuditProblem
	problem := func(kind, detail string) {
		out = append(out, AuditProblem{Kind: kind, Seq: ev.Seq, Subject: subject, Detail: detail})
	}
	// The same id again with other bytes is an engine that appended a
	// decision again past the duplicate window (a second cancel of a
	// run, minutes later): its time differs. The same bytes are a copy.
	first, err := a.copyOf(ctx, ev.Seq, body)
	if err != nil {
		return nil, err
	}
	if first != 0 {
		problem(ProblemRepeatedID, fmt.Sprintf("%s: a copy of the event at seq %d", ev.ID, first))
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
	if behind := r.latest.Sub(ev.Time); behind > a.l.lag() && !late {
		problem(ProblemTimeBackwards, fmt.Sprintf("made %s, %s before an earlier event of run %s", ev.Time.Format(time.RFC3339Nano), behind.Round(time.Millisecond), ev.RunID))
	}
	if ev.Time.After(r.latest) && !late {
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

// copyOf returns the sequence of the first event stored as body, 0 when
// the event at seq is the first, and remembers it.
func (a *auditRuns) copyOf(ctx context.Context, seq uint64, body []byte) (uint64, error) {
	h := maphash.Bytes(a.seed, body)
	first, seen := a.bodies[h]
	if !seen {
		a.bodies[h] = seq
		return 0, nil
	}
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	raw, err := a.l.events.GetMsg(ctx, first)
	if err != nil {
		return 0, fmt.Errorf("%w: event at sequence %d: %v", ErrUnavailable, first, err)
	}
	if !bytes.Equal(raw.Data, body) {
		return 0, nil // two bodies with one hash: the second goes unremembered
	}
	return first, nil
}
