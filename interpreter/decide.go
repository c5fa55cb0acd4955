package interpreter

import (
	"context"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
)

// FailpointDecidedStart is reached between the two events of a step the
// interpreter decides itself: its step.started is sent, its step.finished
// not yet.
const FailpointDecidedStart = "orchestrator-after-decided-start"

// decide carries out an attempt of a step of a pure action (see
// decidable) without a worker: the interpreter computes the action's
// output and sends the attempt's step.started and step.finished one after
// the other, then waits for both, so that under strict durability they
// reach the disk in one write of the group commit. No command is queued:
// the step costs the log two events and nothing else.
//
// An engine that dies between the two leaves the step.started alone;
// the run's next interpreter finds it without its end, and, as no
// command is queued for it, decides it again (redispatch): the action
// is pure, so the output is the same. stored says the step.started is
// already stored.
func (x *Interpreter) decide(ctx context.Context, sc *scope, st *assets.Step, cmd *StepCommand, act PureAction, stored bool) error {
	out, err := act(cmd.Activity.Config, cmd.input)
	finished := events.StepFinishedData{Attempt: cmd.Attempt, State: events.StateSuccess, Output: out, Worker: x.cfg.Engine}
	if err != nil {
		info := ErrorInfo(err)
		info.StepKey = cmd.StepKey
		finished.State, finished.Output, finished.Error = FailedState(info), nil, info
	}
	var started Stored
	if !stored {
		takeTurn(ctx)
		started, err = x.host.AppendAsync(ctx, events.Event{
			ID: cmd.StartedID, Type: events.StepStarted, RunID: x.runID, Job: x.job.Name, StepKey: cmd.StepKey, ParentID: sc.parent,
		}, events.StepStartedData{Attempt: cmd.Attempt, ActivityType: cmd.Activity.Type, Target: st.Target, Input: cmd.Input})
		passTurn(ctx)
		if err != nil {
			return err
		}
		x.host.Failpoint(FailpointDecidedStart)
	}
	end, err := x.host.AppendAsync(ctx, events.Event{
		ID: StepEventID(events.StepFinished, x.runID, cmd.StepKey, cmd.Attempt), Type: events.StepFinished,
		RunID: x.runID, Job: x.job.Name, StepKey: cmd.StepKey, ParentID: cmd.StartedID,
	}, finished)
	if err != nil {
		return err
	}
	if started != nil {
		if _, err := started.Wait(ctx); err != nil {
			return err
		}
	}
	_, err = end.Wait(ctx)
	return err
}
