package activity_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/runrig"
	"github.com/orbitrun/orbit/internal/testkit"
)

// sessionLoopJob is a loop of three iterations of one agent_loop step on
// the agent a, bound to session chat: each iteration says its own word.
func sessionLoopJob(t *testing.T, a cliAgent) *assets.Job {
	t.Helper()
	job := runrig.ParseJob(t, `
schemaVersion: 2
kind: Job
metadata: {name: `+a.job+`}
spec:
  steps:
    - id: lp
      loop:
        max_iterations: 3
        steps:
          - id: talk
            session: chat
            default_input: {prompt: "Iteration {{ iteration }}: the word is word-{{ iteration }}."}
            spec:
              type: agent_loop
              provider: claude
              model: `+a.model+`
              instruction: "You remember words."
              tools: [fs.write]
              wall_clock_timeout_seconds: 60
`)
	spec := job.Spec.Steps[0].Loop.Steps[0].Activity
	spec.Backend, spec.Executor, spec.Provider = assets.BackendCLI, a.executor, a.provider
	es := a.spec
	es.Env = envMap(a.env)
	spec.ExecutorSpec = &es
	return job
}

// sessionTurns answer the three iterations, each with its own text.
func sessionTurns() []testkit.Turn {
	return []testkit.Turn{{Text: "noted word-1"}, {Text: "noted word-2"}, {Text: "noted word-3"}}
}

// checkSessionContinued checks a run of sessionLoopJob: three invocations,
// the first starting the agent's session and each later one continuing
// the session the one before left (on record as agent.session), and the
// third request carrying the first iteration's prompt and answer.
func checkSessionContinued(t *testing.T, log *events.Log, srv scriptedServer, runID string, fin events.RunFinishedData, resumeFlag string) {
	t.Helper()
	require.Equal(t, events.StateSuccess, fin.State, "%+v", fin.Error)
	evs := runrig.History(t, log, runID)
	sessions := runrig.DecodeAll[events.AgentSessionData](t, runrig.OfType(evs, events.AgentSession))
	require.Len(t, sessions, 3)
	started := runrig.DecodeAll[events.CLIInvocationStartedData](t, runrig.OfType(evs, events.CLIInvocationStarted))
	require.Len(t, started, 3)
	assert.NotContains(t, fmt.Sprint(started[0].Args), resumeFlag, "the first iteration starts the session")
	for i, s := range sessions {
		assert.Equal(t, "chat", s.Session)
		assert.NotEmpty(t, s.CLISession)
		if i > 0 {
			assert.Contains(t, fmt.Sprint(started[i].Args), sessions[i-1].CLISession, "iteration %d continues the session iteration %d left", i+1, i)
		}
	}
	reqs := srv.Scripted()
	require.Len(t, reqs, 3)
	assert.NotContains(t, string(reqs[0].Raw), "word-2")
	for _, want := range []string{"the word is word-1", "noted word-1", "the word is word-2", "noted word-2", "the word is word-3"} {
		assert.Contains(t, string(reqs[2].Raw), want, "the third request carries the conversation")
	}
}

func TestClaudeCodeSessionContinuesAcrossLoopIterations(t *testing.T) {
	t.Parallel()
	log, _ := cliEngine(t)
	srv := testkit.NewAnthropicServer(t, sessionTurns()...)
	job := sessionLoopJob(t, cliAgent{job: "claude_session", provider: "claude", executor: "claude", model: claudeTestModel,
		spec: assets.ExecutorSpec{Command: testkit.ClaudeCLI(t), Output: assets.OutputClaudeCode}, env: testkit.ClaudeEnv(t, srv)})
	runID, fin := runrig.RunJob(t, log, job, nil)
	checkSessionContinued(t, log, srv, runID, fin, "--resume")
}

func TestCodexThreadContinuesAcrossLoopIterations(t *testing.T) {
	t.Parallel()
	log, _ := cliEngine(t)
	srv := testkit.NewOpenAIServer(t, sessionTurns()...)
	job := sessionLoopJob(t, cliAgent{job: "codex_session", provider: "codex", executor: "codex", model: codexTestModel,
		spec: assets.ExecutorSpec{Command: testkit.CodexCLI(t), Output: assets.OutputCodex, Args: testkit.CodexProviderArgs(srv)},
		env:  testkit.CodexEnv(t)})
	runID, fin := runrig.RunJob(t, log, job, nil)
	checkSessionContinued(t, log, srv, runID, fin, "fork")
}
