package executor

import (
	"context"
	"slices"
	"strconv"
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
	// Env looks up {{ env.NAME }} beyond what the old run pinned, and Root
	// is the project directory ({{ workspace_path }} by default), for
	// rendering the steps before From on a new input (nil Env: nothing).
	Env  func(string) (string, bool)
	Root string
}

// NewRetryRequest builds the request for a new run of the job that runID
// ran: the job pinned in its run.requested (not today's catalog), with its
// input and pinned environment unless opts give a new input. The request
// records RetryOf and From; with From, it records in RetrySteps what the
// retry does with each top-level step before From (document order), and
// the interpreter returns the old run's recorded outcomes for the steps it
// reuses instead of running them (see planRetry: with a new input, wait
// gates are re-armed and a step is reused only if its rendered input is
// unchanged).
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
		return nil, refuse([]error{events.ErrNotFound}, "no run %s (orbit run history lists the runs)", runID)
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
	input := req.Input
	if opts.HasInput {
		input = assets.MergeInput(job.Spec.DefaultInput, opts.Input)
	}
	var plan []events.RetryStep
	if opts.From != "" {
		if err := checkFrom(ctx, log, runID, job, opts.From); err != nil {
			return nil, err
		}
		before, _ := stepsBefore(job, opts.From)
		read := func(ctx context.Context, runID string, types ...string) ([]events.Event, error) {
			return readRun(ctx, log, runID, types...)
		}
		if plan, err = planRetry(ctx, read, req, runID, before, input, opts); err != nil {
			return nil, err
		}
	}
	return &RunRequest{
		RunID:      events.NewID(),
		Job:        *job,
		Input:      input,
		Requester:  opts.Requester,
		Env:        req.Env,
		RetryOf:    runID,
		From:       opts.From,
		RetrySteps: plan,
		Backend:    req.Backend,
	}, nil
}

func notRetryable(format string, args ...any) error {
	return refuse([]error{events.ErrInvalidRequest, ErrNotRetryable}, format, args...)
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
	evs, err := readRun(ctx, log, runID, outcomeTypes...)
	if err != nil {
		return err
	}
	outcomes, err := topLevelOutcomes(evs, before)
	if err != nil {
		return err
	}
	for _, st := range before {
		if _, ok := outcomes[st.ID]; !ok {
			return notRetryable("--from %s: step %s did not succeed in run %s, so it has no output to reuse; retry from %s or an earlier step", from, st.ID, runID, st.ID)
		}
	}
	return nil
}

// stepsBefore returns the top-level steps before from, in document order,
// and whether from is a top-level step at all.
func stepsBefore(job *assets.Job, from string) ([]assets.Step, bool) {
	for i, st := range job.Spec.Steps {
		if st.ID == from {
			return job.Spec.Steps[:i], true
		}
	}
	return nil, false
}

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

// outcomeTypes are the event types of a run that topLevelOutcomes reads.
var outcomeTypes = []string{events.StepFinished, events.StepSkipped}

// readRunFunc reads the events of the given types of one run, in log
// order.
type readRunFunc func(ctx context.Context, runID string, types ...string) ([]events.Event, error)

// topLevelOutcomes returns, for each of steps, the outcome that a run's
// events of outcomeTypes (evs, in log order) record for it when that
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

// readRun reads the events of the given types of one run, in log order.
func readRun(ctx context.Context, log *events.Log, runID string, types ...string) ([]events.Event, error) {
	filters := make([]string, len(types))
	for i, typ := range types {
		filters[i] = events.EventSubject(events.AggregateRun, runID, typ)
	}
	return log.Read(ctx, events.FollowOptions{Filters: filters})
}

// loadReuse prepares the outcomes a retry with From returns for the steps
// before From that its run.requested says it reuses (all of them in a
// retry recorded before run.requested said).
func (x *interpreter) loadReuse(ctx context.Context, req *events.RunRequestedData) error {
	if req.RetryOf == "" || req.From == "" {
		return nil
	}
	before, _ := stepsBefore(x.job, req.From)
	if req.RetrySteps != nil {
		reuse := map[string]bool{}
		for _, s := range req.RetrySteps {
			reuse[s.Step] = s.Action == events.RetryReused
		}
		before = slices.DeleteFunc(slices.Clone(before), func(st assets.Step) bool { return !reuse[st.ID] })
	}
	evs, err := x.host.Read(ctx, req.RetryOf, outcomeTypes...)
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
	for id, res := range r.exposed {
		sc.record(id, res)
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
