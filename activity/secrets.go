package activity

import (
	"github.com/orbitrun/orbit/interpreter"
)

// resolveSecrets puts the secrets' values in place of their placeholders in
// everything an activity reads: program, arguments, config, instruction
// and input.
func (w *Worker) resolveSecrets(cmd *interpreter.StepCommand) {
	sub := func(s string) string {
		return interpreter.SecretRef.ReplaceAllStringFunc(s, func(m string) string {
			return w.getenv(interpreter.SecretRef.FindStringSubmatch(m)[1])
		})
	}
	spec := &cmd.Activity
	spec.Program = sub(spec.Program)
	for i := range spec.Args {
		spec.Args[i] = sub(spec.Args[i])
	}
	spec.Instruction = sub(spec.Instruction)
	if spec.Config != nil {
		spec.Config, _ = mapStrings(spec.Config, sub).(map[string]any)
	}
	cmd.Input = mapStrings(cmd.Input, sub)
}

// mapStrings returns v with f applied to every string in it.
func mapStrings(v any, f func(string) string) any {
	switch t := v.(type) {
	case string:
		return f(t)
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			out[k] = mapStrings(x, f)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = mapStrings(x, f)
		}
		return out
	}
	return v
}
