package activity

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/interpreter"
)

// actionCall is what a deterministic action gets: its rendered config and
// the step's input.
type actionCall struct {
	Config map[string]any
	Input  any
}

// action is a built-in deterministic action. It returns the step's output,
// or a *interpreter.Failure (anything else is an internal error).
type action func(ctx context.Context, call actionCall) (any, error)

// actions is the registry of deterministic actions, fixed at start-up.
var actions = map[string]action{
	"echo":                   echoAction,
	"sleep":                  sleepAction,
	"fail":                   failAction,
	"pipeline_success_guard": successGuardAction,
}

// workerActions are the deterministic actions that act on the engine's
// stores, and so need the worker.
var workerActions = map[string]func(ctx context.Context, w *Worker, cmd *interpreter.StepCommand) (any, error){
	"locks.reserve": reserveAction,
	"locks.release": releaseAction,
}

func actionNames() string {
	names := append([]string{interpreter.ActionInvoke, interpreter.ActionWait, interpreter.ActionInvokeAndWait}, declaredNames()...)
	for n := range actions {
		names = append(names, n)
	}
	for n := range workerActions {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// echoAction outputs the config merged over the input (config wins). A
// non-object input is replaced by the config, or passed through when there
// is no config.
func echoAction(_ context.Context, call actionCall) (any, error) {
	in, ok := call.Input.(map[string]any)
	if !ok {
		if len(call.Config) == 0 {
			return call.Input, nil
		}
		in = nil
	}
	out := make(map[string]any, len(in)+len(call.Config))
	for k, v := range in {
		out[k] = v
	}
	for k, v := range call.Config {
		out[k] = v
	}
	return out, nil
}

// sleepAction waits config.ms milliseconds, or input.seconds (the upstream
// system's sleep activity, at most an hour), and outputs {slept_ms,
// slept_seconds}.
func sleepAction(ctx context.Context, call actionCall) (any, error) {
	var d time.Duration
	if _, ok := call.Config["ms"]; ok || inputValue(call.Input, "seconds") == nil {
		ms, err := intConfig(call.Config, "ms")
		if err != nil {
			return nil, err
		}
		if err := assets.CheckDuration(ms, assets.MaxDurationMS); err != nil {
			return nil, interpreter.Fail(events.KindValidation, false, "config.ms: %v", err)
		}
		d = time.Duration(ms) * time.Millisecond
	} else {
		s, ok := inputValue(call.Input, "seconds").(float64)
		if !ok || s < 0 || s > 3600 {
			return nil, interpreter.Fail(events.KindValidation, false, "input.seconds: want a number of seconds from 0 to 3600, got %v", inputValue(call.Input, "seconds"))
		}
		d = time.Duration(s * float64(time.Second))
	}
	select {
	case <-time.After(d):
		return map[string]any{"slept_ms": d.Milliseconds(), "slept_seconds": d.Seconds()}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// inputValue is input[key] when the input is an object, else nil.
func inputValue(input any, key string) any {
	m, _ := input.(map[string]any)
	return m[key]
}

// successGuardAction fails unless every child run in input.result (one
// invoke_and_wait output) or input.results (a list of them) has status
// succeeded; input.context names what is checked. It runs after the
// steps that must see a failed child's status (releasing its locks), as
// the upstream system's pipeline_success_guard does. Output:
// {succeeded: true, checked_count}.
func successGuardAction(_ context.Context, call actionCall) (any, error) {
	var results []any
	if r := inputValue(call.Input, "result"); r != nil {
		results = append(results, r)
	}
	if rs, ok := inputValue(call.Input, "results").([]any); ok {
		results = append(results, rs...)
	}
	what, _ := inputValue(call.Input, "context").(string)
	if what == "" {
		what = "child runs"
	}
	if len(results) == 0 {
		return nil, interpreter.Fail(events.KindValidation, false, "%s: input.result or input.results names no child run to check", what)
	}
	var failed []string
	for i, r := range results {
		m, _ := r.(map[string]any)
		status, _ := m["status"].(string)
		if status == interpreter.ChildSucceeded {
			continue
		}
		run, _ := m["run_id"].(string)
		desc := fmt.Sprintf("#%d", i+1)
		if run != "" {
			desc = "run " + run
		}
		if status == "" {
			status = "no status"
		}
		desc += " " + status
		if msg, _ := m["error"].(string); msg != "" {
			desc += ": " + msg
		}
		failed = append(failed, desc)
	}
	if len(failed) > 0 {
		return nil, interpreter.Fail(events.KindActivity, false, "%s: %d of %d did not succeed: %s", what, len(failed), len(results), strings.Join(failed, "; "))
	}
	return map[string]any{"succeeded": true, "checked_count": len(results)}, nil
}

// failAction fails with config.message; config.retryable (default false)
// says whether a retry may help.
func failAction(_ context.Context, call actionCall) (any, error) {
	msg, _ := call.Config["message"].(string)
	if msg == "" {
		msg = "failed by the fail action"
	}
	retryable, _ := call.Config["retryable"].(bool)
	return nil, interpreter.Fail(events.KindActivity, retryable, "%s", msg)
}

// intConfig reads a non-negative whole number from an action's config.
func intConfig(cfg map[string]any, key string) (int64, error) {
	switch v := cfg[key].(type) {
	case float64:
		if v >= 0 && v == float64(int64(v)) {
			return int64(v), nil
		}
	case int:
		if v >= 0 {
			return int64(v), nil
		}
	case nil:
		return 0, interpreter.Fail(events.KindValidation, false, "config.%s is required", key)
	}
	return 0, interpreter.Fail(events.KindValidation, false, "config.%s: want a whole number ≥ 0, got %v", key, cfg[key])
}

// runAction executes a deterministic step command.
func runAction(ctx context.Context, w *Worker, ex *execution) (any, error) {
	cmd := ex.cmd
	if act, ok := workerActions[cmd.Activity.Action]; ok {
		return act(ctx, w, cmd)
	}
	if act, ok := w.cfg.Actions[cmd.Activity.Action]; ok {
		out, err := act.Run(ctx, &ActionCall{RunID: cmd.RunID, Job: cmd.Job, StepKey: cmd.StepKey, Attempt: cmd.Attempt,
			Config: cmd.Activity.Config, Input: cmd.Input, Workspace: cmd.Workspace, Emit: ex.emit})
		if err != nil && ctx.Err() == nil {
			if _, isFailure := err.(*interpreter.Failure); !isFailure {
				err = fmt.Errorf("action %s: %w", cmd.Activity.Action, err)
			}
		}
		return out, err
	}
	act, ok := actions[cmd.Activity.Action]
	if !ok {
		return nil, interpreter.Fail(events.KindUnknownAction, false, "unknown deterministic action %q (known: %s)", cmd.Activity.Action, actionNames())
	}
	out, err := act(ctx, actionCall{Config: cmd.Activity.Config, Input: cmd.Input})
	if err != nil && ctx.Err() == nil {
		if _, isFailure := err.(*interpreter.Failure); !isFailure {
			err = fmt.Errorf("action %s: %w", cmd.Activity.Action, err)
		}
	}
	return out, err
}
