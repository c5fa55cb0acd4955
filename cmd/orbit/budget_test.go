package main_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
	"github.com/orbitrun/orbit/projector"
)

// budgetFixture is two turns of one agent step, a tool call that spends
// 600 tokens then an answer that spends 400, and a one-turn answer of 100
// for a second step.
const budgetFixture = `[
  {"content": [{"kind": "tool_use", "id": "l1", "name": "fs.list", "input": {"path": "."}}], "stop_reason": "tool_use",
   "usage": {"input_tokens": 500, "output_tokens": 100}},
  {"content": [{"kind": "text", "text": "done"}], "stop_reason": "end_turn",
   "usage": {"input_tokens": 300, "output_tokens": 100}},
  {"content": [{"kind": "text", "text": "also done"}], "stop_reason": "end_turn",
   "usage": {"input_tokens": 90, "output_tokens": 10}}
]`

func budgetJob(name string, maxTokens string) string {
	return `
schemaVersion: 2
kind: Job
metadata: {name: ` + name + `}
spec:
  budget: {max_tokens: ` + maxTokens + `}
  steps:
    - id: first
      spec: {type: agent_loop, provider: claude, tools: [fs.list]}
    - id: second
      spec: {type: agent_loop, provider: claude, tools: [fs.list]}
`
}

// TestARunThatSpendsItsBudgetEndsBudgetExhausted: through the binary, with
// the replay provider's recorded usage. A budget the first step spends in
// full stops the run before the second (the interpreter's recorded
// decision); a budget spent by the first turn stops the agent before its
// second turn. Either run ends budget_exhausted with exit 1, and a replay
// of the log rebuilds the same views.
func TestARunThatSpendsItsBudgetEndsBudgetExhausted(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	p.Env = append(p.Env, "ORBIT_REPLAY_FIXTURE="+p.WriteFile("fixture.json", budgetFixture))
	p.WriteFile(".orbit/jobs/between_steps.yaml", budgetJob("between_steps", "1000"))
	p.WriteFile(".orbit/jobs/between_turns.yaml", budgetJob("between_turns", "500"))
	p.WriteFile(".orbit/jobs/enough.yaml", budgetJob("enough", "5000"))

	r := p.Orbit("job", "run", "between_steps")
	require.Equal(t, 1, r.Code, r.String())
	assert.Contains(t, r.Stderr, "budget_exhausted")
	assert.Contains(t, r.Stderr, "budget spent before step second: 1000 tokens of max_tokens 1000")
	id := strings.TrimSpace(r.Stdout)
	decided := runEvents(t, p, id, "--type", events.RunBudgetExhausted)
	require.Len(t, decided, 1, "one recorded decision")
	assert.Equal(t, events.DecisionID(events.RunBudgetExhausted, id, "second"), decided[0].ID, "a derived id")
	assert.Len(t, runEvents(t, p, id, "--type", events.AgentTurn), 2, "the second step never asked the model")
	finished := runEvents(t, p, id, "--type", events.RunFinished)
	require.Len(t, finished, 1)
	var fin events.RunFinishedData
	require.NoError(t, finished[0].Decode(&fin))
	assert.Equal(t, events.StateBudgetExhausted, fin.State)
	show := p.Orbit("run", "show", id)
	require.Equal(t, 0, show.Code, show.String())
	assert.Contains(t, show.Stdout, events.StateBudgetExhausted)

	r = p.Orbit("job", "run", "between_turns")
	require.Equal(t, 1, r.Code, r.String())
	assert.Contains(t, r.Stderr, "first: budget exhausted: 600 tokens spent of max_tokens 500")
	id = strings.TrimSpace(r.Stdout)
	assert.Len(t, runEvents(t, p, id, "--type", events.AgentTurn), 1, "the agent was stopped before its second turn")
	steps := runEvents(t, p, id, "--type", events.StepFinished)
	require.Len(t, steps, 1)
	var st events.StepFinishedData
	require.NoError(t, steps[0].Decode(&st))
	assert.Equal(t, events.StateBudgetExhausted, st.State)
	assert.Equal(t, 1, st.Attempt, "not retried")

	r = p.Orbit("job", "run", "enough")
	require.Equal(t, 0, r.Code, r.String())

	v := p.Orbit("replay", "--verify")
	require.Equal(t, 0, v.Code, v.String())
}

// budgetPlan is a two-checkpoint plan with a task budget of maxTokens.
func budgetPlan(maxTokens string) string {
	return `budget: {max_tokens: ` + maxTokens + `}
checkpoints:
  - id: greet
    spec: Add greet.sh, which prints "hello, <name>" for its first argument.
    success_criteria:
      - {kind: command, command: "test \"$(sh greet.sh world)\" = 'hello, world'"}
  - id: test
    spec: Add test.sh, which checks greet.sh's output.
    success_criteria:
      - {kind: command, command: "sh test.sh"}
`
}

// groundhogBudgetFixture: greet done in one turn of 1000 tokens; a first
// attempt at test (600 tokens) whose test.sh the verifier refutes; a second
// that passes.
const groundhogBudgetFixture = `{"turns": [
  {"content": [
    {"kind": "tool_use", "id": "g", "name": "fs.write", "input": {"path": "greet.sh", "content": "printf 'hello, %s\\n' \"$1\"\n"}},
    {"kind": "tool_use", "id": "gd", "name": "orbit.groundhog.checkpoint_success", "input": {"summary": "Add greet.sh"}}
  ], "stop_reason": "tool_use", "usage": {"input_tokens": 800, "output_tokens": 200}},
  {"content": [
    {"kind": "tool_use", "id": "t1", "name": "fs.write", "input": {"path": "test.sh", "content": "[ \"$(sh greet.sh world)\" = 'Hello, world' ]\n"}},
    {"kind": "tool_use", "id": "td1", "name": "orbit.groundhog.checkpoint_success", "input": {"summary": "Add test.sh"}}
  ], "stop_reason": "tool_use", "usage": {"input_tokens": 500, "output_tokens": 100}},
  {"content": [
    {"kind": "tool_use", "id": "t2", "name": "fs.write", "input": {"path": "test.sh", "content": "[ \"$(sh greet.sh world)\" = 'hello, world' ]\n"}},
    {"kind": "tool_use", "id": "td2", "name": "orbit.groundhog.checkpoint_success", "input": {"summary": "Add test.sh"}}
  ], "stop_reason": "tool_use", "usage": {"input_tokens": 90, "output_tokens": 10}}
]}`

// TestAGroundhogTaskStopsWhenItsBudgetIsSpentAndContinuesWhenRaised: the
// first attempt at the second checkpoint brings the task past its budget;
// the task stops before the next attempt as budget_exhausted (exit 1) with
// the first checkpoint's commit kept. A new plan version with a higher
// budget lets groundhog run continue it: the next attempt runs and
// commits, the earlier commit unchanged, and the log verifies.
func TestAGroundhogTaskStopsWhenItsBudgetIsSpentAndContinuesWhenRaised(t *testing.T) {
	t.Parallel()
	p, repo, task := groundhogProject(t, groundhogBudgetFixture, budgetPlan("1500"))

	r := p.Orbit("groundhog", "run", task)
	require.Equal(t, 1, r.Code, r.String())
	assert.Contains(t, r.Stderr, "budget_exhausted")
	assert.Contains(t, r.Stderr, "budget spent before checkpoint test: 1600 tokens of max_tokens 1500")
	resume := p.Orbit("run", "resume", strings.TrimSpace(r.Stdout), "--max-tokens", "5000")
	assert.Equal(t, 2, resume.Code, "a Groundhog run's budget is its task's: "+resume.String())
	assert.Contains(t, resume.Stderr, "orbit task plan "+task+" --file FILE")
	assert.Equal(t, "Add greet.sh\ninitial", testkit.Git(t, repo, "log", "--format=%s", "main"))
	greetSHA := testkit.Git(t, repo, "rev-parse", "main~0")
	assert.Equal(t, events.TaskBudgetExhausted, taskStatus(t, p, task))

	r = p.Orbit("groundhog", "run", task)
	require.Equal(t, 1, r.Code, "the same budget stays spent: "+r.String())
	assert.Equal(t, "Add greet.sh\ninitial", testkit.Git(t, repo, "log", "--format=%s", "main"), "no attempt ran")

	r = p.Orbit("task", "plan", task, "--file", p.WriteFile("plan2.yaml", budgetPlan("5000")))
	require.Equal(t, 0, r.Code, r.String())
	r = p.Orbit("groundhog", "run", task)
	require.Equal(t, 0, r.Code, r.String())
	assert.Equal(t, "Add test.sh\nAdd greet.sh\ninitial", testkit.Git(t, repo, "log", "--format=%s", "main"))
	assert.Equal(t, greetSHA, testkit.Git(t, repo, "rev-parse", "main~1"), "the earlier commit is kept")
	assert.Equal(t, events.TaskDone, taskStatus(t, p, task))

	r = p.Orbit("groundhog", "verify", task)
	assert.Equal(t, 0, r.Code, r.String())
	r = p.Orbit("replay", "--verify")
	assert.Equal(t, 0, r.Code, r.String())
}

func taskStatus(t *testing.T, p *testkit.Project, task string) string {
	t.Helper()
	tv := orbitJSON[projector.TaskView](t, p, "task", "show", task, "--json")
	return tv.Status
}

// TestABudgetDecisionSurvivesACrash: the engine dies right after recording
// that the budget is spent; the engine that resumes the run reads the
// decision back (no second one), and the run ends budget_exhausted.
func TestABudgetDecisionSurvivesACrash(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	p.Env = append(p.Env, "ORBIT_REPLAY_FIXTURE="+p.WriteFile("fixture.json", budgetFixture))
	p.WriteFile(".orbit/jobs/between_steps.yaml", budgetJob("between_steps", "1000"))
	died := serveToFailpoint(t, p, "interpreter-after-budget-decision")
	id := runJob(t, p, "between_steps", "--detach")
	died()

	serve(t, p)
	waitWithin(t, "the run to end", time.Minute, 100*time.Millisecond, func() bool { return terminal(p, id) })
	assert.Len(t, runEvents(t, p, id, "--type", events.RunResumed), 1, "another engine finished the run")
	v := runView(t, p, id)
	assert.Equal(t, events.StateBudgetExhausted, v.State)
	assert.Len(t, runEvents(t, p, id, "--type", events.RunBudgetExhausted), 1, "read back, not decided again")
	assert.Len(t, runEvents(t, p, id, "--type", events.AgentTurn), 2)
	require.Equal(t, 0, p.Orbit("replay", "--verify").Code)
}
