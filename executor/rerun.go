package executor

import (
	"context"
	"strings"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/interpreter"
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
// reuses instead of running them (see interpreter.PlanRetry: with a new input, wait
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
		before, _ := interpreter.StepsBefore(job, opts.From)
		read := func(ctx context.Context, runID string, types ...string) ([]events.Event, error) {
			return readRun(ctx, log, runID, types...)
		}
		if plan, err = interpreter.PlanRetry(ctx, read, req, runID, before, input, opts.Env, opts.Root); err != nil {
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
	before, ok := interpreter.StepsBefore(job, from)
	if !ok {
		ids := make([]string, len(job.Spec.Steps))
		for i, st := range job.Spec.Steps {
			ids[i] = st.ID
		}
		return notRetryable("--from %s: job %s has no top-level step %q; its top-level steps are: %s", from, job.Name, from, strings.Join(ids, ", "))
	}
	evs, err := readRun(ctx, log, runID, interpreter.OutcomeTypes...)
	if err != nil {
		return err
	}
	failed, err := interpreter.FirstUnreusable(evs, before)
	if err != nil || failed == "" {
		return err
	}
	return notRetryable("--from %s: step %s did not succeed in run %s, so it has no output to reuse; retry from %s or an earlier step", from, failed, runID, failed)
}

// readRun reads the events of the given types of one run, in log order.
func readRun(ctx context.Context, log *events.Log, runID string, types ...string) ([]events.Event, error) {
	filters := make([]string, len(types))
	for i, typ := range types {
		filters[i] = events.EventSubject(events.AggregateRun, runID, typ)
	}
	return log.Read(ctx, events.FollowOptions{Filters: filters})
}
