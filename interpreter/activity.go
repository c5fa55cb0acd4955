package interpreter

import (
	"context"
	"os"
	"time"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
)

// KillGrace is how long a worker gives a cancelled activity's process
// group between SIGTERM and SIGKILL.
const KillGrace = 3 * time.Second

// cancelWait bounds how long a cancelled run waits for its running
// activities to report: the workers' kill grace period and some slack.
const cancelWait = KillGrace + 5*time.Second

// attempt runs one attempt of an activity step instance, or returns what
// the history recorded for it. A non-nil input is used as the step input
// as is, instead of rendering the step's default_input (recovery
// activities get theirs this way).
func (x *Interpreter) attempt(ctx context.Context, sc *scope, st *assets.Step, key string, n int, input any) (any, *events.ErrorInfo) {
	finishedID := StepEventID(events.StepFinished, x.runID, key, n)
	if ev, ok := x.hist.Get(finishedID); ok {
		return x.outcome(key, ev)
	}
	startedID := StepEventID(events.StepStarted, x.runID, key, n)
	if _, ok := x.hist.Get(startedID); ok {
		if ev, done, err := x.redispatch(ctx, sc, st, key, n, input); err != nil {
			return nil, internal(ctx, err)
		} else if done {
			return x.outcome(key, ev)
		}
	} else {
		x.waitUnpaused(ctx)
		if x.isCancelled() {
			return nil, x.cancelFailure(key)
		}
		if failed, err := x.dispatch(ctx, sc, st, key, n, input); err != nil {
			return nil, internal(ctx, err)
		} else if failed != nil {
			return nil, failed
		}
	}
	ev, err := x.waitFinished(ctx, finishedID)
	if err != nil {
		return nil, internal(ctx, err)
	}
	if ev == nil {
		return nil, x.cancelFailure(key)
	}
	return x.outcome(key, *ev)
}

// waitFinished waits for a dispatched attempt's step.finished. When the run
// is cancelled the workers stop the activity and report it; if none does
// within cancelWait, it returns nil.
func (x *Interpreter) waitFinished(ctx context.Context, id string) (*events.Event, error) {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-x.cancelled:
		case <-wctx.Done():
			return
		}
		select {
		case <-x.host.After(cancelWait):
			cancel()
		case <-wctx.Done():
		}
	}()
	ev, err := x.waitFor(wctx, id)
	if err != nil {
		if ctx.Err() == nil && x.isCancelled() {
			return nil, nil
		}
		return nil, err
	}
	return &ev, nil
}

// dispatch records step.started and sends the step command. The two go
// out together: the command does not wait for the event to be stored, and
// the attempt waits for both. A step whose input or activity cannot be
// rendered fails here without being dispatched; a step the interpreter
// decides itself is decided here (see decide).
//
// In a resumed run a command may exist without its step.started (an engine
// died between the two), so there the command is sent only if it is not
// already queued.
func (x *Interpreter) dispatch(ctx context.Context, sc *scope, st *assets.Step, key string, n int, input any) (*events.ErrorInfo, error) {
	cmd, err := x.prepare(sc, st, key, n, input, true)
	if err != nil {
		failed := ErrorInfo(err)
		failed.StepKey = key
		return failed, x.recordFinished(ctx, key, n, sc.parent, assets.StepResult{}, failed)
	}
	data := events.StepStartedData{Attempt: n, ActivityType: cmd.Activity.Type, Target: st.Target, Input: cmd.Input}
	if ref := cmd.InputRef; ref != nil {
		data.Item = &events.ItemInput{Of: ref.ID, Index: sc.item.index, Value: ref.Item}
	}
	if act, ok := x.decidable(cmd); ok {
		return nil, x.decide(ctx, sc, cmd, act, data)
	}
	takeTurn(ctx)
	started, err := x.host.AppendAsync(ctx, events.Event{
		ID: cmd.StartedID, Type: events.StepStarted, RunID: x.runID, Job: x.job.Name, StepKey: key, ParentID: sc.parent,
	}, data)
	passTurn(ctx)
	if err != nil {
		return nil, err
	}
	send := true
	if x.resumed {
		pending, err := x.host.Queued(ctx, StepCommandName(cmd.Activity.Type, x.runID, key, n))
		if err != nil {
			return nil, err
		}
		send = !pending
	}
	if send {
		if err := x.host.Send(ctx, cmd); err != nil {
			return nil, err
		}
	}
	_, err = started.Wait(ctx)
	x.host.Failpoint("orchestrator-after-dispatch")
	return nil, err
}

// redispatch handles an attempt that an earlier incarnation dispatched but
// that has not finished. If its command is still queued (or being worked
// on) there is nothing to do. If not, either the attempt finished just now
// — its step.finished is appended before its command is acknowledged, so
// catching up with the log finds it — or the command was never sent, and
// it is sent now, marked Resent: an earlier delivery of it may have run,
// and on an embedded store under step protocol 5 a first execution
// leaves no activity.started to tell. (A step the interpreter decides
// itself has no step.started, so it never comes here.)
func (x *Interpreter) redispatch(ctx context.Context, sc *scope, st *assets.Step, key string, n int, input any) (events.Event, bool, error) {
	name := StepCommandName(st.Activity.Type, x.runID, key, n)
	pending, err := x.host.Queued(ctx, name)
	if err != nil || pending {
		return events.Event{}, false, err
	}
	if err := x.catchUp(ctx); err != nil {
		return events.Event{}, false, err
	}
	if ev, ok := x.hist.Get(StepEventID(events.StepFinished, x.runID, key, n)); ok {
		return ev, true, nil
	}
	cmd, err := x.prepare(sc, st, key, n, input, true)
	if err != nil {
		return events.Event{}, false, err
	}
	cmd.Resent = true
	return events.Event{}, false, x.host.Send(ctx, cmd)
}

// Command renders the command that attempt n of the top-level step key of
// cfg.Job gets with the given run input: what dispatch sends a worker. It
// is how a test sends a command again, as a redelivery would; nil and
// os.ErrNotExist when the job has no such step.
func Command(cfg Config, key string, n int, input any) (*StepCommand, error) {
	x := New(cfg)
	for i := range cfg.Job.Spec.Steps {
		if st := &cfg.Job.Spec.Steps[i]; st.ID == key {
			x.env = cfg.Env
			return x.prepare(newScope(input, cfg.Workspace, ""), st, key, n, nil, false)
		}
	}
	return nil, os.ErrNotExist
}
