package executor

import (
	"regexp"

	"github.com/orbitrun/orbit/events"
)

// A template that reads a secret-named environment variable
// ({{ env.GITHUB_TOKEN }}) renders to a placeholder, not to the value: the
// rendered input goes into step.started and into the step command, and
// neither the log nor the command queue may hold a secret. The worker puts
// the value in just before the activity runs, from its own environment.
var secretRef = regexp.MustCompile(`⟦secret:([A-Za-z_][A-Za-z0-9_]*)⟧`)

func secretPlaceholder(name string) string { return "⟦secret:" + name + "⟧" }

// withSecretPlaceholders wraps an environment lookup for rendering.
func withSecretPlaceholders(env func(string) (string, bool)) func(string) (string, bool) {
	return func(name string) (string, bool) {
		v, ok := env(name)
		if ok && events.SecretName(name) {
			return secretPlaceholder(name), true
		}
		return v, ok
	}
}

// resolveSecrets puts the secrets' values in place of their placeholders in
// everything an activity reads: program, arguments, config, instruction
// and input.
func (w *Worker) resolveSecrets(cmd *stepCommand) {
	sub := func(s string) string {
		return secretRef.ReplaceAllStringFunc(s, func(m string) string {
			return w.getenv(secretRef.FindStringSubmatch(m)[1])
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
