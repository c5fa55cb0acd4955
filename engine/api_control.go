package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/executor"
)

// Run control endpoints (DESIGN §12).
const (
	// EndpointRunRetry starts a new run of a finished run's pinned job; it
	// answers a RunRetried.
	EndpointRunRetry = "runs.retry"
	// EndpointRunSignal delivers a signal to the steps of a run that wait
	// for it; it answers an executor.Signalled.
	EndpointRunSignal = "runs.signal"
	// EndpointRunGates says where a run waits for a signal: its own gates,
	// or those of the child runs it waits for; it answers an
	// executor.Gates.
	EndpointRunGates = "runs.gates"
)

// RunGates asks where a run waits for a signal (see executor.WaitingAt).
type RunGates struct {
	RunID string `json:"run_id"`
}

// RunRetry asks for a retry of a finished run (see
// executor.NewRetryRequest). Input, when set, is JSON that replaces the
// old run's input.
type RunRetry struct {
	RunID string `json:"run_id"`
	// Selector, instead of RunID, picks finished runs to retry each; with
	// DryRun they are listed and nothing is submitted.
	Selector  *Selector       `json:"selector,omitempty"`
	DryRun    bool            `json:"dry_run,omitempty"`
	From      string          `json:"from,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	Requester string          `json:"requester,omitempty"`
}

// RunSignal asks for a signal to be sent to a run (see executor.Signal).
// Data, when set, is JSON: the waiting steps' output.
type RunSignal struct {
	RunID     string          `json:"run_id"`
	Signal    string          `json:"signal"`
	Data      json.RawMessage `json:"data,omitempty"`
	Requester string          `json:"requester,omitempty"`
}

// RunRetried answers a RunRetry: the new run, submitted, and with From
// what it does with each top-level step before From, and why.
type RunRetried struct {
	RunID   string             `json:"run_id"`
	Job     string             `json:"job"`
	RetryOf string             `json:"retry_of"`
	From    string             `json:"from,omitempty"`
	Steps   []events.RetryStep `json:"steps,omitempty"`
}

func (e *Engine) controlEndpoints() map[string]events.Handler {
	return map[string]events.Handler{
		EndpointRunRetry:  e.handle(e.apiRunRetry),
		EndpointRunSignal: e.handle(e.apiRunSignal),
		EndpointRunGates:  e.handle(e.apiRunGates),
		EndpointRunResume: e.handle(e.apiRunResume),
		EndpointRunPause:  e.handle(e.apiRunPause),
	}
}

// apiRunRetry validates a retry against the log and submits the new run.
// A refused retry writes nothing.
func (e *Engine) apiRunRetry(ctx context.Context, req json.RawMessage) (any, error) {
	var q RunRetry
	if err := decode(req, &q); err != nil {
		return nil, err
	}
	if strings.TrimSpace(q.RunID) == "" && q.Selector.Empty() {
		return nil, fmt.Errorf("%w: retry needs a run id or a selector", events.ErrInvalidRequest)
	}
	opts := executor.RetryOptions{From: q.From, Requester: q.Requester, Env: os.LookupEnv, Root: e.info.Root}
	if len(q.Input) > 0 {
		if err := json.Unmarshal(q.Input, &opts.Input); err != nil {
			return nil, fmt.Errorf("%w: input: not valid JSON: %v", events.ErrInvalidRequest, err)
		}
		if opts.Input == nil {
			return nil, fmt.Errorf("%w: a run's input is a JSON object, not null (leave the input out to retry with the old run's)", events.ErrInvalidRequest)
		}
		if err := checkInput(opts.Input); err != nil {
			return nil, err
		}
		opts.HasInput = true
	}
	if !q.Selector.Empty() {
		return e.bulkRetry(ctx, q, opts)
	}
	r, err := executor.NewRetryRequest(ctx, e.log, q.RunID, opts)
	if err != nil {
		return nil, err
	}
	r.Signer = events.RequestSigner(ctx)
	if err := executor.Submit(ctx, e.log, r); err != nil {
		return nil, fmt.Errorf("submitting the retry: %w", err)
	}
	return RunRetried{RunID: r.RunID, Job: r.Job.Name, RetryOf: r.RetryOf, From: r.From, Steps: r.RetrySteps}, nil
}

// apiRunSignal checks against the log that the run waits for the signal
// and records it; a refused signal writes nothing.
func (e *Engine) apiRunSignal(ctx context.Context, req json.RawMessage) (any, error) {
	var q RunSignal
	if err := decode(req, &q); err != nil {
		return nil, err
	}
	if strings.TrimSpace(q.RunID) == "" || !assets.ValidSignal(q.Signal) {
		return nil, fmt.Errorf("%w: a signal needs a run id and a signal name (letters, digits, _, . and -), got %q", events.ErrInvalidRequest, q.Signal)
	}
	var data any
	if len(q.Data) > 0 {
		if err := json.Unmarshal(q.Data, &data); err != nil {
			return nil, fmt.Errorf("%w: data: not valid JSON: %v", events.ErrInvalidRequest, err)
		}
	}
	return executor.Signal(ctx, e.log, q.RunID, q.Signal, data, q.Requester)
}

// apiRunGates answers where a run waits for a signal.
func (e *Engine) apiRunGates(ctx context.Context, req json.RawMessage) (any, error) {
	var q RunGates
	if err := decode(req, &q); err != nil {
		return nil, err
	}
	if strings.TrimSpace(q.RunID) == "" {
		return nil, fmt.Errorf("%w: runs.gates needs a run id", events.ErrInvalidRequest)
	}
	return executor.WaitingAt(ctx, e.log, q.RunID)
}
