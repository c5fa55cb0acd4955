package interpreter

import (
	"context"

	"github.com/orbitrun/orbit/events"
)

// FailpointDecided is reached once the one event of a step the
// interpreter decides itself is sent, before it is stored.
const FailpointDecided = "orchestrator-after-decided-step"

// decide carries out an attempt of a step of a pure action (see
// decidable) without a worker: the interpreter computes the action's
// output and records the attempt as one event, its step.finished, which
// carries start, what its step.started would have held
// (StepFinishedData.Started; a fan-out item's input by reference).
// No step.started is written and no command is queued: the step costs
// the log one write, on the path of nothing else.
//
// An engine that dies before the event is stored leaves nothing of the
// attempt: the run's next interpreter decides it again, and the action
// is pure, so the output is the same. The event's id is the attempt's
// step.finished id, so a second copy sent while the first was in flight
// is dropped as a duplicate.
func (x *Interpreter) decide(ctx context.Context, sc *scope, cmd *StepCommand, act PureAction, start events.StepStartedData) error {
	out, err := act(cmd.Activity.Config, cmd.input)
	finished := events.StepFinishedData{Attempt: cmd.Attempt, State: events.StateSuccess, Output: out, Worker: x.cfg.Engine, Started: &start}
	if err != nil {
		info := ErrorInfo(err)
		info.StepKey = cmd.StepKey
		finished.State, finished.Output, finished.Error = FailedState(info), nil, info
	}
	takeTurn(ctx)
	end, err := x.host.AppendAsync(ctx, events.Event{
		ID: StepEventID(events.StepFinished, x.runID, cmd.StepKey, cmd.Attempt), Type: events.StepFinished,
		RunID: x.runID, Job: x.job.Name, StepKey: cmd.StepKey, ParentID: sc.parent,
	}, finished)
	passTurn(ctx)
	if err != nil {
		return err
	}
	x.host.Failpoint(FailpointDecided)
	_, err = end.Wait(ctx)
	return err
}

// started returns what an attempt's start recorded: its step.started's
// data, or, for a step the interpreter decided, what its step.finished
// carries in its place.
func (x *Interpreter) started(key string, attempt int) (events.StepStartedData, bool) {
	for _, typ := range []string{events.StepStarted, events.StepFinished} {
		if ev, ok := x.hist.Get(StepEventID(typ, x.runID, key, attempt)); ok {
			return events.StepStart(ev)
		}
	}
	return events.StepStartedData{}, false
}
