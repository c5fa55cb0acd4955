package interpreter

import (
	"regexp"

	"github.com/orbitrun/orbit/events"
)

// A template that reads a secret-named environment variable
// ({{ env.GITHUB_TOKEN }}) renders to a placeholder, not to the value: the
// rendered input goes into step.started and into the step command, and
// neither the log nor the command queue may hold a secret. The worker puts
// the value in just before the activity runs, from its own environment.
//
// SecretRef matches a placeholder; its group is the variable's name.
var SecretRef = regexp.MustCompile(secretOpen + `([A-Za-z_][A-Za-z0-9_]*)⟧`)

// secretOpen begins every placeholder: a string without it holds none.
const secretOpen = "⟦secret:"

func secretPlaceholder(name string) string { return secretOpen + name + "⟧" }

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
