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
	"echo":                   pure("echo"),
	"sleep":                  sleepAction,
	"fail":                   pure("fail"),
	"pipeline_success_guard": pure("pipeline_success_guard"),
}

// pure is the worker's form of a pure built-in action, which it runs for
// a run under a step protocol before 4 (from 4 on the interpreter decides
// a step of one itself, unless it holds a secret).
func pure(name string) action {
	act, ok := interpreter.Pure(name)
	if !ok {
		panic("activity: no pure action " + name)
	}
	return func(_ context.Context, call actionCall) (any, error) { return act(call.Config, call.Input) }
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
