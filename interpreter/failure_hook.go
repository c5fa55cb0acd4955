package interpreter

import (
	"context"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
)

// FailureActivityKey is the step key a job's failure_activity runs as. No
// step instance of a job can have it: the loader refuses a top-level step
// of that id in a job that has a failure_activity.
const FailureActivityKey = "failure_activity"

// onFailure runs the job's failure_activity, the upstream system's
// best-effort hook, when the run is about to end failed (not cancelled).
// It runs once, as the step instance FailureActivityKey with the usual
// step events under the run; like every step instance, its events have ids
// derived from the run and key, so an engine that restarts during or after
// it waits for or returns the recorded attempt instead of running it
// again. Its input is the failure: run_id, job, step_key (the step that
// failed), error {kind, message, retryable}, and workspace_path.
//
// IMPORTANT: the hook never changes the run's outcome: its own failure is
// logged for operators and otherwise ignored, and the run ends with the
// failure that triggered it.
func (x *Interpreter) onFailure(ctx context.Context, sc *scope, failed *events.ErrorInfo) {
	hook := x.job.Spec.FailureActivity
	if hook == nil || failed == nil || failed.Kind == events.KindCancelled || failed.Kind == events.KindBudget {
		return
	}
	input := map[string]any{
		"run_id":         x.runID,
		"job":            x.job.Name,
		"step_key":       failed.StepKey,
		"error":          map[string]any{"kind": failed.Kind, "message": failed.Message, "retryable": failed.Retryable},
		"workspace_path": sc.workspace(sc.input),
	}
	st := &assets.Step{ID: FailureActivityKey, Target: "activity:" + hook.Name, Activity: &hook.Spec}
	if _, hf := x.attempt(ctx, sc, st, FailureActivityKey, 1, input); hf != nil && ctx.Err() == nil {
		x.log.Warn("failure_activity failed; the run's outcome stands", "run", x.runID, "activity", hook.Name, "err", hf.Message)
	}
}
