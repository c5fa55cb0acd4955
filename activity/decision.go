package activity

import (
	"context"
	"fmt"
	"time"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/interpreter"
)

// stepRecord is what the log holds about one step attempt that a worker
// needs before it runs the attempt's command.
type stepRecord struct {
	// started: the attempt's step.started, the decision the command
	// carries out, is in the log.
	started bool
	// finished: its step.finished is in the log (looked up for redelivered
	// commands only).
	finished bool
	// starts counts its activity.started (redelivered commands only).
	starts int
}

// Bounds of the wait for a command's step.started.
const (
	decisionPollFirst = 5 * time.Millisecond
	decisionPollMax   = 200 * time.Millisecond
)

// decisionFeedWait bounds the wait for a fresh command's step.started on
// the worker's feed before the log is read.
const decisionFeedWait = 250 * time.Millisecond

// decision finds what the log holds about a command's attempt, waiting up
// to DecisionWait for its step.started on the command's first delivery
// (the orchestrator stores the event and sends the command together, so
// the event may still be in flight); a redelivered command has had that
// time, and is looked up once.
//
// A fresh command (first delivery, sent since the worker started) is
// first looked for on the worker's feed of step.started: usually found at
// once, or within milliseconds, at no cost to the log. Otherwise, and for
// a redelivered command, whose finish and starts are needed too, the log
// is read.
func (w *Worker) decision(ctx context.Context, c *events.Command, cmd *interpreter.StepCommand, finishedID string, redelivered bool) (stepRecord, error) {
	wait := w.cfg.DecisionWait
	if c.Delivery > 1 {
		wait = 0
	}
	if !redelivered && w.started != nil {
		startedID := interpreter.StepEventID(events.StepStarted, cmd.RunID, cmd.StepKey, cmd.Attempt)
		if w.started.await(ctx, startedID, cmd.Activity.Type, min(decisionFeedWait, wait)) {
			return stepRecord{started: true}, nil
		}
	}
	return w.awaitDecision(ctx, cmd, finishedID, redelivered, wait)
}

// awaitDecision looks up a command's attempt in its run's log, and while
// its step.started is missing (and it has not finished) reads again,
// backing off, for up to wait: the orchestrator stores step.started and
// sends the command together, so a command may arrive a few milliseconds
// before its decision is stored.
func (w *Worker) awaitDecision(ctx context.Context, cmd *interpreter.StepCommand, finishedID string, redelivered bool, wait time.Duration) (stepRecord, error) {
	deadline := time.Now().Add(wait)
	pause := decisionPollFirst
	for {
		rec, err := w.lookup(ctx, cmd, finishedID, redelivered)
		if err != nil || rec.started || rec.finished || !time.Now().Before(deadline) {
			return rec, err
		}
		select {
		case <-time.After(min(pause, time.Until(deadline))):
		case <-ctx.Done():
			return rec, ctx.Err()
		}
		pause = min(2*pause, decisionPollMax)
	}
}

// lookup reads, in one read of the run's log, whether a command's
// step.started is there and, for a redelivered command, whether its
// attempt finished and how many times it was started.
//
// IMPORTANT: the step.started looked for is the one whose id is derived
// from the run, step key and attempt the command names, not the id the
// command carries, and it must record the command's activity type: a
// command cannot borrow another step's decision.
func (w *Worker) lookup(ctx context.Context, cmd *interpreter.StepCommand, finishedID string, redelivered bool) (stepRecord, error) {
	filters := []string{events.EventSubject(events.AggregateRun, cmd.RunID, events.StepStarted)}
	if redelivered {
		filters = append(filters,
			events.EventSubject(events.AggregateRun, cmd.RunID, events.StepFinished),
			events.EventSubject(events.AggregateRun, cmd.RunID, events.ActivityStarted))
	}
	evs, err := w.cfg.Log.Read(ctx, events.FollowOptions{Filters: filters, BlobRefs: true})
	if err != nil {
		return stepRecord{}, err
	}
	startedID := interpreter.StepEventID(events.StepStarted, cmd.RunID, cmd.StepKey, cmd.Attempt)
	var rec stepRecord
	for _, ev := range evs {
		switch {
		case ev.ID == startedID:
			var d events.StepStartedData
			rec.started = ev.Decode(&d) == nil && d.ActivityType == cmd.Activity.Type
		case ev.ID == finishedID:
			rec.finished = true
		case ev.Type == events.ActivityStarted && ev.StepKey == cmd.StepKey:
			var d events.ActivityStartedData
			if ev.Decode(&d) == nil && d.Attempt == cmd.Attempt {
				rec.starts++
			}
		}
	}
	return rec, nil
}

// orphan ends a command whose step.started is not in the log: it is never
// run. If its run was requested and has not finished, the orchestrator may
// still store the decision — an engine that died between sending a command
// and storing its step.started leaves one behind, and on resuming the run
// it stores the step.started and, finding the command queued, sends no
// other — so the command is left for redelivery. Otherwise (no such run,
// or one that has ended) it is dead-lettered: removed from the queue and
// recorded as integrity.rejected.
func (w *Worker) orphan(ctx context.Context, c *events.Command, cmd *interpreter.StepCommand) {
	live, err := w.runLive(ctx, cmd.RunID)
	if err != nil {
		w.retryLater(c, err)
		return
	}
	if live {
		w.retryLater(c, fmt.Errorf("%w: run %s step %s attempt %d: its run is live, checking again later",
			ErrNoDecision, cmd.RunID, cmd.StepKey, cmd.Attempt))
		return
	}
	if err := w.cfg.Log.RejectCommand(ctx, c, events.ReasonNoDecision); err != nil {
		w.retryLater(c, err)
		return
	}
	w.log.Error("step command dead-lettered: no step.started behind it", "run", cmd.RunID, "step", cmd.StepKey,
		"attempt", cmd.Attempt, "subject", c.Subject, "seq", c.StreamSeq)
}

// runLive reports whether a run was requested and has not finished.
func (w *Worker) runLive(ctx context.Context, runID string) (bool, error) {
	requested, err := w.cfg.Log.LastMatching(ctx, []string{events.EventSubject(events.AggregateRun, runID, events.RunRequested)})
	if err != nil || requested == 0 {
		return false, err
	}
	finished, err := w.cfg.Log.LastMatching(ctx, []string{events.EventSubject(events.AggregateRun, runID, events.RunFinished)})
	return finished == 0, err
}
