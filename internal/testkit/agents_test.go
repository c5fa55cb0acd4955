package testkit

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAgentsRunOnTheSupportedNode: on the agents' PATH (AgentPath), node
// is one Claude Code's package supports (the pin of make agents, when the
// machine's is older), and Codex starts on the same node.
func TestAgentsRunOnTheSupportedNode(t *testing.T) {
	codex := CodexCLI(t)
	env := []string{"PATH=" + AgentPath(t)}
	out, err := shellIn(env, "node --version")
	require.NoError(t, err, out)
	version := strings.TrimSpace(out)
	assert.GreaterOrEqual(t, nodeMajor(pathOf(env)), MinNodeMajor, "node %s", version)
	if strings.HasPrefix(pathOf(env), ModuleRoot(t)) {
		assert.Equal(t, "v"+NodeVersion, version, "the pin of tools/agents/package.json")
	}

	codexEnv := CodexEnv(t)
	out, err = shellIn(codexEnv, codex+" --version")
	require.NoError(t, err, out)
	assert.Contains(t, out, CodexVersion)
	assert.Equal(t, pathOf(env), pathOf(codexEnv), "Codex is tested on the agents' PATH")
}

func shellIn(env []string, script string) (string, error) {
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func pathOf(env []string) string {
	for _, kv := range env {
		if p, ok := strings.CutPrefix(kv, "PATH="); ok {
			return p
		}
	}
	return ""
}
