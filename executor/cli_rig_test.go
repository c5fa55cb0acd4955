package executor_test

import (
	"strings"
	"testing"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

// cliAgent is how the tests of a CLI adapter run its real agent: the
// executor the step names and what it holds.
type cliAgent struct {
	job      string // the job's name
	provider string // the step's provider ("": claude)
	executor string // the executor's name
	spec     assets.ExecutorSpec
	model    string
	// env is the environment that keeps the agent on loopback (KEY=VALUE);
	// in a real project a key is in the engine's environment, never in an
	// executor.
	env []string
}

// cliAgentJob is a one-step agent_loop job on the agent's executor, on the
// cli backend. extra is more of the spec, in YAML at its indentation.
func cliAgentJob(t *testing.T, a cliAgent, extra string) *assets.Job {
	t.Helper()
	job := parseJob(t, `
schemaVersion: 2
kind: Job
metadata: {name: `+a.job+`}
spec:
  steps:
    - id: agent
      default_input: {prompt: "Write the file.", ticket: 42}
      spec:
        type: agent_loop
        provider: claude
        model: `+a.model+`
        instruction: "You write files for ticket {{ input.ticket }}."
`+extra)
	// Parsed without executors, so as an http step first (Codex has no
	// HTTP transport): the executor is attached here.
	spec := job.Spec.Steps[0].Activity
	spec.Backend, spec.Executor = assets.BackendCLI, a.executor
	if a.provider != "" {
		spec.Provider = a.provider
	}
	es := a.spec
	es.Env = map[string]string{}
	for _, kv := range a.env {
		k, v, _ := strings.Cut(kv, "=")
		es.Env[k] = v
	}
	spec.ExecutorSpec = &es
	return job
}

// cliEngine starts a log and an engine whose steps run in a fresh
// workspace, which it returns.
func cliEngine(t *testing.T) (*events.Log, string) {
	t.Helper()
	log := testkit.StartLog(t, events.Config{})
	dir := t.TempDir()
	startEngine(t, log, dir, nil)
	return log, dir
}
