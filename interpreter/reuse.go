package interpreter

import (
	"context"
	"slices"
	"strconv"
	"strings"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
)

// reused is what a run recorded for a top-level step that a retry takes
// over: a successful step.finished or a step.skipped, and the results the
// step made visible to later steps besides its own (a parallel step's
// branches, a loop's body steps, a fan_in's collect name).
type reused struct {
	skipped   bool
	condition string
	output    any
	exposed   map[string]assets.StepResult
	attempt   int // the attempt that succeeded
}

// outcome is the last record of one step instance: its state and output,
// and the attempt that finished.
type outcome struct {
	result    assets.StepResult
	attempt   int
	condition string
}

// OutcomeTypes are the event types of a run that a retry reads of it.
var OutcomeTypes = []string{events.StepFinished, events.StepSkipped}

// ReadRunFunc reads the events of the given types of one run, in log
// order.
type ReadRunFunc func(ctx context.Context, runID string, types ...string) ([]events.Event, error)

// FirstUnreusable returns the first of steps for which a run's events of
// OutcomeTypes (evs, in log order) record no outcome a retry can reuse (a
// success or a skip), or "" when each has one.
func FirstUnreusable(evs []events.Event, steps []assets.Step) (string, error) {
	outcomes, err := topLevelOutcomes(evs, steps)
	if err != nil {
		return "", err
	}
	for _, st := range steps {
		if _, ok := outcomes[st.ID]; !ok {
			return st.ID, nil
		}
	}
	return "", nil
}

// topLevelOutcomes returns, for each of steps, the outcome that a run's
// events of OutcomeTypes (evs, in log order) record for it when that
// outcome is a success or a skip. The old run is finished, so its history
// no longer changes and the answer is the same every time it is asked.
func topLevelOutcomes(evs []events.Event, steps []assets.Step) (map[string]reused, error) {
	byKey := make(map[string]outcome)
	for _, ev := range evs { // in log order: a later attempt overrides
		switch ev.Type {
		case events.StepSkipped:
			var d events.StepSkippedData
			if err := ev.Decode(&d); err != nil {
				return nil, err
			}
			byKey[ev.StepKey] = outcome{result: assets.StepResult{State: events.StateSkipped}, condition: d.Condition}
		case events.StepFinished:
			var d events.StepFinishedData
			if err := ev.Decode(&d); err != nil {
				return nil, err
			}
			byKey[ev.StepKey] = outcome{result: assets.StepResult{State: d.State, Output: d.Output}, attempt: d.Attempt}
		}
	}
	out := make(map[string]reused)
	for i := range steps {
		st := &steps[i]
		o, ok := byKey[st.ID]
		switch {
		case !ok:
		case o.result.State == events.StateSkipped:
			out[st.ID] = reused{skipped: true, condition: o.condition}
		case o.result.State == events.StateSuccess:
			out[st.ID] = reused{output: o.result.Output, exposed: exposed(st, o, byKey), attempt: o.attempt}
		}
	}
	return out, nil
}

// exposed rebuilds the results a structural step that succeeded made
// visible to the steps after it, besides its own, from the outcomes of the
// instances inside its successful attempt.
func exposed(st *assets.Step, top outcome, byKey map[string]outcome) map[string]assets.StepResult {
	prefix := childPrefix(st.ID, max(top.attempt, 1))
	res := make(map[string]assets.StepResult)
	switch {
	case st.Parallel != nil:
		for _, br := range st.Parallel.Branches {
			if o, ok := byKey[prefix+br.ID]; ok {
				res[br.ID] = o.result
			}
		}
	case st.Loop != nil:
		// The last iteration's results of the body steps, as publishResults
		// leaves them.
		last := 0
		for key := range byKey {
			rest, ok := strings.CutPrefix(key, prefix)
			if !ok {
				continue
			}
			n, _, _ := strings.Cut(rest, "/")
			if i, err := strconv.Atoi(n); err == nil && i > last {
				last = i
			}
		}
		for _, body := range st.Loop.Steps {
			if o, ok := byKey[prefix+strconv.Itoa(last)+"/"+body.ID]; ok && last > 0 {
				res[body.ID] = o.result
			}
		}
	case st.FanOut != nil && st.FanIn != nil && st.FanIn.Collect != "":
		res[st.FanIn.Collect] = top.result
	}
	return res
}

// loadReuse prepares the outcomes a retry with From returns for the steps
// before From that its run.requested says it reuses (all of them in a
// retry recorded before run.requested said).
func (x *Interpreter) loadReuse(ctx context.Context, req *events.RunRequestedData) error {
	if req.RetryOf == "" || req.From == "" {
		return nil
	}
	before, _ := StepsBefore(x.job, req.From)
	if req.RetrySteps != nil {
		reuse := map[string]bool{}
		for _, s := range req.RetrySteps {
			reuse[s.Step] = s.Action == events.RetryReused
		}
		before = slices.DeleteFunc(slices.Clone(before), func(st assets.Step) bool { return !reuse[st.ID] })
	}
	evs, err := x.host.Read(ctx, req.RetryOf, OutcomeTypes...)
	if err != nil {
		return err
	}
	outcomes, err := topLevelOutcomes(evs, before)
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
func (x *Interpreter) reuseStep(ctx context.Context, sc *scope, st *assets.Step, key string) (assets.StepResult, *events.ErrorInfo, bool) {
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
	for id, res := range r.exposed {
		sc.record(id, res)
	}
	err := x.record(ctx, events.Event{ID: StepEventID(events.StepFinished, x.runID, key, 1), Type: events.StepFinished,
		StepKey: key, ParentID: sc.parent},
		events.StepFinishedData{Attempt: 1, State: events.StateSuccess, Output: r.output, ReusedFrom: x.retryOf})
	if err != nil {
		res, failed := failedResult(key, internal(ctx, err))
		return res, failed, true
	}
	return assets.StepResult{State: events.StateSuccess, Output: r.output}, nil, true
}

// StepsBefore returns the top-level steps before from, in document order,
// and whether from is a top-level step at all.
func StepsBefore(job *assets.Job, from string) ([]assets.Step, bool) {
	for i, st := range job.Spec.Steps {
		if st.ID == from {
			return job.Spec.Steps[:i], true
		}
	}
	return nil, false
}
