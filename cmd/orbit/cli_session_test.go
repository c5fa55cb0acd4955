package main_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

// chatJob is a loop of three iterations: an agent_loop step bound to
// session chat on executor, saying the iteration's word, then a pause in
// which the engine can be killed.
func chatJob(provider, executor, model string) string {
	return `schemaVersion: 2
kind: Job
metadata: {name: chat}
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
              backend: cli
              provider: ` + provider + `
              executor: ` + executor + `
              model: ` + model + `
              instruction: "You remember words."
              tools: [fs.write]
              wall_clock_timeout_seconds: 60
          - id: pause
            spec: {type: shell, program: sleep, args: ["2"], allowed_programs: [sleep]}
`
}

// checkSessionSurvivesAKill runs chatJob on the agent a, kills the engine
// with SIGKILL in the pause after the first iteration and starts another:
// the run finishes, and the third request the model sees carries the
// first iteration's prompt and answer.
func checkSessionSurvivesAKill(t *testing.T, a exampleAgent, srv scriptedServer, provider, model string) {
	t.Helper()
	p := testkit.NewProject(t)
	p.Env = append(p.Env, a.env...)
	args := ""
	if len(a.args) > 0 {
		quoted := make([]string, 0, len(a.args))
		for _, arg := range a.args {
			quoted = append(quoted, fmt.Sprintf("%q", arg))
		}
		args = "  args: [" + strings.Join(quoted, ", ") + "]\n"
	}
	p.WriteFile(".orbit/executors/"+a.executor+".yaml", "schemaVersion: 2\nkind: Executor\nmetadata: {name: "+a.executor+"}\nspec:\n  command: "+a.bin+"\n"+args+"  output: "+a.command+"\n")
	p.WriteFile(".orbit/jobs/chat.yaml", chatJob(provider, a.executor, model))

	engine := serve(t, p)
	runID := runJob(t, p, "chat", "--detach")
	waitFor(t, "the first iteration's session", func() bool {
		return len(runEvents(t, p, runID, "--type", events.AgentSession)) == 1
	})
	killEngine(t, engine)
	serve(t, p)
	waitFor(t, "the run to finish", func() bool { return events.Terminal(runView(t, p, runID).State) })
	require.Equal(t, events.StateSuccess, runView(t, p, runID).State)

	sessions := runEvents(t, p, runID, "--type", events.AgentSession)
	require.Len(t, sessions, 3)
	var first events.AgentSessionData
	require.NoError(t, sessions[0].Decode(&first))
	assert.NotEmpty(t, first.CLISession)
	started := runEvents(t, p, runID, "--type", events.CLIInvocationStarted)
	require.Len(t, started, 3, "no iteration's agent ran twice")
	var second events.CLIInvocationStartedData
	require.NoError(t, started[1].Decode(&second))
	assert.Contains(t, strings.Join(second.Args, " "), first.CLISession, "the restarted engine continued the session the log names")
	reqs := srv.Scripted()
	require.Len(t, reqs, 3)
	for _, want := range []string{"the word is word-1", "noted word-1", "noted word-2", "the word is word-3"} {
		assert.Contains(t, string(reqs[2].Raw), want, "the third request carries the conversation")
	}
}

func sessionTurns() []testkit.Turn {
	return []testkit.Turn{{Text: "noted word-1"}, {Text: "noted word-2"}, {Text: "noted word-3"}}
}

// TestClaudeCodeSessionSurvivesAKilledEngine: a Claude Code session
// continued across a loop's iterations is continued after the engine is
// killed between them.
func TestClaudeCodeSessionSurvivesAKilledEngine(t *testing.T) {
	t.Parallel()
	srv := testkit.NewAnthropicServer(t, sessionTurns()...)
	checkSessionSurvivesAKill(t, exampleAgent{executor: "claude_code", command: "claude_code", bin: testkit.ClaudeCLI(t),
		env: testkit.ClaudeEnv(t, srv)}, srv, "claude", "claude-orbit-test")
}

// TestCodexThreadSurvivesAKilledEngine is the Claude Code test for Codex.
func TestCodexThreadSurvivesAKilledEngine(t *testing.T) {
	t.Parallel()
	srv := testkit.NewOpenAIServer(t, sessionTurns()...)
	checkSessionSurvivesAKill(t, exampleAgent{executor: "codex", command: "codex", bin: testkit.CodexCLI(t),
		args: testkit.CodexProviderArgs(srv), env: testkit.CodexEnv(t)}, srv, "codex", "gpt-orbit-test")
}
