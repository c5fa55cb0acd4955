package tracing

import (
	"context"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/orbitrun/orbit/events"
)

// A Groundhog attempt is a span under the step span of the step that runs
// it, from groundhog.attempt.started to the event that closes it
// (groundhog.committed, groundhog.attempt.failed, groundhog.interrupted);
// its agent turns, tool calls, verifier run (a span per criterion) and
// commit are spans under it. Groundhog records these on the task, not
// the run: the tracer follows both.

// attemptState is what the tracer knows of an open Groundhog attempt.
type attemptState struct {
	id                   events.Attempt
	task, runID, stepKey string
	parent               trace.SpanID // the step span
	start, last          time.Time    // last: the end of its last turn, verb or verification
	snapshot, scratch    string
	verified             time.Time
	input, output        int64
	costUSD              float64
	turns                int
}

func attemptKey(task string, id events.Attempt) string {
	return task + "#" + id.Checkpoint + "#" + strconv.Itoa(id.Attempt) + "#" + strconv.Itoa(id.Day)
}

// AttemptSpanID is the span of a Groundhog attempt of a task.
func AttemptSpanID(task string, id events.Attempt) trace.SpanID {
	return spanID("orbit.groundhog.attempt", task, id.Checkpoint, strconv.Itoa(id.Attempt), strconv.Itoa(id.Day))
}

// openStep is the open attempt of step key in r (the latest, if a
// redelivery left more than one open).
func openStep(r *runState, key string) *stepState {
	var out *stepState
	for _, s := range r.steps {
		if s.key == key && (out == nil || s.attempt > out.attempt) {
			out = s
		}
	}
	return out
}

// attempt returns the state of the open attempt an event is about, read
// back from the task's events before seq when the tracer has not seen
// its start (it started before the position the tracer resumed from).
func (t *Tracer) attempt(ctx context.Context, ev events.Event, id events.Attempt) *attemptState {
	k := attemptKey(ev.TaskID, id)
	if a := t.attempts[k]; a != nil {
		return a
	}
	evs, err := t.log.Read(ctx, events.FollowOptions{Filters: []string{events.TaskFilter(ev.TaskID)}})
	if err != nil {
		t.logger.Warn("tracing: reading a Groundhog attempt's start", "task", ev.TaskID, "err", err)
		return nil
	}
	for _, e := range evs {
		if e.Seq >= ev.Seq {
			break
		}
		if e.Type == events.GroundhogAttempt {
			t.groundhog(ctx, e, false)
		}
	}
	return t.attempts[k]
}

// groundhog folds a Groundhog event of a task into the tracer's state and,
// when emit is set, exports the spans it ends.
func (t *Tracer) groundhog(ctx context.Context, ev events.Event, emit bool) {
	if ev.Type == events.GroundhogAttempt {
		var d events.GroundhogAttemptData
		if ev.Decode(&d) != nil {
			return
		}
		a := &attemptState{id: d.Attempt, task: ev.TaskID, runID: d.RunID, stepKey: ev.StepKey, start: ev.Time, last: ev.Time,
			snapshot: d.SnapshotRef, scratch: d.ScratchBranch}
		if a.runID == "" {
			a.runID = ev.RunID
		}
		if r := t.runs[a.runID]; r != nil {
			if s := openStep(r, a.stepKey); s != nil {
				a.parent = StepSpanID(a.runID, s.key, s.attempt)
			}
		}
		t.attempts[attemptKey(ev.TaskID, d.Attempt)] = a
		return
	}
	if !emit {
		return
	}
	var id events.Attempt
	switch ev.Type {
	case events.GroundhogTurn, events.GroundhogToolCalled, events.GroundhogUsage, events.GroundhogVerb,
		events.GroundhogVerification, events.GroundhogCommitted, events.GroundhogAttemptFailed, events.GroundhogInterrupted:
		var x struct{ events.Attempt }
		if ev.Decode(&x) != nil {
			return
		}
		id = x.Attempt
	default:
		return
	}
	a := t.attempt(ctx, ev, id)
	if a == nil {
		return
	}
	r := t.runs[a.runID]
	if r == nil {
		r = t.run(ctx, a.runID, ev.Seq)
	}
	if !a.parent.IsValid() {
		if s := openStep(r, a.stepKey); s != nil {
			a.parent = StepSpanID(a.runID, s.key, s.attempt)
		} else {
			a.parent = StepSpanID(a.runID, a.stepKey, 1)
		}
	}
	self := AttemptSpanID(a.task, a.id)
	switch ev.Type {
	case events.GroundhogTurn:
		var d events.GroundhogTurnData
		if ev.Decode(&d) != nil {
			return
		}
		a.turns++
		a.input += d.Turn.Usage.InputTokens
		a.output += d.Turn.Usage.OutputTokens
		start := a.last
		a.last = ev.Time
		attrs := append(t.groundhogAttrs(ev, r, a), turnAttrs(d.Turn)...)
		turn := spanID("orbit.groundhog.turn", self.String(), d.Turn.Session, strconv.Itoa(d.Turn.Turn))
		_, span := t.tr.Start(t.under(ctx, r, self, turn), "agent turn "+strconv.Itoa(d.Turn.Turn),
			trace.WithTimestamp(start), trace.WithAttributes(attrs...))
		span.End(trace.WithTimestamp(ev.Time))
	case events.GroundhogToolCalled:
		var d events.GroundhogToolCalledData
		if ev.Decode(&d) != nil {
			return
		}
		t.toolSpan(ctx, r, ev, self, spanID("orbit.groundhog.tool", self.String(), d.Call.ToolUseID), t.groundhogAttrs(ev, r, a), d.Call)
	case events.GroundhogUsage:
		var d events.GroundhogUsageData
		if ev.Decode(&d) != nil {
			return
		}
		a.costUSD += d.CostUSD
		if !d.UsageInTurns {
			a.input += d.Usage.InputTokens
			a.output += d.Usage.OutputTokens
		}
	case events.GroundhogVerb:
		a.last = ev.Time
	case events.GroundhogVerification:
		var d events.GroundhogVerificationData
		if ev.Decode(&d) != nil {
			return
		}
		t.verificationSpan(ctx, r, ev, a, d)
		a.last, a.verified = ev.Time, ev.Time
	case events.GroundhogCommitted:
		var d events.GroundhogCommittedData
		if ev.Decode(&d) != nil {
			return
		}
		start := a.verified
		if start.IsZero() {
			start = a.last
		}
		attrs := append(t.groundhogAttrs(ev, r, a), attribute.String("orbit.groundhog.commit_sha", d.SHA), attribute.Bool("orbit.groundhog.no_change", d.NoChange))
		if d.HeldRef != "" {
			attrs = append(attrs, attribute.String("orbit.groundhog.held_ref", d.HeldRef))
		}
		_, span := t.tr.Start(t.under(ctx, r, self, spanID("orbit.groundhog.commit", self.String())), "groundhog commit",
			trace.WithTimestamp(start), trace.WithAttributes(attrs...))
		span.SetStatus(codes.Ok, "")
		span.End(trace.WithTimestamp(ev.Time))
		t.attemptSpan(ctx, r, ev, a, "committed", "", attribute.String("orbit.groundhog.commit_sha", d.SHA))
	case events.GroundhogAttemptFailed:
		var d events.GroundhogAttemptFailedData
		if ev.Decode(&d) != nil {
			return
		}
		t.attemptSpan(ctx, r, ev, a, "failed", d.Report.WhatHappened, attribute.String("orbit.groundhog.failure_source", d.Report.Source))
	case events.GroundhogInterrupted:
		var d events.GroundhogInterruptedData
		if ev.Decode(&d) != nil {
			return
		}
		t.attemptSpan(ctx, r, ev, a, "interrupted", d.Reason)
	}
}

func (t *Tracer) groundhogAttrs(ev events.Event, r *runState, a *attemptState) []attribute.KeyValue {
	e := ev
	e.RunID = a.runID
	return append(t.base(e, r),
		attribute.String("orbit.step", a.stepKey),
		attribute.String("orbit.task_id", a.task),
		attribute.String("orbit.groundhog.checkpoint", a.id.Checkpoint),
		attribute.Int("orbit.groundhog.attempt", a.id.Attempt),
		attribute.Int("orbit.groundhog.day", a.id.Day),
	)
}

// attemptSpan ends the span of attempt a with its outcome: committed,
// failed or interrupted.
func (t *Tracer) attemptSpan(ctx context.Context, r *runState, ev events.Event, a *attemptState, outcome, msg string, more ...attribute.KeyValue) {
	delete(t.attempts, attemptKey(a.task, a.id))
	attrs := append(t.groundhogAttrs(ev, r, a),
		attribute.String("orbit.groundhog.outcome", outcome),
		attribute.String("orbit.groundhog.snapshot_ref", a.snapshot),
		attribute.String("orbit.groundhog.scratch_branch", a.scratch),
		attribute.Int("orbit.agent.turns", a.turns),
		attribute.Int64("gen_ai.usage.input_tokens", a.input),
		attribute.Int64("gen_ai.usage.output_tokens", a.output),
	)
	if a.costUSD > 0 {
		attrs = append(attrs, attribute.Float64("orbit.agent.cost_usd", a.costUSD))
	}
	attrs = append(attrs, more...)
	_, span := t.tr.Start(t.under(ctx, r, a.parent, AttemptSpanID(a.task, a.id)),
		"groundhog attempt "+a.id.Checkpoint+" #"+strconv.Itoa(a.id.Attempt),
		trace.WithTimestamp(a.start), trace.WithAttributes(attrs...))
	if outcome == "committed" {
		span.SetStatus(codes.Ok, "")
	} else {
		span.SetStatus(codes.Error, outcome+": "+msg)
	}
	span.End(trace.WithTimestamp(ev.Time))
}

// verificationSpan is the verifier's run, from the attempt's last turn or
// verb to its verdict, with a span per criterion (they run in parallel,
// and only the verdict's time is recorded).
func (t *Tracer) verificationSpan(ctx context.Context, r *runState, ev events.Event, a *attemptState, d events.GroundhogVerificationData) {
	self := AttemptSpanID(a.task, a.id)
	failed := 0
	for _, c := range d.Results {
		if c.Outcome == "fail" {
			failed++
		}
	}
	id := spanID("orbit.groundhog.verification", self.String(), ev.ID)
	attrs := append(t.groundhogAttrs(ev, r, a), attribute.Bool("orbit.groundhog.passed", d.Passed),
		attribute.Int("orbit.groundhog.criteria", len(d.Results)), attribute.Int("orbit.groundhog.criteria_failed", failed))
	_, span := t.tr.Start(t.under(ctx, r, self, id), "groundhog verify",
		trace.WithTimestamp(a.last), trace.WithAttributes(attrs...))
	if d.Passed {
		span.SetStatus(codes.Ok, "")
	} else {
		span.SetStatus(codes.Error, strconv.Itoa(failed)+" criteria failed")
	}
	span.End(trace.WithTimestamp(ev.Time))
	for _, c := range d.Results {
		attrs := append(t.groundhogAttrs(ev, r, a), attribute.Int("orbit.groundhog.criterion", c.Index),
			attribute.String("orbit.groundhog.criterion.kind", c.Kind), attribute.String("orbit.groundhog.criterion.outcome", c.Outcome),
			attribute.Bool("orbit.groundhog.criterion.anti", c.Anti))
		if c.ExitCode != nil {
			attrs = append(attrs, attribute.Int("process.exit.code", *c.ExitCode))
		}
		_, cs := t.tr.Start(t.under(ctx, r, id, spanID("orbit.groundhog.criterion", id.String(), strconv.Itoa(c.Index))),
			"criterion "+strconv.Itoa(c.Index)+" "+c.Kind, trace.WithTimestamp(a.last), trace.WithAttributes(attrs...))
		if c.Outcome == "fail" {
			cs.SetStatus(codes.Error, c.Detail)
		}
		cs.End(trace.WithTimestamp(ev.Time))
	}
}
