package interpreter

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
)

// Deterministic actions the orchestrator carries out itself, because they
// start or wait for runs (as Temporal's child workflows are started by the
// workflow, not by an activity).
const (
	ActionInvoke = assets.ActionJobInvoke // config: job, input, wait (default true)
	ActionWait   = "job.wait"             // config: run_id
)

// IsChildAction reports whether spec is one of the actions the
// interpreter carries out itself: job.invoke, job.wait, invoke_and_wait.
func IsChildAction(spec *assets.ActivitySpec) bool {
	return spec.Type == assets.TypeDeterministic && (spec.Action == ActionInvoke || spec.Action == ActionWait || spec.Action == ActionInvokeAndWait)
}

// child runs a job.invoke or job.wait step attempt. job.invoke starts a
// child run linked to this step — its id is chosen once and recorded in
// step.started before the run is requested, so a replay finds the same
// child — and, with wait, finishes with the child's output or error.
// job.wait waits for a run started earlier with wait: false.
func (x *Interpreter) child(ctx context.Context, sc *scope, st *assets.Step, key string, attempt int) (assets.StepResult, *events.ErrorInfo) {
	if st.Activity.Action == ActionInvokeAndWait {
		return x.invokeAndWait(ctx, sc, st, key, attempt)
	}
	if ev, ok := x.hist.Get(StepEventID(events.StepFinished, x.runID, key, attempt)); ok {
		return recordedResult(key, ev)
	}
	cmd, err := x.prepare(sc, st, key, attempt, nil, false)
	if err != nil {
		failed := ErrorInfo(err)
		return x.finishStructural(ctx, key, attempt, sc.parent, assets.StepResult{}, failed)
	}
	cfg := cmd.Activity.Config
	startedID := StepEventID(events.StepStarted, x.runID, key, attempt)
	var (
		childID string
		wait    bool
		raise   int // of the child, whose end after that raise is awaited
	)
	switch st.Activity.Action {
	case ActionInvoke:
		childID, wait, raise, err = x.invoke(ctx, sc, st, key, attempt, cmd)
	case ActionWait:
		wait = true
		childID, _ = cfg["run_id"].(string)
		if resumed, n := x.resumedChild(key, attempt); resumed != "" && resumed == childID {
			raise = n
		}
		if childID == "" {
			err = Fail(events.KindValidation, false, "job.wait: config.run_id is required")
		} else {
			err = x.record(ctx, events.Event{ID: startedID, Type: events.StepStarted, StepKey: key, ParentID: sc.parent},
				events.StepStartedData{Attempt: attempt, ActivityType: assets.TypeDeterministic, Target: st.Target, Input: cmd.Input,
					ChildRunID: childID, ChildRaise: raise})
		}
	}
	if err != nil {
		return x.finishStructural(ctx, key, attempt, sc.parent, assets.StepResult{}, ErrorInfo(err))
	}
	if !wait {
		return x.finishStructural(ctx, key, attempt, startedID, assets.StepResult{State: events.StateSuccess,
			Output: map[string]any{"run_id": childID}}, nil)
	}
	fin, failed := x.waitRun(ctx, childID, raise)
	if failed != nil {
		return failedResult(key, failed)
	}
	res := assets.StepResult{State: events.StateSuccess, Output: fin.Output}
	if fin.State != events.StateSuccess {
		failed = &events.ErrorInfo{Kind: events.KindActivity, Message: fmt.Sprintf("child run %s %s", childID, fin.State)}
		if fin.Error != nil {
			failed.Kind, failed.Retryable = fin.Error.Kind, fin.Error.Retryable
			failed.Message += ": " + fin.Error.StepKey + ": " + fin.Error.Message
		}
		if failed.Kind == events.KindCancelled && !x.isCancelled() {
			failed.Kind = events.KindActivity // a child cancelled on its own is a failure here
		}
	}
	return x.finishStructural(ctx, key, attempt, startedID, res, failed)
}

// invoke starts (or, resumed, makes sure of) the child run of a job.invoke
// attempt and returns its id, whether to wait for it, and the child's raise
// whose end to wait for. An attempt that follows one the budget stopped
// with its child waits for that child again when the child's resumption
// reopened this run (see resumedChild): the child goes on, it does not
// start over.
func (x *Interpreter) invoke(ctx context.Context, sc *scope, st *assets.Step, key string, attempt int, cmd *StepCommand) (string, bool, int, error) {
	cfg := cmd.Activity.Config
	name, _ := cfg["job"].(string)
	if name == "" {
		return "", false, 0, Fail(events.KindValidation, false, "job.invoke: config.job is required")
	}
	wait := true
	if w, ok := cfg["wait"].(bool); ok {
		wait = w
	}
	startedID := StepEventID(events.StepStarted, x.runID, key, attempt)
	var childID string
	if ev, ok := x.hist.Get(startedID); ok {
		var d events.StepStartedData
		if err := ev.Decode(&d); err != nil {
			return "", false, 0, err
		}
		childID = d.ChildRunID
		if d.ChildRaise > 0 {
			return childID, true, d.ChildRaise, nil // a resumed child: requested long ago
		}
		requested, err := x.host.Requested(ctx, childID)
		if err != nil || requested {
			return childID, wait, 0, err
		}
	} else {
		x.waitUnpaused(ctx)
		if x.isCancelled() {
			return "", false, 0, &Failure{info: *x.cancelFailure(key)}
		}
		if resumed, raise := x.resumedChild(key, attempt); resumed != "" {
			err := x.record(ctx, events.Event{ID: startedID, Type: events.StepStarted, StepKey: key, ParentID: sc.parent},
				events.StepStartedData{Attempt: attempt, ActivityType: assets.TypeDeterministic, Target: st.Target, Input: cmd.Input,
					ChildRunID: resumed, ChildRaise: raise})
			return resumed, true, raise, err
		}
		if limit := x.cfg.Limits().MaxChildDepth; x.depth+1 > limit {
			return "", false, 0, Fail(events.KindLimit, false,
				"job.invoke: a run of %q here would be at depth %d, past engine.max_child_depth (%d); a job that invokes itself needs a condition that ends it, and deeper nesting that is meant needs a higher engine.max_child_depth in .orbit/config.yaml",
				name, x.depth+1, limit)
		}
		childID = x.host.NewID()
	}
	if x.cfg.Jobs == nil {
		return "", false, 0, Fail(events.KindValidation, false, "job.invoke: this engine has no job catalog")
	}
	job, err := x.cfg.Jobs(name, x.backend)
	if err != nil {
		return "", false, 0, Fail(events.KindValidation, false, "job.invoke: %v", err)
	}
	if err := x.validate(job); err != nil {
		return "", false, 0, Fail(events.KindStructural, false, "job.invoke: %v", err)
	}
	if err := x.record(ctx, events.Event{ID: startedID, Type: events.StepStarted, StepKey: key, ParentID: sc.parent},
		events.StepStartedData{Attempt: attempt, ActivityType: assets.TypeDeterministic, Target: st.Target, Input: cmd.Input, ChildRunID: childID}); err != nil {
		return "", false, 0, err
	}
	req := &RunRequest{
		RunID:       childID,
		Job:         *job,
		Input:       assets.MergeInput(job.Spec.DefaultInput, cfg["input"]),
		Requester:   "run:" + x.runID,
		Parent:      &events.RunLink{RunID: x.runID, StepKey: key},
		ParentEvent: startedID,
		Depth:       x.depth + 1,
		Root:        x.root,
		Backend:     x.backend,
		Traceparent: x.traceparent,
	}
	if err := req.PinEnv(x.env); err != nil {
		return "", false, 0, err
	}
	// Listed below the root once step.started names it (a replay lists the
	// same child, and a refusal leaves no run to be counted), before it
	// can start.
	limit := x.cfg.Limits().MaxDescendants
	if err := x.host.Hold(ctx, x.root, x.runID, childID, limit); errors.Is(err, ErrTreeFull) {
		return "", false, 0, Fail(events.KindLimit, false,
			"job.invoke: a run of %q here would be one more than the %d live runs below run %s that engine.max_descendants allows; stop that tree with 'orbit run cancel --tree %s', or allow more with a higher engine.max_descendants in .orbit/config.yaml",
			name, limit, x.root, x.root)
	} else if err != nil {
		return "", false, 0, err
	}
	return childID, wait, 0, x.host.Submit(ctx, req)
}

// waitRun waits for a run's run.finished: its first, or with raise > 0 the
// end of its segment after that budget raise (events.RunFinishedID). If
// this run is cancelled meanwhile, the awaited run is cancelled too, and
// waited for a little.
func (x *Interpreter) waitRun(ctx context.Context, runID string, raise int) (*events.RunFinishedData, *events.ErrorInfo) {
	return x.waitRaise(ctx, runID, raise, nil)
}

// waitRunUntil waits for a run's first run.finished, or until deadline
// fires: then it returns neither an end nor a failure, and the run goes
// on.
func (x *Interpreter) waitRunUntil(ctx context.Context, runID string, deadline <-chan time.Time) (*events.RunFinishedData, *events.ErrorInfo) {
	return x.waitRaise(ctx, runID, 0, deadline)
}

func (x *Interpreter) waitRaise(ctx context.Context, runID string, raise int, deadline <-chan time.Time) (*events.RunFinishedData, *events.ErrorInfo) {
	want := events.RunFinishedID(runID, raise)
	feed, err := x.host.FollowEnd(ctx, runID)
	if err != nil {
		return nil, internal(ctx, err)
	}
	defer feed.Stop()
	cancelled := x.cancelled
	var giveUp <-chan time.Time
	for {
		select {
		case ev, ok := <-feed.Events():
			if !ok {
				return nil, internal(ctx, feed.Err())
			}
			if raise > 0 && ev.ID != want {
				continue // an end before the raise the wait is for
			}
			var d events.RunFinishedData
			if err := ev.Decode(&d); err != nil {
				return nil, internal(ctx, err)
			}
			return &d, nil
		case <-cancelled:
			cancelled = nil
			if err := x.host.CancelChild(ctx, runID, x.cancelCause); err != nil {
				return nil, internal(ctx, err)
			}
			giveUp = x.host.After(cancelWait)
		case <-giveUp:
			return nil, x.cancelFailure("")
		case <-deadline:
			return nil, nil
		case <-ctx.Done():
			return nil, internal(ctx, ctx.Err())
		}
	}
}
