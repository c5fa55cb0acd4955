package interpreter

import (
	"context"
	"fmt"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
)

// retryPolicy returns a step's retry policy with defaults filled in; a
// step without one gets a single attempt.
func retryPolicy(r *assets.Retry) assets.Retry {
	if r == nil {
		return assets.Retry{MaxAttempts: 1}
	}
	p := *r
	if p.MaxAttempts < 1 {
		p.MaxAttempts = 1
	}
	if p.BackoffStrategy == "" {
		p.BackoffStrategy = "exponential"
	}
	return p
}

// retryDelay is the wait before attempt next (2, 3, …): exponential doubles
// from initial_backoff_ms, linear adds it; both stop at backoff_cap_ms. The
// loader has filled in the defaults.
func retryDelay(p assets.Retry, next int) time.Duration {
	initial := time.Duration(p.InitialBackoffMS) * time.Millisecond
	limit := time.Duration(p.BackoffCapMS) * time.Millisecond
	if p.BackoffStrategy == "linear" {
		if initial <= 0 {
			return 0
		}
		if time.Duration(next-1) > limit/initial {
			return limit // and initial*(next-1) might overflow
		}
		return initial * time.Duration(next-1)
	}
	b := &backoff.ExponentialBackOff{
		InitialInterval:     initial,
		RandomizationFactor: 0,
		Multiplier:          2,
		MaxInterval:         limit,
		MaxElapsedTime:      0,
		Stop:                backoff.Stop,
		Clock:               backoff.SystemClock,
	}
	b.Reset()
	var d time.Duration
	for range next - 1 {
		d = b.NextBackOff()
	}
	return d
}

// waitRetry records step.retry_scheduled for attempt next and waits until
// its not_before. The time is computed when the retry is first decided and
// read back from the history afterwards, so an engine that restarts during
// the wait waits only what is left of it.
func (x *Interpreter) waitRetry(ctx context.Context, sc *scope, key string, next int, cause *events.ErrorInfo, p assets.Retry) *events.ErrorInfo {
	id := StepEventID(events.StepRetryScheduled, x.runID, key, next)
	var data events.StepRetryScheduledData
	if ev, ok := x.hist.Get(id); ok {
		if err := ev.Decode(&data); err != nil {
			return internal(ctx, err)
		}
	} else {
		delay := retryDelay(p, next)
		data = events.StepRetryScheduledData{
			Attempt:   next,
			DelayMS:   delay.Milliseconds(),
			NotBefore: x.host.Now().Add(delay).UTC(),
			Cause:     *cause,
		}
		if err := x.record(ctx, events.Event{ID: id, Type: events.StepRetryScheduled, StepKey: key,
			ParentID: x.attemptParent(sc, key, next-1)}, data); err != nil {
			return internal(ctx, err)
		}
	}
	passTurn(ctx)
	select {
	case <-x.host.After(data.NotBefore.Sub(x.host.Now())):
		return nil
	case <-x.cancelled:
		return x.cancelFailure(key)
	case <-ctx.Done():
		return internal(ctx, ctx.Err())
	}
}

// attemptParent is the id of the event that opened an attempt: its
// step.started if it has one, else the step's parent.
func (x *Interpreter) attemptParent(sc *scope, key string, attempt int) string {
	id := StepEventID(events.StepStarted, x.runID, key, attempt)
	if _, ok := x.hist.Get(id); ok {
		return id
	}
	return sc.parent
}

// recoveryFor returns the recovery activity that applies to a step: its
// own, else the job's (which applies to activity steps only, since a
// structural step fails because a step inside it did).
func (x *Interpreter) recoveryFor(st *assets.Step) *assets.ActivityRef {
	if st.RecoveryActivity != nil {
		return st.RecoveryActivity
	}
	if st.Activity != nil {
		return x.job.Spec.RecoveryActivity
	}
	return nil
}

// recover runs a step's recovery activity once, as the step instance
// <key>/recovery, with the failed step's id, key, error and input. It
// returns the recovery's own failure, if any.
func (x *Interpreter) recover(ctx context.Context, sc *scope, st *assets.Step, key string, attempt int, failed *events.ErrorInfo, rec *assets.ActivityRef) *events.ErrorInfo {
	input := sc.input
	if d, ok := x.started(key, attempt); ok && d.Input != nil {
		input = d.Input
	}
	recInput := map[string]any{
		"step_id":        st.ID,
		"step_key":       key,
		"attempt":        float64(attempt),
		"error":          map[string]any{"kind": failed.Kind, "message": failed.Message, "retryable": failed.Retryable},
		"input":          input,
		"workspace_path": sc.workspace(input), // the recovery runs where the step ran
	}
	recStep := &assets.Step{ID: "recovery", Target: "activity:" + rec.Name, Activity: &rec.Spec}
	_, rf := x.attempt(ctx, sc, recStep, key+"/recovery", 1, recInput)
	if rf != nil {
		rf.Message = fmt.Sprintf("recovery activity %s: %s", rec.Name, rf.Message)
	}
	return rf
}

// recoverable reports whether a step's recovery activity may run for a
// failure: not for a structural one (a step inside failed) nor for an
// incomplete agent.
func recoverable(f *events.ErrorInfo) bool {
	return f.Kind != events.KindStructural && f.Kind != events.KindIncomplete && f.Kind != events.KindBudget
}
