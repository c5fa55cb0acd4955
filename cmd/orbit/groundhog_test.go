package main_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/sandbox"
	"github.com/orbitrun/orbit/internal/testkit"
	"github.com/orbitrun/orbit/projector"
)

// groundhogProject is a project whose engines replay fixture and run git
// isolated from this machine's configuration, with a task on a fresh
// repository.
func groundhogProject(t *testing.T, fixture, plan string) (p *testkit.Project, repo, task string) {
	t.Helper()
	p = testkit.NewProject(t)
	p.Env = append(p.Env, testkit.GitEnv()...)
	p.Env = append(p.Env, "ORBIT_REPLAY_FIXTURE="+p.WriteFile("fixture.json", fixture))
	repo = testkit.NewGitRepo(t, map[string]string{"README.md": "# greeter\n"})
	r := p.Orbit("task", "create", "--title", "Greeter", "--plan", p.WriteFile("plan.yaml", plan), "--workspace", repo)
	require.Equal(t, 0, r.Code, r.String())
	return p, repo, strings.TrimSpace(r.Stdout)
}

func readExample(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testkit.ModuleRoot(t), "examples", "groundhog", name))
	require.NoError(t, err)
	return string(data)
}

// TestGroundhogThroughTheBinary runs the demo plan with the built binary:
// task create, groundhog run, show (chronicle, memory, audit JSON), verify.
func TestGroundhogThroughTheBinary(t *testing.T) {
	t.Parallel()
	p, repo, task := groundhogProject(t, readExample(t, "fixture.json"), readExample(t, "plan.yaml"))
	assert.Equal(t, "T-1", task)

	r := p.Orbit("groundhog", "run", task)
	require.Equal(t, 0, r.Code, r.String())
	assert.Contains(t, r.Stderr, "success")
	assert.Equal(t, "Add test.sh, which checks greet.sh's output and says what it expected\nAdd greet.sh, which prints \"hello, <name>\" for its first argument\ninitial",
		testkit.Git(t, repo, "log", "--format=%s", "main"))
	assert.Equal(t, "main", testkit.Git(t, repo, "branch", "--show-current"))

	r = p.Orbit("groundhog", "show", task)
	require.Equal(t, 0, r.Code, r.String())
	for _, want := range []string{"checkpoint greet: committed", "attempt 1 (day 2) on groundhog/T-1/day-2", "verifier failed",
		"fail    command", "rewound; work kept on groundhog/T-1/day-2", "attempt 2 (day 3)", "grounding: 2 records"} {
		assert.Contains(t, r.Stdout, want)
	}

	r = p.Orbit("groundhog", "show", task, "--memory", "--json")
	require.Equal(t, 0, r.Code, r.String())
	var mem projector.GroundhogMemory
	require.NoError(t, json.Unmarshal([]byte(r.Stdout), &mem))
	require.Len(t, mem.Checkpoints, 2)
	assert.Equal(t, "greet", mem.Checkpoints[0].ID)
	assert.Nil(t, mem.Active)
	assert.NotContains(t, r.Stdout, "fs.write", "memory holds no tool calls")

	audit := orbitJSON[projector.GroundhogRun](t, p, "groundhog", "show", task, "--audit", "--json")
	require.Len(t, audit.Checkpoints, 2)
	require.Len(t, audit.Checkpoints[1].Attempts, 2)
	assert.NotEmpty(t, audit.Checkpoints[1].Attempts[0].ToolCalls)
	require.Len(t, audit.Checkpoints[1].Attempts[0].Verifications, 1)
	if ok, _ := sandbox.Available(); ok {
		for _, res := range audit.Checkpoints[1].Attempts[0].Verifications[0].Results {
			if res.Kind == "command" {
				assert.Equal(t, sandbox.ModeMountNamespace, res.Sandbox, "the verifier's command ran in the agent's sandbox")
			}
		}
	}

	r = p.Orbit("groundhog", "verify", task)
	assert.Equal(t, 0, r.Code, r.String())
	assert.Contains(t, r.Stdout, "2 commits, verified")

	tv := orbitJSON[projector.TaskView](t, p, "task", "show", task, "--json")
	assert.Equal(t, events.TaskDone, tv.Status)

	// A new plan version; the verifier of the audit still holds.
	r = p.Orbit("task", "plan", task, "--file", p.WriteFile("plan2.yaml", readExample(t, "plan.yaml")+"\n# v2\n"))
	require.Equal(t, 0, r.Code, r.String())
	assert.Contains(t, r.Stdout, "plan version 2")
	assert.Equal(t, 0, p.Orbit("replay", "--verify").Code)
}

func TestTaskCreateRefusesBadInput(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	repo := testkit.NewGitRepo(t, nil)
	bad := p.WriteFile("bad.yaml", "checkpoints:\n  - id: a\n    spec: x\n    success_criteria:\n      - {kind: file_contains, path: a.go, pattern: \"func (\"}\n")
	r := p.Orbit("task", "create", "--title", "x", "--plan", bad, "--workspace", repo)
	assert.Equal(t, 2, r.Code, r.String())
	assert.Contains(t, r.Stderr, "checkpoints[0] (a).success_criteria[0].pattern: invalid RE2")
	good := p.WriteFile("good.yaml", readExample(t, "plan.yaml"))
	r = p.Orbit("task", "create", "--title", "x", "--plan", good, "--workspace", t.TempDir())
	assert.Equal(t, 2, r.Code, r.String())
	assert.Contains(t, r.Stderr, "not a git")
	r = p.Orbit("groundhog", "run", "T-99")
	assert.Equal(t, 2, r.Code, r.String())
}

// sleeperFixture's first turn runs a shell command that, the first time,
// leaves a mark outside the workspace and sleeps: the engine is killed
// during that sleep. Replayed after the restart it returns at once, and the
// second turn finishes the checkpoint.
func sleeperFixture(mark string) string {
	return `{"turns": [
	  {"content": [{"kind": "tool_use", "id": "s1", "name": "shell.exec", "input": {"program": "sh", "args": ["-c", "[ -f ` + mark + ` ] && exit 0; touch ` + mark + `; sleep 30"]}}], "stop_reason": "tool_use"},
	  {"content": [
	    {"kind": "tool_use", "id": "w1", "name": "fs.write", "input": {"path": "greet.sh", "content": "printf 'hello, %s\\n' \"$1\"\n"}},
	    {"kind": "tool_use", "id": "d1", "name": "orbit.groundhog.checkpoint_success", "input": {"summary": "Add greet.sh"}}], "stop_reason": "tool_use"}
	]}`
}

// runUntilTheAgentSleeps runs task detached and waits until its agent,
// replaying sleeperFixture(mark), has started its sleeping command. It
// returns the run's id.
func runUntilTheAgentSleeps(t *testing.T, p *testkit.Project, task, mark string) string {
	t.Helper()
	r := p.Orbit("groundhog", "run", task, "--detach")
	require.Equal(t, 0, r.Code, r.String())
	waitFor(t, "the agent's command to start", func() bool { _, err := os.Stat(mark); return err == nil })
	return strings.TrimSpace(r.Stdout)
}

// aSleepingAttempt makes a Groundhog project of greetPlan whose agent
// replays sleeperFixture, and runs its task until the agent sleeps. It
// returns the project, its repository, the task and the run's id.
func aSleepingAttempt(t *testing.T) (p *testkit.Project, repo, task, runID string) {
	t.Helper()
	mark := filepath.Join(t.TempDir(), "slept")
	p, repo, task = groundhogProject(t, sleeperFixture(mark), greetPlan)
	return p, repo, task, runUntilTheAgentSleeps(t, p, task, mark)
}

// killedMidAttempt is aSleepingAttempt on an engine of the test's own,
// killed with kill -9 while the agent sleeps.
func killedMidAttempt(t *testing.T) (p *testkit.Project, repo, task, runID string) {
	t.Helper()
	mark := filepath.Join(t.TempDir(), "slept")
	p, repo, task = groundhogProject(t, sleeperFixture(mark), greetPlan)
	p.StopEngine()
	e := serve(t, p)
	runID = runUntilTheAgentSleeps(t, p, task, mark)
	killEngine(t, e)
	return p, repo, task, runID
}

const greetPlan = `
checkpoints:
  - id: greet
    spec: Add greet.sh.
    success_criteria:
      - {kind: command, command: "test \"$(sh greet.sh world)\" = 'hello, world'"}
`

func TestGroundhogKilledMidAttempt(t *testing.T) {
	t.Parallel()
	p, repo, task, runID := killedMidAttempt(t)
	assert.True(t, strings.HasPrefix(testkit.Git(t, repo, "branch", "--show-current"), "groundhog/T-1/day-"), "the kill left the workspace on the scratch branch")

	serve(t, p)
	waitFor(t, "the run to finish", func() bool { return events.Terminal(runView(t, p, runID).State) })
	assert.Equal(t, events.StateSuccess, runView(t, p, runID).State)
	r := p.Orbit("groundhog", "verify", task)
	assert.Equal(t, 0, r.Code, r.String())
	r = p.Orbit("groundhog", "show", task)
	assert.Contains(t, r.Stdout, "(day 1) on groundhog/T-1/day-1 from")
	assert.Contains(t, r.Stdout, ": interrupted")
	assert.Equal(t, "Add greet.sh\ninitial", testkit.Git(t, repo, "log", "--format=%s", "main"))
}

func TestGroundhogKilledBetweenVerificationAndCommit(t *testing.T) {
	t.Parallel()
	p, repo, task := groundhogProject(t, `[
	  {"content": [
	    {"kind": "tool_use", "id": "w1", "name": "fs.write", "input": {"path": "greet.sh", "content": "printf 'hello, %s\\n' \"$1\"\n"}},
	    {"kind": "tool_use", "id": "d1", "name": "orbit.groundhog.checkpoint_success", "input": {"summary": "Add greet.sh"}}], "stop_reason": "tool_use"}
	]`, greetPlan)
	p.StopEngine()
	died := serveToFailpoint(t, p, "groundhog-after-verification")
	r := p.Orbit("groundhog", "run", task, "--detach")
	require.Equal(t, 0, r.Code, r.String())
	runID := strings.TrimSpace(r.Stdout)
	died()
	assert.Equal(t, "initial", testkit.Git(t, repo, "log", "--format=%s", "main"), "killed before the commit")

	serve(t, p)
	waitFor(t, "the run to finish", func() bool { return events.Terminal(runView(t, p, runID).State) })
	assert.Equal(t, events.StateSuccess, runView(t, p, runID).State)
	assert.Equal(t, "Add greet.sh\ninitial", testkit.Git(t, repo, "log", "--format=%s", "main"), "the work was committed once")
	r = p.Orbit("groundhog", "verify", task)
	assert.Equal(t, 0, r.Code, r.String())
	r = p.Orbit("groundhog", "show", task, "--audit", "--json")
	var audit projector.GroundhogRun
	require.NoError(t, json.Unmarshal([]byte(r.Stdout), &audit))
	require.Len(t, audit.Checkpoints[0].Attempts, 1, "no second attempt: the verified one was committed")
}
