package interpreter

import (
	"fmt"
	"strings"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
)

// PureAction is a built-in deterministic action whose output is a function
// of its rendered config and the step's input alone, computed at once:
// nothing outside the log changes and nothing is waited for. From step
// protocol 4 on the interpreter decides a step of one itself (decide.go);
// a worker still runs one for a run under an earlier protocol.
//
// An action returns its output, or a *Failure.
type PureAction func(config map[string]any, input any) (any, error)

// pureActions are the built-in actions that are pure. Their set is part
// of step protocol 4: which steps of a run the orchestrator decides must
// not depend on the engine that runs or resumes it.
var pureActions = map[string]PureAction{
	"echo":                   echoAction,
	"fail":                   failAction,
	"pipeline_success_guard": successGuardAction,
}

// Pure returns the pure built-in action of the given name.
func Pure(name string) (PureAction, bool) {
	act, ok := pureActions[name]
	return act, ok
}

// echoAction outputs the config merged over the input (config wins). A
// non-object input is replaced by the config, or passed through when there
// is no config.
func echoAction(config map[string]any, input any) (any, error) {
	in, ok := input.(map[string]any)
	if !ok {
		if len(config) == 0 {
			return input, nil
		}
		in = nil
	}
	out := make(map[string]any, len(in)+len(config))
	for k, v := range in {
		out[k] = v
	}
	for k, v := range config {
		out[k] = v
	}
	return out, nil
}

// failAction fails with config.message; config.retryable (default false)
// says whether a retry may help.
func failAction(config map[string]any, _ any) (any, error) {
	msg, _ := config["message"].(string)
	if msg == "" {
		msg = "failed by the fail action"
	}
	retryable, _ := config["retryable"].(bool)
	return nil, Fail(events.KindActivity, retryable, "%s", msg)
}

// successGuardAction fails unless every child run in input.result (one
// invoke_and_wait output) or input.results (a list of them) has status
// succeeded; input.context names what is checked. It runs after the
// steps that must see a failed child's status (releasing its locks), as
// the upstream system's pipeline_success_guard does. Output:
// {succeeded: true, checked_count}.
func successGuardAction(_ map[string]any, input any) (any, error) {
	var results []any
	if r := inputValue(input, "result"); r != nil {
		results = append(results, r)
	}
	if rs, ok := inputValue(input, "results").([]any); ok {
		results = append(results, rs...)
	}
	what, _ := inputValue(input, "context").(string)
	if what == "" {
		what = "child runs"
	}
	if len(results) == 0 {
		return nil, Fail(events.KindValidation, false, "%s: input.result or input.results names no child run to check", what)
	}
	var failed []string
	for i, r := range results {
		m, _ := r.(map[string]any)
		status, _ := m["status"].(string)
		if status == ChildSucceeded {
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
		return nil, Fail(events.KindActivity, false, "%s: %d of %d did not succeed: %s", what, len(failed), len(results), strings.Join(failed, "; "))
	}
	return map[string]any{"succeeded": true, "checked_count": len(results)}, nil
}

// inputValue is input[key] when the input is an object, else nil.
func inputValue(input any, key string) any {
	m, _ := input.(map[string]any)
	return m[key]
}

// decidable reports whether a step command is one the interpreter decides
// itself under the run's protocol: a pure built-in action whose rendered
// config and input hold no secret placeholder (a worker puts the secret
// in, from its engine's environment).
func (x *Interpreter) decidable(cmd *StepCommand) (PureAction, bool) {
	if x.cfg.Protocol < 4 || cmd.Activity.Type != assets.TypeDeterministic {
		return nil, false
	}
	act, ok := pureActions[cmd.Activity.Action]
	if !ok || holdsSecretRef(cmd.Activity.Config) || holdsSecretRef(cmd.input) {
		return nil, false
	}
	return act, true
}

// holdsSecretRef reports whether a string in v holds a secret placeholder.
func holdsSecretRef(v any) bool {
	switch t := v.(type) {
	case string:
		return strings.Contains(t, secretOpen) && SecretRef.MatchString(t)
	case map[string]any:
		for _, x := range t {
			if holdsSecretRef(x) {
				return true
			}
		}
	case []any:
		for _, x := range t {
			if holdsSecretRef(x) {
				return true
			}
		}
	}
	return false
}
