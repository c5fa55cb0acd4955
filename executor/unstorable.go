package executor

import (
	"context"
	"errors"
	"fmt"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/interpreter"
)

// Runs whose run.requested the log cannot store. An event is at most the
// server's max_payload once its large values are blobs (events.ErrTooLarge).
// A client's submission is checked before the engine takes it
// (CheckStorable), so the client gets the reason and no run id. A request
// that gets past the check (a child run, a server whose max_payload is
// lower than an event's inline budget) is refused by the orchestrator:
// it records a small run.requested (the job's name, requester and links,
// without the job, its input or env) and a failed run.finished saying why,
// so `orbit run show` and `orbit run history` show the run and its reason.

// requestedEvent is the run.requested that records req.
func requestedEvent(req *RunRequest) (events.Event, events.RunRequestedData, error) {
	job, err := interpreter.EncodeJSON(req.Job)
	if err != nil {
		return events.Event{}, events.RunRequestedData{}, err
	}
	return events.Event{
			ID:       events.DecisionID(events.RunRequested, req.RunID),
			Type:     events.RunRequested,
			RunID:    req.RunID,
			Job:      req.Job.Name,
			ParentID: req.ParentEvent,
		}, events.RunRequestedData{
			JobName:     req.Job.Name,
			Job:         job,
			Input:       req.Input,
			Requester:   req.Requester,
			Signer:      req.Signer,
			Parent:      req.Parent,
			Depth:       req.Depth,
			Root:        req.Root,
			Env:         req.Env,
			RetryOf:     req.RetryOf,
			From:        req.From,
			RetrySteps:  req.RetrySteps,
			Backend:     req.Backend,
			Routine:     req.Routine,
			Bulk:        req.Bulk,
			Traceparent: req.Traceparent,
			Protocol:    events.StepProtocol,
		}, nil
}

// CheckStorable reports whether the log can store req's run.requested: nil,
// or an error wrapping events.ErrTooLarge that names the event's size and
// the server's max_payload (or the error that stopped the check). Nothing
// is appended.
func CheckStorable(ctx context.Context, log *events.Log, req *RunRequest) error {
	ev, data, err := requestedEvent(req)
	if err != nil {
		return err
	}
	if err := log.Fits(ctx, ev, data); err != nil {
		return fmt.Errorf("the run cannot be recorded: %w; make the job or its input smaller", err)
	}
	return nil
}

// refusedJobName is the job name a refused run is recorded under: its
// own, unless it is too long to be any loaded job's (and would not fit).
func refusedJobName(req *RunRequest) string {
	if len(req.Job.Name) > assets.MaxNameBytes {
		return ""
	}
	return req.Job.Name
}

// recordRefused records the small run.requested of a run whose request
// cannot be stored: what the views need to list it. It cannot be run or
// retried (it holds no job); its run.finished says why.
func (o *Orchestrator) recordRefused(ctx context.Context, req *RunRequest) error {
	job := refusedJobName(req)
	_, err := o.cfg.Log.Append(ctx, events.Event{
		ID:       events.DecisionID(events.RunRequested, req.RunID),
		Type:     events.RunRequested,
		RunID:    req.RunID,
		Job:      job,
		ParentID: req.ParentEvent,
	}, events.RunRequestedData{
		JobName:   job,
		Requester: truncate(req.Requester, assets.MaxNameBytes),
		Signer:    req.Signer,
		Parent:    req.Parent,
		Depth:     req.Depth,
		Root:      req.Root,
		RetryOf:   req.RetryOf,
		From:      req.From,
	})
	if errors.Is(err, events.ErrTooLarge) {
		return nil // even so small it does not fit: the run.finished still tells
	}
	return err
}

// truncate returns s cut to at most n bytes.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
