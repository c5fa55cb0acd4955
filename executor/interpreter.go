package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
)

// interpreter executes one run's step tree. It is replay-driven, as a
// Temporal workflow is: every step instance has a deterministic key, and
// before doing anything for an instance it looks in the run's history. What
// finished is returned as recorded; what was dispatched is waited for;
// only what never happened is done now. After a crash the orchestrator runs
// the interpreter again from the top and it continues where the run was.
//
// IMPORTANT: decisions depend only on the job, the input and the history —
// never on the wall clock, randomness or map order — so that running the
// interpreter again makes the same decisions with the same derived ids.
type interpreter struct {
	o       *Orchestrator
	runID   string
	job     *assets.Job
	hist    *history
	resumed bool // an earlier engine started this run
}

// run interprets the run to its end and records run.finished. It returns
// without recording anything when ctx ends first (the engine is stopping).
func (x *interpreter) run(ctx context.Context) error {
	hist, err := openHistory(ctx, x.o.cfg.Log, x.runID, nil)
	if err != nil {
		return err
	}
	defer hist.close()
	x.hist = hist

	if _, done := hist.get(events.DecisionID(events.RunFinished, x.runID)); done {
		return nil
	}
	reqEv, ok := hist.get(events.DecisionID(events.RunRequested, x.runID))
	if !ok {
		return fmt.Errorf("run %s has no run.requested event", x.runID)
	}
	var req events.RunRequestedData
	if err := reqEv.Decode(&req); err != nil {
		return err
	}
	started, err := x.start(ctx)
	if err != nil {
		return err
	}

	var (
		output any
		failed *events.ErrorInfo
	)
	if err := ValidateJob(x.job); err != nil {
		failed = &events.ErrorInfo{Kind: events.KindStructural, Message: err.Error()}
	} else {
		sc := newScope(req.Input, x.o.cfg.Root)
		output, failed = x.steps(ctx, sc, x.job.Spec.Steps)
	}
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return x.finish(ctx, started, output, failed)
}

// start records run.started, or run.resumed when an earlier engine started
// the run, and returns the event that started it.
func (x *interpreter) start(ctx context.Context) (events.Event, error) {
	id := events.DecisionID(events.RunStarted, x.runID)
	if ev, ok := x.hist.get(id); ok {
		x.resumed = true
		_, err := x.o.cfg.Log.Append(ctx, events.Event{
			Type: events.RunResumed, RunID: x.runID, Job: x.job.Name, ParentID: id,
		}, events.RunResumedData{Engine: x.o.cfg.Engine})
		return ev, err
	}
	ev := events.Event{ID: id, Type: events.RunStarted, RunID: x.runID, Job: x.job.Name,
		ParentID: events.DecisionID(events.RunRequested, x.runID)}
	if _, err := x.o.cfg.Log.Append(ctx, ev, events.RunStartedData{Engine: x.o.cfg.Engine}); err != nil {
		return events.Event{}, err
	}
	return x.hist.wait(ctx, id)
}

func (x *interpreter) finish(ctx context.Context, started events.Event, output any, failed *events.ErrorInfo) error {
	data := events.RunFinishedData{State: events.StateSuccess, Output: output}
	if failed != nil {
		data.State, data.Output, data.Error = runState(failed), nil, failed
	}
	data.DurationMS = time.Since(started.Time).Milliseconds()
	_, err := x.o.cfg.Log.Append(ctx, events.Event{
		ID:       events.DecisionID(events.RunFinished, x.runID),
		Type:     events.RunFinished,
		RunID:    x.runID,
		Job:      x.job.Name,
		ParentID: started.ID,
	}, data)
	return err
}

// runState maps the error that ended a run to its terminal state.
func runState(failed *events.ErrorInfo) string {
	if failed.Kind == events.KindCancelled {
		return events.StateCancelled
	}
	return events.StateFailed
}

// steps runs a step list in order and returns the last step's output. It
// stops at the first step that fails.
func (x *interpreter) steps(ctx context.Context, sc *scope, list []assets.Step) (any, *events.ErrorInfo) {
	var last any
	for i := range list {
		st := &list[i]
		res, failed := x.step(ctx, sc, st)
		sc.record(st.ID, res)
		if failed != nil {
			return nil, failed
		}
		last = res.Output
	}
	return last, nil
}

// step runs one step of any kind and returns its result.
func (x *interpreter) step(ctx context.Context, sc *scope, st *assets.Step) (assets.StepResult, *events.ErrorInfo) {
	key := sc.key(st.ID)
	if st.Activity == nil {
		return failedResult(key, &events.ErrorInfo{Kind: events.KindStructural,
			Message: fmt.Sprintf("step %s: only activity steps can run", st.ID)})
	}
	out, failed := x.attempt(ctx, sc, st, key, 1)
	if failed != nil {
		return failedResult(key, failed)
	}
	return assets.StepResult{State: events.StateSuccess, Output: out}, nil
}

func failedResult(key string, failed *events.ErrorInfo) (assets.StepResult, *events.ErrorInfo) {
	if failed.StepKey == "" {
		failed.StepKey = key
	}
	state := events.StateFailed
	switch failed.Kind {
	case events.KindCancelled:
		state = events.StateCancelled
	case events.KindTimeout:
		state = events.StateTimeout
	}
	return assets.StepResult{State: state}, failed
}

// attempt runs one attempt of an activity step instance, or returns what
// the history recorded for it.
func (x *interpreter) attempt(ctx context.Context, sc *scope, st *assets.Step, key string, n int) (any, *events.ErrorInfo) {
	finishedID := stepEventID(events.StepFinished, x.runID, key, n)
	if ev, ok := x.hist.get(finishedID); ok {
		return stepOutcome(ev)
	}
	startedID := stepEventID(events.StepStarted, x.runID, key, n)
	if _, ok := x.hist.get(startedID); ok {
		if ev, done, err := x.redispatch(ctx, sc, st, key, n); err != nil {
			return nil, internal(ctx, err)
		} else if done {
			return stepOutcome(ev)
		}
	} else if failed, err := x.dispatch(ctx, sc, st, key, n); err != nil {
		return nil, internal(ctx, err)
	} else if failed != nil {
		return nil, failed
	}
	ev, err := x.hist.wait(ctx, finishedID)
	if err != nil {
		return nil, internal(ctx, err)
	}
	return stepOutcome(ev)
}

// dispatch records step.started and sends the step command. The two go
// out together: the command does not wait for the event to be stored, and
// the attempt waits for both. A step whose input or activity cannot be
// rendered fails here without being dispatched.
//
// In a resumed run a command may exist without its step.started (an engine
// died between the two), so there the command is sent only if it is not
// already queued.
func (x *interpreter) dispatch(ctx context.Context, sc *scope, st *assets.Step, key string, n int) (*events.ErrorInfo, error) {
	cmd, err := x.prepare(sc, st, key, n)
	if err != nil {
		failed := errorInfo(err)
		failed.StepKey = key
		_, err := x.o.cfg.Log.Append(ctx, events.Event{
			ID: stepEventID(events.StepFinished, x.runID, key, n), Type: events.StepFinished,
			RunID: x.runID, Job: x.job.Name, StepKey: key,
		}, events.StepFinishedData{Attempt: n, State: events.StateFailed, Error: failed})
		return failed, err
	}
	started, err := x.o.cfg.Log.AppendAsync(events.Event{
		ID: cmd.StartedID, Type: events.StepStarted, RunID: x.runID, Job: x.job.Name, StepKey: key,
	}, events.StepStartedData{Attempt: n, ActivityType: cmd.Activity.Type, Target: st.Target, Input: cmd.Input})
	if err != nil {
		return nil, err
	}
	send := true
	if x.resumed {
		pending, err := x.o.cfg.Log.Pending(ctx, stepCommandName(cmd.Activity.Type, x.runID, key, n))
		if err != nil {
			return nil, err
		}
		send = !pending
	}
	if send {
		if err := x.send(ctx, cmd); err != nil {
			return nil, err
		}
	}
	_, err = started.Wait(ctx)
	return nil, err
}

// redispatch handles an attempt that an earlier incarnation dispatched but
// that has not finished. If its command is still queued (or being worked
// on) there is nothing to do. If not, either the attempt finished just now
// — its step.finished is appended before its command is acknowledged, so
// catching up with the log finds it — or the command was never sent, and
// it is sent now.
func (x *interpreter) redispatch(ctx context.Context, sc *scope, st *assets.Step, key string, n int) (events.Event, bool, error) {
	name := stepCommandName(st.Activity.Type, x.runID, key, n)
	pending, err := x.o.cfg.Log.Pending(ctx, name)
	if err != nil || pending {
		return events.Event{}, false, err
	}
	last, err := x.o.cfg.Log.LastMatching(ctx, []string{events.RunFilter(x.runID)})
	if err != nil {
		return events.Event{}, false, err
	}
	if err := x.hist.waitSeq(ctx, last); err != nil {
		return events.Event{}, false, err
	}
	if ev, ok := x.hist.get(stepEventID(events.StepFinished, x.runID, key, n)); ok {
		return ev, true, nil
	}
	cmd, err := x.prepare(sc, st, key, n)
	if err != nil {
		return events.Event{}, false, err
	}
	return events.Event{}, false, x.send(ctx, cmd)
}

func (x *interpreter) send(ctx context.Context, cmd *stepCommand) error {
	name := stepCommandName(cmd.Activity.Type, cmd.RunID, cmd.StepKey, cmd.Attempt)
	return x.o.cfg.Log.Send(ctx, name, stepEventID("step.command", cmd.RunID, cmd.StepKey, cmd.Attempt), cmd)
}

// internal turns an error of Orbit itself into a step failure, unless the
// context ended: then the run is stopping, and the caller sees ctx.Err.
func internal(ctx context.Context, err error) *events.ErrorInfo {
	if ctx.Err() != nil {
		return &events.ErrorInfo{Kind: events.KindInternal, Message: "stopped: " + context.Cause(ctx).Error()}
	}
	return &events.ErrorInfo{Kind: events.KindInternal, Message: err.Error(), Retryable: true}
}

// stepOutcome decodes a step.finished event into an output or a failure.
func stepOutcome(ev events.Event) (any, *events.ErrorInfo) {
	var d events.StepFinishedData
	if err := ev.Decode(&d); err != nil {
		return nil, &events.ErrorInfo{Kind: events.KindInternal, Message: err.Error(), StepKey: ev.StepKey}
	}
	if d.State == events.StateSuccess {
		return d.Output, nil
	}
	if d.Error == nil {
		d.Error = &events.ErrorInfo{Kind: events.KindActivity, Message: "step " + d.State}
	}
	if d.Error.StepKey == "" {
		d.Error.StepKey = ev.StepKey
	}
	return nil, d.Error
}

func encodeJSON(v any) (json.RawMessage, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, errors.Join(ErrInvalidJob, err)
	}
	return b, nil
}
