package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/oklog/ulid/v2"

	"github.com/orbitrun/orbit/activity"
	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/executor"
	"github.com/orbitrun/orbit/tracing"
)

// The write endpoints. A client may not publish to the log or the command
// queue (events.Permissions): everything it changes goes through these,
// and each checks what it is asked before the engine writes it.
const (
	EndpointSubmit   = "runs.submit"
	EndpointCancel   = "runs.cancel"
	EndpointTaskPlan = "tasks.plan"
)

// Submitted answers a run submission.
type Submitted struct {
	RunID string `json:"run_id"`
}

// CancelRequest asks to cancel a run, or with Tree the run (if it is
// live) and every live run below it (if it has finished).
type CancelRequest struct {
	RunID     string `json:"run_id"`
	Tree      bool   `json:"tree,omitempty"`
	Requester string `json:"requester,omitempty"`
	Reason    string `json:"reason,omitempty"`
	// Selector, instead of RunID, picks the live runs to cancel; with
	// DryRun they are listed and nothing is recorded.
	Selector *Selector `json:"selector,omitempty"`
	DryRun   bool      `json:"dry_run,omitempty"`
}

// Cancelled answers a CancelRequest: the run named and the runs asked to
// cancel, the one named first when it was.
type Cancelled struct {
	RunID string   `json:"run_id"`
	Runs  []string `json:"runs"`
	// Bulk is set for a cancel by selector or --tree, or a dry run.
	Bulk Bulk `json:"bulk,omitzero"`
}

// PlanChange asks to replace a task's plan with version PlanVersion, which
// must be the one after the task's current version: two changes made from
// the same version cannot both win.
type PlanChange struct {
	TaskID      string `json:"task_id"`
	Plan        string `json:"plan"`
	PlanVersion int    `json:"plan_version"`
}

// PlanChanged answers a PlanChange.
type PlanChanged struct {
	TaskID      string `json:"task_id"`
	PlanVersion int    `json:"plan_version"`
	Seq         uint64 `json:"seq"`
}

func (e *Engine) writeEndpoints() map[string]events.Handler {
	return map[string]events.Handler{
		EndpointSubmit:   e.handle(e.apiSubmit),
		EndpointCancel:   e.handle(e.apiCancel),
		EndpointTaskPlan: e.handle(e.apiTaskPlan),
	}
}

// apiSubmit queues a run request from a client. The request names its run
// id (the client follows the run before it submits it), which must be a
// ULID no event of the log has used; the job must be runnable; and a client
// cannot submit a child run: only the engine starts those (job.invoke), so
// depth and parent links cannot be forged. The run records who signed the
// request, as the server says, whatever signer the request names.
func (e *Engine) apiSubmit(ctx context.Context, raw json.RawMessage) (any, error) {
	req, minted, err := decodeSubmission(raw)
	if err != nil {
		return nil, err
	}
	req.Signer = events.RequestSigner(ctx)
	// An id the client picked may be one the log has; one minted here is
	// new (a ULID of this engine's clock and randomness).
	if !minted {
		used, err := e.log.LastMatching(ctx, []string{events.RunFilter(req.RunID)})
		if err != nil {
			return nil, err
		}
		if used != 0 {
			return nil, fmt.Errorf("%w: run id %s is taken: the log has its events", events.ErrInvalidRequest, req.RunID)
		}
	}
	// A run the log cannot record is refused now, before the client has
	// an id for it.
	if err := executor.CheckStorable(ctx, e.log, req); err != nil {
		if errors.Is(err, events.ErrTooLarge) {
			return nil, fmt.Errorf("%w: %w", events.ErrInvalidRequest, err)
		}
		return nil, err
	}
	if err := executor.Submit(ctx, e.log, req); err != nil {
		return nil, err
	}
	return Submitted{RunID: req.RunID}, nil
}

// decodeSubmission decodes a client's run request and checks what can be
// checked without the log: a ULID run id (one is picked when there is
// none, and minted says so), no parent run, parent event, depth or root,
// and a job that validates.
// Every error wraps events.ErrInvalidRequest.
func decodeSubmission(raw json.RawMessage) (req *executor.RunRequest, minted bool, err error) {
	req = &executor.RunRequest{}
	if err := decode(raw, req); err != nil {
		return nil, false, err
	}
	if req.RunID == "" {
		req.RunID, minted = events.NewID(), true
	}
	if _, err := ulid.ParseStrict(req.RunID); err != nil {
		return nil, false, fmt.Errorf("%w: run id %s: want a ULID (%v)", events.ErrInvalidRequest, quote(req.RunID), err)
	}
	if req.Parent != nil || req.ParentEvent != "" || req.Depth != 0 || req.Root != "" {
		return nil, false, fmt.Errorf("%w: a client cannot submit a child run (parent, parent_event, depth, root)", events.ErrInvalidRequest)
	}
	if err := activity.ValidateJob(&req.Job); err != nil {
		return nil, false, fmt.Errorf("%w: %w", events.ErrInvalidRequest, err)
	}
	if err := checkInput(req.Input); err != nil {
		return nil, false, err
	}
	if req.Traceparent != "" {
		if _, err := tracing.ParseTraceparent(req.Traceparent); err != nil {
			return nil, false, fmt.Errorf("%w: %w", events.ErrInvalidRequest, err)
		}
	}
	return req, minted, nil
}

// checkInput refuses a run input that is not a JSON object: a run's input
// is the object its templates read ({{ input.name }}), and its keys are
// merged over the job's default_input. No input at all is the job's
// default_input.
func checkInput(input any) error {
	kind := "a number"
	switch input.(type) {
	case nil, map[string]any:
		return nil
	case bool:
		kind = "a boolean"
	case string:
		kind = "a string"
	case []any:
		kind = "a list"
	}
	return fmt.Errorf("%w: a run's input is a JSON object, not %s (the job's default_input is used when there is none)", events.ErrInvalidRequest, kind)
}

// apiCancel records a cancel request for a run that exists and has not
// finished; with Tree, for the run if it is live and every live run below
// it, answering with no runs when none is. The run named is the selection
// today; selectors (by job, state, age) would widen it here.
func (e *Engine) apiCancel(ctx context.Context, raw json.RawMessage) (any, error) {
	var req CancelRequest
	if err := decode(raw, &req); err != nil {
		return nil, err
	}
	if !req.Selector.Empty() {
		return e.bulkCancel(ctx, req)
	}
	if req.RunID == "" {
		return nil, fmt.Errorf("%w: a cancel request needs a run_id or a selector", events.ErrInvalidRequest)
	}
	last, err := e.log.LastMatching(ctx, []string{events.RunFilter(req.RunID)})
	if err != nil {
		return nil, err
	}
	if last == 0 {
		return nil, events.NotFoundf("no run %s", quote(req.RunID))
	}
	if err := e.proj.WaitFor(ctx, last); err != nil {
		return nil, err
	}
	view, err := e.proj.RunView(ctx, req.RunID)
	if err != nil {
		return nil, err
	}
	if req.Tree && req.DryRun {
		runs, err := executor.TreeTargets(ctx, e.log, view.ID)
		if err != nil {
			return nil, err
		}
		return Cancelled{RunID: view.ID, Runs: runs, Bulk: Bulk{Runs: runs, DryRun: true}}, nil
	}
	if req.DryRun {
		var runs []string
		if !events.Terminal(view.State) {
			runs = []string{view.ID}
		}
		return Cancelled{RunID: view.ID, Runs: runs, Bulk: Bulk{Runs: runs, DryRun: true}}, nil
	}
	if req.Tree {
		bulk := events.NewID()
		runs, err := executor.CancelTree(ctx, e.log, view.ID, req.Requester, req.Reason, bulk)
		if err != nil {
			return nil, err
		}
		b := Bulk{Runs: runs}
		if len(runs) > 0 {
			b.ID = bulk
		}
		return Cancelled{RunID: view.ID, Runs: runs, Bulk: b}, nil
	}
	if events.Terminal(view.State) {
		return nil, fmt.Errorf("%w: run %s has already finished (%s); a finished run never changes", events.ErrInvalidRequest, view.ID, view.State)
	}
	if err := executor.RequestCancel(ctx, e.log, view.ID, req.Requester, req.Reason); err != nil {
		return nil, err
	}
	return Cancelled{RunID: view.ID, Runs: []string{view.ID}}, nil
}

// apiTaskPlan records a new version of a task's plan, once: the event id is
// derived from the task and the version.
func (e *Engine) apiTaskPlan(ctx context.Context, raw json.RawMessage) (any, error) {
	var req PlanChange
	if err := decode(raw, &req); err != nil {
		return nil, err
	}
	if _, err := assets.ParsePlan("plan", []byte(req.Plan)); err != nil {
		return nil, fmt.Errorf("%w: %v", events.ErrInvalidRequest, err)
	}
	last, err := e.log.LastSeq(ctx)
	if err != nil {
		return nil, err
	}
	if err := e.proj.WaitFor(ctx, last); err != nil {
		return nil, err
	}
	t, err := e.proj.Task(ctx, req.TaskID)
	if err != nil {
		return nil, err
	}
	if req.PlanVersion != t.PlanVersion+1 {
		return nil, fmt.Errorf("%w: task %s is at plan version %d, so the next is %d, not %d", events.ErrConflict, t.ID, t.PlanVersion, t.PlanVersion+1, req.PlanVersion)
	}
	ap, err := e.log.Append(ctx, events.Event{
		ID:     events.DecisionID(events.TaskPlanChanged, t.ID, fmt.Sprint(req.PlanVersion)),
		Type:   events.TaskPlanChanged,
		TaskID: t.ID,
	}, events.TaskPlanChangedData{Plan: req.Plan, PlanVersion: req.PlanVersion, PlanDigest: assets.PlanDigest([]byte(req.Plan)),
		Signer: events.RequestSigner(ctx)})
	if err != nil {
		return nil, err
	}
	if ap.Duplicate {
		return nil, fmt.Errorf("%w: task %s plan version %d was recorded by another change", events.ErrConflict, t.ID, req.PlanVersion)
	}
	return PlanChanged{TaskID: t.ID, PlanVersion: req.PlanVersion, Seq: ap.Seq}, nil
}

// quote quotes at most 64 bytes of a value a client sent, with its length.
func quote(s string) string {
	if len(s) <= 64 {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf("%q… (%d bytes)", s[:64], len(s))
}
