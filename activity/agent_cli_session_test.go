package activity_test

import (
	"fmt"
	"strings"
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
	setCLIAgent(&job.Spec.Steps[0].Loop.Steps[0], a)
	return job
}

// setCLIAgent puts step's agent_loop on the agent a's executor, on the
// cli backend.
func setCLIAgent(step *assets.Step, a cliAgent) {
	spec := step.Activity
	spec.Backend, spec.Executor, spec.Provider, spec.Model = assets.BackendCLI, a.executor, a.provider, a.model
	es := a.spec
	es.Env = envMap(a.env)
	spec.ExecutorSpec = &es
}

// sessionStepsJob is three steps, one after the other and not in a loop,
// each an agent_loop bound to session chat on an agent of its own
// (agents[i]; nil: over HTTP, on the engine's provider), saying its own
// word.
func sessionStepsJob(t *testing.T, name string, agents ...*cliAgent) *assets.Job {
	t.Helper()
	var b strings.Builder
	for i := range agents {
		fmt.Fprintf(&b, `
    - id: step%[1]d
      session: chat
      default_input: {prompt: "Step %[1]d: the word is word-%[1]d."}
      spec:
        type: agent_loop
        provider: claude
        model: m
        instruction: "You remember words."
        tools: [fs.write]
        wall_clock_timeout_seconds: 60
`, i+1)
	}
	job := runrig.ParseJob(t, "schemaVersion: 2\nkind: Job\nmetadata: {name: "+name+"}\nspec:\n  steps:"+b.String())
	for i, a := range agents {
		if a != nil {
			setCLIAgent(&job.Spec.Steps[i], *a)
		}
	}
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

// TestCLISessionContinues: a step bound to session chat, run three
// times, continues one Claude Code session or one Codex thread, whether
// the three are a loop's iterations or three steps (not a loop) that name
// the same session.
func TestCLISessionContinues(t *testing.T) {
	t.Parallel()
	agents := map[string]struct {
		start      func(t *testing.T) (*cliAgent, scriptedServer)
		resumeFlag string
	}{
		"claude_code": {func(t *testing.T) (*cliAgent, scriptedServer) {
			srv := testkit.NewAnthropicServer(t, sessionTurns()...)
			return claudeAgent(t, srv), srv
		}, "--resume"},
		"codex": {func(t *testing.T) (*cliAgent, scriptedServer) {
			srv := testkit.NewOpenAIServer(t, sessionTurns()...)
			return codexAgent(t, srv), srv
		}, "fork"},
	}
	jobs := map[string]func(t *testing.T, a *cliAgent) *assets.Job{
		"across loop iterations": func(t *testing.T, a *cliAgent) *assets.Job { return sessionLoopJob(t, *a) },
		"across steps":           func(t *testing.T, a *cliAgent) *assets.Job { return sessionStepsJob(t, a.job, a, a, a) },
	}
	for name, ag := range agents {
		for across, job := range jobs {
			t.Run(name+" "+across, func(t *testing.T) {
				t.Parallel()
				log, _ := cliEngine(t)
				a, srv := ag.start(t)
				a.job = name + "_session"
				runID, fin := runrig.RunJob(t, log, job(t, a), nil)
				checkSessionContinued(t, log, srv, runID, fin, ag.resumeFlag)
			})
		}
	}
}

// TestASessionIsContinuedOnlyByTheAgentThatKeepsIt: where a CLI cannot
// continue a session, because another agent keeps it (the other CLI, or
// the HTTP loop, whose transcript is in the log and not the CLI's), the
// step that would continue it fails as a validation error that says which
// and why, before any agent starts; the first step's session is on record.
func TestASessionIsContinuedOnlyByTheAgentThatKeepsIt(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		first, second func(t *testing.T) *cliAgent
		want          string
	}{
		"claude_code, then codex": {
			first: func(t *testing.T) *cliAgent {
				return claudeAgent(t, testkit.NewAnthropicServer(t, sessionTurns()...))
			},
			second: func(t *testing.T) *cliAgent { return codexAgent(t, testkit.NewOpenAIServer(t)) },
			want:   "session chat was last continued by claude_code: codex cannot continue it",
		},
		"codex, then claude_code": {
			first: func(t *testing.T) *cliAgent {
				return codexAgent(t, testkit.NewOpenAIServer(t, sessionTurns()...))
			},
			second: func(t *testing.T) *cliAgent { return claudeAgent(t, testkit.NewAnthropicServer(t)) },
			want:   "session chat was last continued by codex: claude_code cannot continue it",
		},
		"claude_code, then HTTP": {
			first: func(t *testing.T) *cliAgent {
				return claudeAgent(t, testkit.NewAnthropicServer(t, sessionTurns()...))
			},
			second: func(*testing.T) *cliAgent { return nil },
			want:   "session chat was last continued by a CLI agent (claude_code), which keeps its own transcript: an agent_loop over HTTP cannot continue it",
		},
		"HTTP, then codex": {
			first:  func(*testing.T) *cliAgent { return nil },
			second: func(t *testing.T) *cliAgent { return codexAgent(t, testkit.NewOpenAIServer(t)) },
			want:   "session chat was last continued by an agent_loop over HTTP: codex cannot continue it",
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			log := testkit.StartLog(t, events.Config{})
			fixture := writeFixture(t, t.TempDir(), "chat.json", `[{"content": [{"kind": "text", "text": "noted word-1"}], "stop_reason": "end_turn"}]`)
			agentEngine(t, log, t.TempDir(), map[string]string{"ORBIT_REPLAY_FIXTURE": fixture})
			first := c.first(t)
			runID, fin := runrig.RunJob(t, log, sessionStepsJob(t, "mixed", first, c.second(t)), nil)

			require.Equal(t, events.StateFailed, fin.State)
			require.NotNil(t, fin.Error)
			assert.Equal(t, events.KindValidation, fin.Error.Kind)
			assert.Contains(t, fin.Error.Message, c.want)
			evs := runrig.History(t, log, runID)
			sessions := runrig.DecodeAll[events.AgentSessionData](t, runrig.OfType(evs, events.AgentSession))
			require.Len(t, sessions, 1, "the first step's session only")
			assert.Equal(t, "chat", sessions[0].Session)
			clis := 0
			if first != nil {
				clis = 1
			}
			assert.Len(t, runrig.OfType(evs, events.CLIInvocationStarted), clis, "the second step's agent never started")
		})
	}
}
