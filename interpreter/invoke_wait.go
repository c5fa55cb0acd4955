package interpreter

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
)

// ActionInvokeAndWait starts a child run and waits for its end, as
// job.invoke does, but returns the child's end as data instead of failing
// with it, so that the steps after it (releasing a gate's locks) run
// before a pipeline_success_guard fails the run. Its input is the upstream
// system's: job_name, run_input, timeout_seconds (of the wait; the child
// goes on), admission_task_ids and admission_workflow.
const ActionInvokeAndWait = "invoke_and_wait"

// Statuses of an invoke_and_wait output, in the upstream system's words.
const (
	ChildSucceeded = "succeeded"
	childFailed    = "failed"
	childCancelled = "cancelled"
	childTimeout   = "timeout"
)

// Admission is what an engine answers before an invoke_and_wait dispatches
// a child for tasks (Config.Admission): Skip says why the child should not
// run (the tasks were shipped meanwhile), empty to go on; Statuses are the
// tasks' statuses as it found them.
type Admission struct {
	Skip     string
	Statuses []TaskStatus
}

// TaskStatus is a task and its status, as an Admission reports it.
type TaskStatus struct {
	TaskID string `json:"task_id"`
	Status string `json:"status"`
}

// invokeWaitInput is the rendered input of an invoke_and_wait step.
type invokeWaitInput struct {
	JobName           string   `json:"job_name"`
	RunInput          any      `json:"run_input"`
	TimeoutSeconds    float64  `json:"timeout_seconds"`
	AdmissionTaskIDs  []string `json:"admission_task_ids"`
	AdmissionWorkflow string   `json:"admission_workflow"`
}

// invokeAndWait runs an invoke_and_wait step attempt. The decisions it
// makes are recorded before anything depends on them: a skip (the
// admission check said the tasks need no child) is its step.finished; the
// child's id is its step.started; the wait's deadline is that event's time
// plus timeout_seconds, so a replay waits for the same moment.
func (x *Interpreter) invokeAndWait(ctx context.Context, sc *scope, st *assets.Step, key string, attempt int) (assets.StepResult, *events.ErrorInfo) {
	if ev, ok := x.hist.Get(StepEventID(events.StepFinished, x.runID, key, attempt)); ok {
		return recordedResult(key, ev)
	}
	cmd, err := x.prepare(sc, st, key, attempt, nil, false)
	if err != nil {
		return x.finishStructural(ctx, key, attempt, sc.parent, assets.StepResult{}, ErrorInfo(err))
	}
	in, err := decodeInvokeWait(cmd.Input)
	if err != nil {
		return x.finishStructural(ctx, key, attempt, sc.parent, assets.StepResult{}, ErrorInfo(err))
	}
	startedID := StepEventID(events.StepStarted, x.runID, key, attempt)
	if _, started := x.hist.Get(startedID); !started && len(in.AdmissionTaskIDs) > 0 && x.cfg.Admission != nil {
		adm, err := x.cfg.Admission(ctx, in.AdmissionTaskIDs, in.AdmissionWorkflow)
		if err != nil {
			return x.finishStructural(ctx, key, attempt, sc.parent, assets.StepResult{}, internal(ctx, err))
		}
		if adm.Skip != "" {
			out := map[string]any{"status": ChildSucceeded, "run_id": "", "skipped": true, "reason": adm.Skip,
				"task_statuses": toJSONValue(adm.Statuses)}
			return x.finishStructural(ctx, key, attempt, sc.parent, assets.StepResult{State: events.StateSuccess, Output: out}, nil)
		}
	}
	child := *cmd
	child.Activity.Config = map[string]any{"job": in.JobName, "input": in.RunInput}
	childID, _, _, err := x.invoke(ctx, sc, st, key, attempt, &child)
	if err != nil {
		return x.finishStructural(ctx, key, attempt, sc.parent, assets.StepResult{}, ErrorInfo(err))
	}
	var deadline <-chan time.Time
	if in.TimeoutSeconds > 0 {
		started, err := x.waitFor(ctx, startedID)
		if err != nil {
			return failedResult(key, internal(ctx, err))
		}
		deadline = x.host.After(started.Time.Add(time.Duration(in.TimeoutSeconds * float64(time.Second))).Sub(x.host.Now()))
	}
	fin, failed := x.waitRunUntil(ctx, childID, deadline)
	if failed != nil {
		return failedResult(key, failed)
	}
	out := map[string]any{"run_id": childID}
	switch {
	case fin == nil:
		out["status"] = childTimeout
		out["reason"] = fmt.Sprintf("the child run did not end within %gs; it goes on", in.TimeoutSeconds)
	case fin.State == events.StateSuccess:
		out["status"] = ChildSucceeded
		out["pipeline"] = fin.Output
	default:
		out["status"] = childStatus(fin.State)
		msg := "child run " + childID + " " + fin.State
		if fin.Error != nil {
			msg += ": " + fin.Error.StepKey + ": " + fin.Error.Message
		}
		out["error"] = msg
	}
	return x.finishStructural(ctx, key, attempt, startedID, assets.StepResult{State: events.StateSuccess, Output: out}, nil)
}

// childStatus maps a run's terminal state to an invoke_and_wait status.
func childStatus(state string) string {
	switch state {
	case events.StateCancelled:
		return childCancelled
	case events.StateTimeout:
		return childTimeout
	}
	return childFailed
}

func decodeInvokeWait(input any) (*invokeWaitInput, error) {
	raw, ok := input.(json.RawMessage)
	if !ok {
		var err error
		if raw, err = json.Marshal(input); err != nil {
			return nil, err
		}
	}
	var in invokeWaitInput
	if err := json.Unmarshal(raw, &in); err != nil {
		return nil, Fail(events.KindValidation, false, "invoke_and_wait: input: %v", err)
	}
	if in.JobName == "" {
		return nil, Fail(events.KindValidation, false, "invoke_and_wait: input.job_name is required")
	}
	if in.TimeoutSeconds < 0 {
		return nil, Fail(events.KindValidation, false, "invoke_and_wait: input.timeout_seconds must be ≥ 0, not %g", in.TimeoutSeconds)
	}
	return &in, nil
}

// toJSONValue turns a value into the generic JSON form outputs carry.
func toJSONValue(v any) any {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var out any
	_ = json.Unmarshal(raw, &out)
	return out
}
