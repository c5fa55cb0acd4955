package executor

import (
	"context"
	"fmt"
	"strings"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
)

// RetryOptions say how to retry a run (see NewRetryRequest).
type RetryOptions struct {
	// From is the top-level step the retry runs again from; empty runs
	// every step again.
	From string
	// Input replaces the old run's input when HasInput is set; it is merged
	// over the job's default_input as a new run's input is.
	Input    any
	HasInput bool
	// Requester names who asks, for the record.
	Requester string
}

// NewRetryRequest builds the request for a new run of the job that runID
// ran: the job pinned in its run.requested (not today's catalog), with its
// input and pinned environment unless opts give a new input. The request
// records RetryOf and From; with From, the interpreter returns the old
// run's recorded outputs for the top-level steps before From (document
// order) instead of running them.
//
// It refuses, with an error matching events.ErrNotFound, a run the log
// does not have, and with one matching ErrNotRetryable and
// events.ErrInvalidRequest: a run that has not finished, a From that is not
// a top-level step of the job (the error lists them), and a From whose
// earlier steps did not all succeed in the old run. Nothing is written.
func NewRetryRequest(ctx context.Context, log *events.Log, runID string, opts RetryOptions) (*RunRequest, error) {
	evs, err := readRun(ctx, log, runID, events.RunRequested, events.RunStarted, events.RunFinished)
	if err != nil {
		return nil, err
	}
	var (
		req      *events.RunRequestedData
		started  bool
		finished *events.RunFinishedData
	)
	for _, ev := range evs {
		switch ev.Type {
		case events.RunRequested:
			req = new(events.RunRequestedData)
			err = ev.Decode(req)
		case events.RunStarted:
			started = true
		case events.RunFinished:
			finished = new(events.RunFinishedData)
			err = ev.Decode(finished)
		}
		if err != nil {
			return nil, err
		}
	}
	if req == nil {
		return nil, fmt.Errorf("%w: no run %s (orbit run history lists the runs)", events.ErrNotFound, runID)
	}
	if finished == nil {
		state := events.StatePending
		if started {
			state = events.StateRunning
		}
		return nil, notRetryable("run %s is %s; only a finished run can be retried (orbit run cancel %s first)", runID, state, runID)
	}
	job, err := decodeJob(req.Job)
	if err != nil {
		return nil, err
	}
	if opts.From != "" {
		if err := checkFrom(ctx, log, runID, job, opts.From); err != nil {
			return nil, err
		}
	}
	input := req.Input
	if opts.HasInput {
		input = assets.MergeInput(job.Spec.DefaultInput, opts.Input)
	}
	return &RunRequest{
		RunID:     events.NewID(),
		Job:       *job,
		Input:     input,
		Requester: opts.Requester,
		Env:       req.Env,
		RetryOf:   runID,
		From:      opts.From,
	}, nil
}

func notRetryable(format string, args ...any) error {
	return fmt.Errorf("%w: %w: %s", events.ErrInvalidRequest, ErrNotRetryable, fmt.Sprintf(format, args...))
}

// checkFrom checks that from is a top-level step of job and that every
// top-level step before it succeeded (or was skipped) in the old run, so
// that there is an output to reuse for each.
func checkFrom(ctx context.Context, log *events.Log, runID string, job *assets.Job, from string) error {
	before, ok := stepsBefore(job, from)
	if !ok {
		ids := make([]string, len(job.Spec.Steps))
		for i, st := range job.Spec.Steps {
			ids[i] = st.ID
		}
		return notRetryable("--from %s: job %s has no top-level step %q; its top-level steps are: %s", from, job.Name, from, strings.Join(ids, ", "))
	}
	outcomes, err := topLevelOutcomes(ctx, log, runID, before)
	if err != nil {
		return err
	}
	for _, id := range before {
		if _, ok := outcomes[id]; !ok {
			return notRetryable("--from %s: step %s did not succeed in run %s, so it has no output to reuse; retry from %s or an earlier step", from, id, runID, id)
		}
	}
	return nil
}

// stepsBefore returns the ids of the top-level steps before from, in
// document order, and whether from is a top-level step at all.
func stepsBefore(job *assets.Job, from string) ([]string, bool) {
	var ids []string
	for _, st := range job.Spec.Steps {
		if st.ID == from {
			return ids, true
		}
		ids = append(ids, st.ID)
	}
	return nil, false
}

// reused is what a run recorded for a top-level step that a retry takes
// over: a successful step.finished or a step.skipped.
type reused struct {
	skipped   bool
	condition string
	output    any
}

// topLevelOutcomes returns, for each of ids, the outcome runID recorded
// for it when that outcome is a success or a skip. The old run is
// finished, so its history no longer changes and the answer is the same
// every time it is asked.
func topLevelOutcomes(ctx context.Context, log *events.Log, runID string, ids []string) (map[string]reused, error) {
	want := make(map[string]bool, len(ids))
	for _, id := range ids {
		want[id] = true
	}
	evs, err := readRun(ctx, log, runID, events.StepFinished, events.StepSkipped)
	if err != nil {
		return nil, err
	}
	out := make(map[string]reused)
	for _, ev := range evs { // in log order: a later attempt overrides
		if !want[ev.StepKey] {
			continue
		}
		switch ev.Type {
		case events.StepSkipped:
			var d events.StepSkippedData
			if err := ev.Decode(&d); err != nil {
				return nil, err
			}
			out[ev.StepKey] = reused{skipped: true, condition: d.Condition}
		case events.StepFinished:
			var d events.StepFinishedData
			if err := ev.Decode(&d); err != nil {
				return nil, err
			}
			if d.State == events.StateSuccess {
				out[ev.StepKey] = reused{output: d.Output}
			} else {
				delete(out, ev.StepKey)
			}
		}
	}
	return out, nil
}

// readRun reads the events of the given types of one run, in log order.
func readRun(ctx context.Context, log *events.Log, runID string, types ...string) ([]events.Event, error) {
	filters := make([]string, len(types))
	for i, typ := range types {
		filters[i] = events.EventSubject(events.AggregateRun, runID, typ)
	}
	return log.Read(ctx, events.FollowOptions{Filters: filters})
}

// loadReuse prepares the outcomes a retry with From returns for the steps
// before From.
func (x *interpreter) loadReuse(ctx context.Context, req *events.RunRequestedData) error {
	if req.RetryOf == "" || req.From == "" {
		return nil
	}
	before, _ := stepsBefore(x.job, req.From)
	outcomes, err := topLevelOutcomes(ctx, x.o.cfg.Log, req.RetryOf, before)
	if err != nil {
		return err
	}
	x.reuse, x.retryOf = outcomes, req.RetryOf
	return nil
}

// reuseStep returns the old run's outcome of a top-level step before From
// and records it in this run: step.finished (or step.skipped) marked
// reused_from, so that this run's history is complete on its own and a
// replay returns the same. It reports false for any other step.
func (x *interpreter) reuseStep(ctx context.Context, sc *scope, st *assets.Step, key string) (assets.StepResult, *events.ErrorInfo, bool) {
	r, ok := x.reuse[key]
	if !ok || key != st.ID {
		return assets.StepResult{}, nil, false
	}
	if r.skipped {
		err := x.record(ctx, events.Event{ID: events.DecisionID(events.StepSkipped, x.runID, key), Type: events.StepSkipped,
			StepKey: key, ParentID: sc.parent}, events.StepSkippedData{Condition: r.condition, ReusedFrom: x.retryOf})
		if err != nil {
			res, failed := failedResult(key, internal(ctx, err))
			return res, failed, true
		}
		return assets.StepResult{State: events.StateSkipped}, nil, true
	}
	err := x.record(ctx, events.Event{ID: stepEventID(events.StepFinished, x.runID, key, 1), Type: events.StepFinished,
		StepKey: key, ParentID: sc.parent},
		events.StepFinishedData{Attempt: 1, State: events.StateSuccess, Output: r.output, ReusedFrom: x.retryOf})
	if err != nil {
		res, failed := failedResult(key, internal(ctx, err))
		return res, failed, true
	}
	return assets.StepResult{State: events.StateSuccess, Output: r.output}, nil, true
}
