package interpreter

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
)

// SignalID is the derived id of the run.signalled event that delivers a
// signal to one attempt of a waiting step: a step attempt takes one signal.
func SignalID(runID, key string, attempt int) string {
	return events.DecisionID(events.RunSignalled, runID, key, strconv.Itoa(attempt))
}

// Causes that end a wait early.
var (
	errWaitCancelled = errors.New("the run was cancelled")
	errWaitTimedOut  = errors.New("the wait timed out")
)

// wait runs a signal gate: it records step.started with the signal and, if
// the gate has a timeout, the deadline (computed now, read back from the
// history after a restart, so a restart waits only what is left), then
// waits for a run.signalled for this attempt, the deadline, or a cancel.
// The step's output is the signal's data.
//
// IMPORTANT: the outcome depends only on recorded events: a signal counts
// when the history holds it with a time not after the deadline. A signal
// that the engine's API accepted just before the deadline but that arrives
// after the timeout was recorded is outvoted by the recorded step.finished,
// which every replay reads first.
func (x *Interpreter) wait(ctx context.Context, sc *scope, st *assets.Step, key string, attempt int) (assets.StepResult, *events.ErrorInfo) {
	if ev, ok := x.hist.Get(StepEventID(events.StepFinished, x.runID, key, attempt)); ok {
		return recordedResult(key, ev)
	}
	startedID := StepEventID(events.StepStarted, x.runID, key, attempt)
	if _, started := x.hist.Get(startedID); !started {
		x.waitUnpaused(ctx)
		if x.isCancelled() {
			return failedResult(key, x.cancelFailure(key))
		}
	}
	info, err := x.startWait(ctx, sc, st.Wait, key, attempt, startedID)
	if err != nil {
		return failedResult(key, internal(ctx, err))
	}

	cctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	go func() {
		select {
		case <-x.cancelled:
			stop(errWaitCancelled)
		case <-cctx.Done():
		}
	}()
	wctx := cctx
	if info.Deadline != nil {
		var cancel context.CancelCauseFunc
		wctx, cancel = context.WithCancelCause(wctx)
		defer cancel(nil)
		go x.timeOut(wctx, cancel, info)
	}
	sigID := SignalID(x.runID, key, attempt)
	ev, err := x.waitFor(wctx, sigID)
	if err != nil && ctx.Err() == nil && errors.Is(err, errWaitTimedOut) {
		// A signal may have landed as the deadline passed.
		if ev, ok := x.hist.Get(sigID); ok {
			return x.signalled(ctx, key, attempt, info, ev)
		}
	}
	switch {
	case err == nil:
		return x.signalled(ctx, key, attempt, info, ev)
	case ctx.Err() != nil:
		return failedResult(key, internal(ctx, err)) // the engine is stopping: nothing to record
	case errors.Is(err, errWaitCancelled):
		return x.finishStructural(ctx, key, attempt, startedID, assets.StepResult{}, x.cancelFailure(key))
	case errors.Is(err, errWaitTimedOut):
		return x.finishStructural(ctx, key, attempt, startedID, assets.StepResult{}, timedOut(key, info))
	}
	return failedResult(key, internal(ctx, err))
}

// startWait records the gate's step.started unless the history has it,
// and returns what it records.
func (x *Interpreter) startWait(ctx context.Context, sc *scope, w *assets.Wait, key string, attempt int, startedID string) (events.WaitInfo, error) {
	if ev, ok := x.hist.Get(startedID); ok {
		var d events.StepStartedData
		if err := ev.Decode(&d); err != nil {
			return events.WaitInfo{}, err
		}
		if d.Wait == nil {
			return events.WaitInfo{}, fmt.Errorf("step.started of wait step %s records no wait", key)
		}
		return *d.Wait, nil
	}
	info := events.WaitInfo{Signal: w.Signal, TimeoutSeconds: w.TimeoutSeconds}
	if w.TimeoutSeconds > 0 {
		deadline := x.host.Now().Add(time.Duration(w.TimeoutSeconds) * time.Second).UTC()
		info.Deadline = &deadline
	}
	return info, x.record(ctx, events.Event{ID: startedID, Type: events.StepStarted, StepKey: key, ParentID: sc.parent},
		events.StepStartedData{Attempt: attempt, ActivityType: events.TypeWait, Wait: &info})
}

// signalled finishes a gate with the signal's data, or with a timeout when
// the signal was recorded after the deadline.
func (x *Interpreter) signalled(ctx context.Context, key string, attempt int, info events.WaitInfo, ev events.Event) (assets.StepResult, *events.ErrorInfo) {
	if info.Deadline != nil && x.pastDeadline(info, ev.Time) {
		failed := timedOut(key, info)
		if err := x.recordFinished(ctx, key, attempt, StepEventID(events.StepStarted, x.runID, key, attempt), assets.StepResult{}, failed); err != nil {
			return failedResult(key, internal(ctx, err))
		}
		return failedResult(key, failed)
	}
	var d events.RunSignalledData
	if err := ev.Decode(&d); err != nil {
		return failedResult(key, internal(ctx, err))
	}
	res := assets.StepResult{State: events.StateSuccess, Output: d.Data}
	if err := x.recordFinished(ctx, key, attempt, ev.ID, res, nil); err != nil {
		return failedResult(key, internal(ctx, err))
	}
	return res, nil
}

// WaitStart is when a gate with a deadline began waiting.
func WaitStart(info events.WaitInfo) time.Time {
	return info.Deadline.Add(-time.Duration(info.TimeoutSeconds) * time.Second)
}

// timeOut cancels ctx with errWaitTimedOut once the gate's deadline,
// extended by the run's paused time (see pauses.deadline), has passed.
func (x *Interpreter) timeOut(ctx context.Context, cancel context.CancelCauseFunc, info events.WaitInfo) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C
	for {
		_, changed := x.pauses.paused()
		d, ok := x.pauses.Deadline(*info.Deadline, WaitStart(info))
		var fire <-chan time.Time
		if ok {
			timer.Reset(d.Sub(x.host.Now()))
			fire = timer.C
		}
		select {
		case <-fire:
			cancel(errWaitTimedOut)
			return
		case <-changed:
			if ok && !timer.Stop() {
				<-timer.C
			}
		case <-ctx.Done():
			return
		}
	}
}

// pastDeadline reports whether a signal recorded at t came after the
// gate's deadline, extended by the run's paused time.
func (x *Interpreter) pastDeadline(info events.WaitInfo, t time.Time) bool {
	d, ok := x.pauses.Deadline(*info.Deadline, WaitStart(info))
	return ok && t.After(d)
}

func timedOut(key string, info events.WaitInfo) *events.ErrorInfo {
	return &events.ErrorInfo{Kind: events.KindTimeout, StepKey: key,
		Message: fmt.Sprintf("no signal %s within %ds", info.Signal, info.TimeoutSeconds)}
}
