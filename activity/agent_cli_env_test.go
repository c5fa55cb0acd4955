package activity_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/runrig"
	"github.com/orbitrun/orbit/internal/testkit"
)

// TestCLIAgentEnvironmentIsAnAllowlist: a Claude Code agent's shell prints
// its environment, which the model server reads back. A variable the engine has and no allowlist names is not
// there; one its executor passes (pass:) is, and so are the baseline, the
// provider's and Orbit's. So is the invocation's hook token: Claude Code
// has no setting that keeps a variable its http hook reads from the
// environment of its tools (docs/architecture/groundhog.md says what the
// agent can do with it).
//
// Not parallel: it sets variables of the engine's (this process's)
// environment.
func TestCLIAgentEnvironmentIsAnAllowlist(t *testing.T) {
	t.Setenv("ENGINE_ONLY_VARIABLE", "engine-only")
	t.Setenv("PROJECT_MODEL_KEY", "passed-by-name")
	t.Setenv("ORBIT_TEST_VISIBLE", "orbit-visible")
	log, _ := cliEngine(t)
	srv := testkit.NewAnthropicServer(t,
		testkit.Turn{Tools: []testkit.ToolUse{{ID: "toolu_env", Name: "Bash", Input: map[string]any{"command": "env", "description": "print the environment"}}}},
		testkit.Turn{Text: "printed"})
	job := claudeCodeJob(t, srv, "        tools: [shell.exec]\n        allowed_programs: [env]\n        wall_clock_timeout_seconds: 60\n")
	job.Spec.Steps[0].Activity.ExecutorSpec.Pass = []string{"PROJECT_MODEL_KEY"}
	_, fin := runrig.RunJob(t, log, job, nil)

	require.Equal(t, events.StateSuccess, fin.State, "%+v", fin.Error)
	// What env printed went back to the model as the call's result.
	reqs := srv.Scripted()
	require.Len(t, reqs, 2)
	env := string(reqs[1].Raw)
	assert.NotContains(t, env, "ENGINE_ONLY_VARIABLE", "the engine's own variable is not the agent's")
	assert.Contains(t, env, "PROJECT_MODEL_KEY=passed-by-name", "pass: gives it by name")
	assert.Contains(t, env, "ORBIT_TEST_VISIBLE=orbit-visible")
	assert.Contains(t, env, "ANTHROPIC_BASE_URL="+srv.URL())
	assert.Contains(t, env, "PATH=")
	assert.Regexp(t, `ORBIT_HOOK_TOKEN=[0-9a-f]{32}\b`, env, "Claude Code's Bash sees the hook's token")
}
