package agent_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/orbitrun/orbit/agent"
)

// TestConfiguredKeysAreSecret: a variable the project names as holding an
// API key is a secret setting, even one the list knows as not secret, and
// is listed once.
func TestConfiguredKeysAreSecret(t *testing.T) {
	t.Parallel()
	list := agent.Settings("ANTHROPIC_BASE_URL", "MY_KEY_VAR", "MY_KEY_VAR", "")
	var names []string
	for _, s := range list {
		names = append(names, s.Name)
		if s.Name == "ANTHROPIC_BASE_URL" || s.Name == "MY_KEY_VAR" {
			assert.True(t, s.Secret, s.Name)
		}
	}
	assert.Len(t, names, len(agent.Settings())+1)
	assert.Equal(t, "MY_KEY_VAR", names[len(names)-1])
	assert.False(t, agent.Settings()[1].Secret, "the list itself is not changed")
}
