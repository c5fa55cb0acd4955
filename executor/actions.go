package executor

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
)

// actionCall is what a deterministic action gets: its rendered config and
// the step's input.
type actionCall struct {
	Config map[string]any
	Input  any
}

// action is a built-in deterministic action. It returns the step's output,
// or a *failure (anything else is an internal error).
type action func(ctx context.Context, call actionCall) (any, error)

// actions is the registry of deterministic actions, fixed at start-up.
var actions = map[string]action{
	"echo":  echoAction,
	"sleep": sleepAction,
	"fail":  failAction,
}

// workerActions are the deterministic actions that act on the engine's
// stores, and so need the worker.
var workerActions = map[string]func(ctx context.Context, w *Worker, cmd *stepCommand) (any, error){
	"locks.reserve": reserveAction,
	"locks.release": releaseAction,
}

func actionNames() string {
	names := []string{actionInvoke, actionWait}
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

// sleepAction waits config.ms milliseconds and outputs {slept_ms}.
func sleepAction(ctx context.Context, call actionCall) (any, error) {
	ms, err := intConfig(call.Config, "ms")
	if err != nil {
		return nil, err
	}
	if err := assets.CheckDuration(ms, assets.MaxDurationMS); err != nil {
		return nil, fail(events.KindValidation, false, "config.ms: %v", err)
	}
	select {
	case <-time.After(time.Duration(ms) * time.Millisecond):
		return map[string]any{"slept_ms": ms}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// failAction fails with config.message; config.retryable (default false)
// says whether a retry may help.
func failAction(_ context.Context, call actionCall) (any, error) {
	msg, _ := call.Config["message"].(string)
	if msg == "" {
		msg = "failed by the fail action"
	}
	retryable, _ := call.Config["retryable"].(bool)
	return nil, fail(events.KindActivity, retryable, "%s", msg)
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
		return 0, fail(events.KindValidation, false, "config.%s is required", key)
	}
	return 0, fail(events.KindValidation, false, "config.%s: want a whole number ≥ 0, got %v", key, cfg[key])
}

// runAction executes a deterministic step command.
func runAction(ctx context.Context, w *Worker, cmd *stepCommand) (any, error) {
	if act, ok := workerActions[cmd.Activity.Action]; ok {
		return act(ctx, w, cmd)
	}
	act, ok := actions[cmd.Activity.Action]
	if !ok {
		return nil, fail(events.KindUnknownAction, false, "unknown deterministic action %q (known: %s)", cmd.Activity.Action, actionNames())
	}
	out, err := act(ctx, actionCall{Config: cmd.Activity.Config, Input: cmd.Input})
	if err != nil && ctx.Err() == nil {
		if _, isFailure := err.(*failure); !isFailure {
			err = fmt.Errorf("action %s: %w", cmd.Activity.Action, err)
		}
	}
	return out, err
}
