package main_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

// resumeJob is two agent steps over the HTTP loop (Anthropic's API, here
// the scripted server) under a budget of 500 tokens.
const resumeJob = `
schemaVersion: 2
kind: Job
metadata: {name: resumable}
spec:
  budget: {max_tokens: 500}
  steps:
    - id: first
      default_input: {prompt: "List the files."}
      spec: {type: agent_loop, provider: claude, model: claude-sonnet-4-5, tools: [fs.list]}
    - id: second
      default_input: {prompt: "Say done."}
      spec: {type: agent_loop, provider: claude, model: claude-sonnet-4-5, tools: [fs.list]}
`

// resumeTurns: the first step's first turn spends 600 tokens on a tool
// call, past the budget, so the session stops before asking again; after
// the raise, the first step's new attempt answers (100 tokens) and so does
// the second step (100).
func resumeTurns() []testkit.Turn {
	return []testkit.Turn{
		{Tools: []testkit.ToolUse{{ID: "toolu_ls", Name: "fs_list", Input: map[string]any{"path": "."}}}, InputTokens: 500, OutputTokens: 100},
		{Text: "the files are listed", InputTokens: 80, OutputTokens: 20},
		{Text: "done", InputTokens: 90, OutputTokens: 10},
	}
}

func resumeProject(t *testing.T) (*testkit.Project, *testkit.AnthropicServer) {
	t.Helper()
	srv := testkit.NewAnthropicServer(t, resumeTurns()...)
	p := testkit.NewProject(t)
	p.Env = append(p.Env, "ANTHROPIC_BASE_URL="+srv.URL(), "ANTHROPIC_API_KEY=sk-ant-orbit-test")
	p.WriteFile(".orbit/jobs/resumable.yaml", resumeJob)
	return p, srv
}

// stepAttempts returns the state of each step.finished of a run, by step
// key, in log order.
func stepAttempts(t *testing.T, p *testkit.Project, id string) map[string][]string {
	t.Helper()
	got := map[string][]string{}
	for _, ev := range runEvents(t, p, id, "--type", events.StepFinished) {
		var d events.StepFinishedData
		require.NoError(t, ev.Decode(&d))
		got[ev.StepKey] = append(got[ev.StepKey], d.State)
	}
	return got
}

// TestARunStoppedByItsBudgetIsResumedAfterARaise: through the binary and
// the HTTP loop against the scripted Anthropic server. The budget stops
// the first step between its turns and the run ends budget_exhausted;
// orbit run resume with a higher max_tokens records the raise, and the
// same run goes on: the first step runs again as attempt 2, the second
// runs, the run ends success (exit 0), and the views rebuild the same.
func TestARunStoppedByItsBudgetIsResumedAfterARaise(t *testing.T) {
	t.Parallel()
	p, srv := resumeProject(t)

	r := p.Orbit("job", "run", "resumable")
	require.Equal(t, 1, r.Code, r.String())
	assert.Contains(t, r.Stderr, "budget_exhausted")
	id := strings.TrimSpace(r.Stdout)
	assert.Equal(t, map[string][]string{"first": {events.StateBudgetExhausted}}, stepAttempts(t, p, id))

	r = p.Orbit("run", "resume", id, "--max-tokens", "5000")
	require.Equal(t, 0, r.Code, r.String())
	assert.Equal(t, id, strings.TrimSpace(r.Stdout))
	assert.Contains(t, r.Stderr, "budget raised to max_tokens 5000")
	assert.Regexp(t, `(?m)^run `+id+` resumed after budget raise 1 by engine \S+, which ran it before$`, r.Stderr, "the engine that ran it resumed it")
	assert.Len(t, srv.Scripted(), 3, "every scripted turn was asked for, once")
	assert.Equal(t, map[string][]string{
		"first":  {events.StateBudgetExhausted, events.StateSuccess},
		"second": {events.StateSuccess},
	}, stepAttempts(t, p, id))

	raised := runEvents(t, p, id, "--type", events.RunBudgetRaised)
	require.Len(t, raised, 1)
	assert.Equal(t, events.RunBudgetRaisedID(id, 1), raised[0].ID)
	var d events.RunBudgetRaisedData
	require.NoError(t, raised[0].Decode(&d))
	assert.Equal(t, events.RunBudgetRaisedData{Raise: 1, MaxTokens: 5000, Tokens: 600, Requester: d.Requester,
		Signer: &events.Signer{Identity: events.IdentityClient, Key: clientKey(t, p)}}, d, "the raise records the client that signed it")
	finished := runEvents(t, p, id, "--type", events.RunFinished)
	require.Len(t, finished, 2, "the run ended twice")
	assert.Equal(t, events.RunFinishedID(id, 1), finished[1].ID)

	v := runView(t, p, id)
	assert.Equal(t, events.StateSuccess, v.State)
	require.Len(t, v.BudgetRaises, 1)
	assert.Equal(t, int64(5000), v.BudgetRaises[0].MaxTokens)
	show := p.Orbit("run", "show", id)
	require.Equal(t, 0, show.Code, show.String())
	assert.Contains(t, show.Stdout, "raised to max_tokens 5000 after 600 tokens")
	trace := p.Orbit("run", "trace", id)
	require.Equal(t, 0, trace.Code, trace.String())
	assert.Contains(t, trace.Stdout, events.RunBudgetRaised)
	assert.Contains(t, trace.Stdout, "raised to max_tokens 5000")

	r = p.Orbit("run", "resume", id, "--max-tokens", "9000")
	assert.Equal(t, 2, r.Code, "a run that is not budget_exhausted: "+r.String())
	assert.Contains(t, r.Stderr, "not budget_exhausted")

	v2 := p.Orbit("replay", "--verify")
	require.Equal(t, 0, v2.Code, v2.String())
}

// TestARaiseIsRefusedUnlessItLetsTheRunGoOn: a bound not above what the
// run spent, a raise with no bound, an unknown run: exit 2 and nothing
// recorded.
func TestARaiseIsRefusedUnlessItLetsTheRunGoOn(t *testing.T) {
	t.Parallel()
	p, _ := resumeProject(t)
	r := p.Orbit("job", "run", "resumable")
	require.Equal(t, 1, r.Code, r.String())
	id := strings.TrimSpace(r.Stdout)

	for _, tc := range []struct {
		name string
		args []string
		says string
	}{
		{"not above the spending", []string{"run", "resume", id, "--max-tokens", "600"}, "has spent 600 tokens: a max_tokens of 600 is not above that"},
		{"no bound", []string{"run", "resume", id}, "needs --max-tokens or --max-cost-usd"},
		{"cost only, tokens still spent", []string{"run", "resume", id, "--max-cost-usd", "5"}, "would stop again at once"},
		{"unknown run", []string{"run", "resume", "R-nope", "--max-tokens", "5000"}, "no run R-nope"},
		{"cost NaN", []string{"run", "resume", id, "--max-cost-usd", "NaN"}, "--max-cost-usd: want a number of dollars ≥ 0, not NaN"},
		{"cost Inf", []string{"run", "resume", id, "--max-cost-usd", "Inf"}, "--max-cost-usd: want a number of dollars ≥ 0, not +Inf"},
		{"cost below zero", []string{"run", "resume", id, "--max-cost-usd", "-1"}, "--max-cost-usd: want a number of dollars ≥ 0, not -1"},
		{"tokens below zero", []string{"run", "resume", id, "--max-tokens", "-5"}, "--max-tokens: want a whole number ≥ 0, not -5"},
	} {
		r := p.Orbit(tc.args...)
		assert.Equal(t, 2, r.Code, "%s: %s", tc.name, r.String())
		assert.Contains(t, r.Stderr, tc.says, tc.name)
	}
	assert.Empty(t, runEvents(t, p, id, "--type", events.RunBudgetRaised), "nothing recorded")
	assert.Equal(t, events.StateBudgetExhausted, runView(t, p, id).State)
}

// TestARaiseSurvivesAKillOfTheEngine: the engine is killed (SIGKILL) right
// after it records the raise, before any engine acts on it; the engine
// started next finds the run live again and finishes it.
func TestARaiseSurvivesAKillOfTheEngine(t *testing.T) {
	t.Parallel()
	p, _ := resumeProject(t)
	died := serveToFailpoint(t, p, "resume-after-raise")
	r := p.Orbit("job", "run", "resumable")
	require.Equal(t, 1, r.Code, r.String())
	id := strings.TrimSpace(r.Stdout)

	r = p.Orbit("run", "resume", id, "--max-tokens", "5000", "--detach")
	assert.NotEqual(t, 0, r.Code, "the engine died before it answered: "+r.String())
	died()

	serve(t, p)
	waitWithin(t, "the resumed run to end", time.Minute, 100*time.Millisecond, func() bool {
		return len(runEvents(t, p, id, "--type", events.RunFinished)) >= 2
	})
	assert.Len(t, runEvents(t, p, id, "--type", events.RunBudgetRaised), 1)
	assert.Equal(t, events.StateSuccess, runView(t, p, id).State)
	assert.Equal(t, map[string][]string{
		"first":  {events.StateBudgetExhausted, events.StateSuccess},
		"second": {events.StateSuccess},
	}, stepAttempts(t, p, id))
	require.Equal(t, 0, p.Orbit("replay", "--verify").Code)
}

// TestARunStoppedBeforeAStepIsResumed: the interpreter's recorded decision
// stopped the run before its second step (replay provider, budgetFixture);
// after a raise, the decision taken under the old budget no longer holds,
// the second step runs, and the first keeps its one attempt.
func TestARunStoppedBeforeAStepIsResumed(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	p.Env = append(p.Env, "ORBIT_REPLAY_FIXTURE="+p.WriteFile("fixture.json", budgetFixture))
	p.WriteFile(".orbit/jobs/between_steps.yaml", budgetJob("between_steps", "1000"))
	r := p.Orbit("job", "run", "between_steps")
	require.Equal(t, 1, r.Code, r.String())
	id := strings.TrimSpace(r.Stdout)

	r = p.Orbit("run", "resume", id, "--max-tokens", "1200")
	require.Equal(t, 0, r.Code, r.String())
	assert.Equal(t, map[string][]string{
		"first":  {events.StateSuccess},
		"second": {events.StateSuccess},
	}, stepAttempts(t, p, id))
	decided := runEvents(t, p, id, "--type", events.RunBudgetExhausted)
	require.Len(t, decided, 1, "no decision under the raised budget")
	assert.Equal(t, events.StateSuccess, runView(t, p, id).State)
	require.Equal(t, 0, p.Orbit("replay", "--verify").Code)
}

// TestAParallelStepStoppedByItsBudgetRunsItsBranchesAgain: the budget stops
// the agent branch of a parallel step; after the raise the parallel step
// runs again as attempt 2, every branch afresh under checks@2/ (the record
// of attempt 1 stays whole), and the run succeeds.
func TestAParallelStepStoppedByItsBudgetRunsItsBranchesAgain(t *testing.T) {
	t.Parallel()
	srv := testkit.NewAnthropicServer(t, resumeTurns()[:2]...)
	p := testkit.NewProject(t)
	p.Env = append(p.Env, "ANTHROPIC_BASE_URL="+srv.URL(), "ANTHROPIC_API_KEY=sk-ant-orbit-test")
	p.WriteFile(".orbit/jobs/checks.yaml", `
schemaVersion: 2
kind: Job
metadata: {name: checks}
spec:
  budget: {max_tokens: 500}
  steps:
    - id: checks
      parallel:
        branches:
          - id: lint
            spec: {type: shell, program: sh, args: ["-c", "echo lint"], allowed_programs: [sh]}
          - id: agent
            default_input: {prompt: "List the files."}
            spec: {type: agent_loop, provider: claude, model: claude-sonnet-4-5, tools: [fs.list]}
`)
	r := p.Orbit("job", "run", "checks")
	require.Equal(t, 1, r.Code, r.String())
	id := strings.TrimSpace(r.Stdout)

	r = p.Orbit("run", "resume", id, "--max-tokens", "5000")
	require.Equal(t, 0, r.Code, r.String())
	assert.Equal(t, map[string][]string{
		"checks/lint":    {events.StateSuccess},
		"checks/agent":   {events.StateBudgetExhausted},
		"checks":         {events.StateBudgetExhausted, events.StateSuccess},
		"checks@2/lint":  {events.StateSuccess},
		"checks@2/agent": {events.StateSuccess},
	}, stepAttempts(t, p, id))
	require.Equal(t, 0, p.Orbit("replay", "--verify").Code)
}
