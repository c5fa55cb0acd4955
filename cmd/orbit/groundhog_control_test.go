package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

// writesActivity is a replay groundhog activity whose turns each write a
// file and claim success; extra is written into its spec.
func writesActivity(p *testkit.Project, name, extra string, files ...string) {
	var turns []string
	for i, f := range files {
		file, content, _ := strings.Cut(f, "=")
		id := string(rune('a' + i))
		turns = append(turns, `{"content": [
	    {"kind": "tool_use", "id": "w`+id+`", "name": "fs.write", "input": {"path": "`+file+`", "content": "`+content+`\n"}},
	    {"kind": "tool_use", "id": "d`+id+`", "name": "orbit.groundhog.checkpoint_success", "input": {"summary": "Write `+file+`: `+content+`"}}], "stop_reason": "tool_use"}`)
	}
	replayActivity(p, name, turns, "  tools: [fs.write]\n"+extra)
}

// replayActivity writes the groundhog activity name on the replay
// provider, with one attempt by default, whose fixture holds turns (each
// a JSON turn); more is the rest of its spec.
func replayActivity(p *testkit.Project, name string, turns []string, more string) {
	fixture := p.WriteFile(name+".json", `{"turns": [`+strings.Join(turns, ",")+`]}`)
	p.WriteFile(".orbit/activities/"+name+".yaml", `schemaVersion: 2
kind: Activity
metadata: {name: `+name+`}
spec:
  type: groundhog
  provider: replay
  fixture: `+fixture+`
  model: replay-fixture
  attempt_budget_default: 1
`+more)
}

func filesPlan(files ...string) string {
	plan := "checkpoints:\n"
	for _, f := range files {
		plan += "  - id: " + strings.TrimSuffix(f, ".txt") + "\n    spec: Write " + f + ".\n    success_criteria:\n      - {kind: file_exists, path: " + f + "}\n"
	}
	return plan
}

func controlProject(t *testing.T, plan string) (p *testkit.Project, repo, task string) {
	t.Helper()
	p = testkit.NewProject(t)
	p.Env = append(p.Env, testkit.GitEnv()...)
	repo = testkit.NewGitRepo(t, map[string]string{"README.md": "# control\n"})
	r := p.Orbit("task", "create", "--title", "Control", "--plan", p.WriteFile("plan.yaml", plan), "--workspace", repo)
	require.Equal(t, 0, r.Code, r.String())
	return p, repo, strings.TrimSpace(r.Stdout)
}

// TestGroundhogApproveThroughTheBinary: an on_approval activity holds its
// checkpoint commits on refs/orbit/groundhog/<task> and leaves main as it
// was; approving after main moved is refused (exit 1, nothing moved);
// once main is back, approve fast-forwards it. verify passes throughout.
func TestGroundhogApproveThroughTheBinary(t *testing.T) {
	t.Parallel()
	p, repo, task := controlProject(t, filesPlan("one.txt", "two.txt"))
	writesActivity(p, "gh_held", "  materialize: on_approval\n", "one.txt=first", "two.txt=second")
	initial := testkit.Git(t, repo, "rev-parse", "main")

	r := p.Orbit("groundhog", "run", task, "--activity", "gh_held")
	require.Equal(t, 0, r.Code, r.String())
	held := "refs/orbit/groundhog/" + task
	assert.Regexp(t, `(?m)^  held +one #1 +[0-9a-f]{12} .*\(on `+held+`, for approval: orbit groundhog approve `+task+`\)$`, r.Stderr)
	assert.NotContains(t, r.Stderr, "committed", "nothing landed on main")
	show := p.Orbit("task", "show", task)
	assert.Regexp(t, `(?m)^Status: +held: every checkpoint is committed, held for approval on `+held+`; orbit groundhog approve `+task+` lands them on main$`, show.Stdout)
	assert.Equal(t, initial, testkit.Git(t, repo, "rev-parse", "main"), "main did not move")
	assert.Equal(t, "main", testkit.Git(t, repo, "branch", "--show-current"))
	assert.Empty(t, testkit.Git(t, repo, "status", "--porcelain"))
	assert.Equal(t, "Write two.txt: second\nWrite one.txt: first\ninitial", testkit.Git(t, repo, "log", "--format=%s", held))
	r = p.Orbit("groundhog", "verify", task)
	assert.Equal(t, 0, r.Code, r.String())
	assert.Contains(t, r.Stdout, "held on "+held)

	testkit.Git(t, repo, "commit", "--quiet", "--allow-empty", "-m", "someone else")
	moved := testkit.Git(t, repo, "rev-parse", "main")
	r = p.Orbit("groundhog", "approve", task)
	assert.Equal(t, 1, r.Code, r.String())
	assert.Contains(t, r.Stderr, "main moved since the held commits were made")
	assert.Contains(t, r.Stderr, "not a fast-forward")
	assert.Equal(t, moved, testkit.Git(t, repo, "rev-parse", "main"))

	testkit.Git(t, repo, "reset", "--quiet", "--hard", initial)
	r = p.Orbit("groundhog", "approve", task)
	require.Equal(t, 0, r.Code, r.String())
	assert.Contains(t, r.Stdout, "fast-forwarded")
	show = p.Orbit("task", "show", task)
	assert.Regexp(t, `(?m)^Status: +done$`, show.Stdout, "approved, the task is done")
	assert.Equal(t, testkit.Git(t, repo, "rev-parse", held), testkit.Git(t, repo, "rev-parse", "main"))
	assert.FileExists(t, filepath.Join(repo, "two.txt"))
	r = p.Orbit("groundhog", "verify", task)
	assert.Equal(t, 0, r.Code, r.String())
	r = p.Orbit("groundhog", "approve", task)
	assert.Equal(t, 0, r.Code, r.String())
	assert.Contains(t, r.Stdout, "nothing is held")
	r = p.Orbit("groundhog", "show", task)
	require.Equal(t, 0, r.Code, r.String())
	assert.Contains(t, r.Stdout, "approved refs/heads/main: "+initial[:12]+" -> ")
	assert.Regexp(t, `approved refs/heads/main: \S+ -> \S+ by cli:\S+, signed by client `+clientKey(t, p)+`\n`, r.Stdout)
	r = p.Orbit("groundhog", "approve", "T-99")
	assert.Equal(t, 2, r.Code, r.String())
	assert.Equal(t, 0, p.Orbit("replay", "--verify").Code)
}

// TestGroundhogRewindThroughTheBinary: three checkpoints committed; rewind
// refuses what it cannot do (exit 2, nothing moved), then takes main back
// to before the second; memory forgets two and three, and the next run
// does them again. verify passes after each.
func TestGroundhogRewindThroughTheBinary(t *testing.T) {
	t.Parallel()
	p, repo, task := controlProject(t, filesPlan("one.txt", "two.txt", "three.txt"))
	writesActivity(p, "gh_direct", "", "one.txt=first", "two.txt=second", "three.txt=third", "two.txt=again", "three.txt=again")
	r := p.Orbit("groundhog", "run", task, "--activity", "gh_direct")
	require.Equal(t, 0, r.Code, r.String())
	first := testkit.Git(t, repo, "rev-parse", "main~2")
	last := testkit.Git(t, repo, "rev-parse", "main")

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--to", "four"}, "the plan has no such checkpoint (it has one, two, three)"},
		{nil, "rewind needs --to <checkpoint>"},
	} {
		r = p.Orbit(append([]string{"groundhog", "rewind", task}, c.args...)...)
		assert.Equal(t, 2, r.Code, r.String())
		assert.Contains(t, r.Stderr, c.want)
	}
	require.NoError(t, os.WriteFile(filepath.Join(repo, "one.txt"), []byte("edited\n"), 0o644))
	r = p.Orbit("groundhog", "rewind", task, "--to", "two")
	assert.Equal(t, 2, r.Code, r.String())
	assert.Contains(t, r.Stderr, "uncommitted changes to 1 tracked file(s): one.txt")
	testkit.Git(t, repo, "checkout", "one.txt")
	assert.Equal(t, last, testkit.Git(t, repo, "rev-parse", "main"), "nothing moved")

	r = p.Orbit("groundhog", "rewind", task, "--to", "two", "--reason", "redo two")
	require.Equal(t, 0, r.Code, r.String())
	assert.Contains(t, r.Stdout, "forgotten: two, three")
	assert.Equal(t, first, testkit.Git(t, repo, "rev-parse", "main"))
	r = p.Orbit("groundhog", "show", task, "--memory")
	require.Equal(t, 0, r.Code, r.String())
	assert.Contains(t, r.Stdout, "Write one.txt: first")
	assert.NotContains(t, r.Stdout, "Write two.txt: second")
	r = p.Orbit("groundhog", "verify", task)
	assert.Equal(t, 0, r.Code, r.String())
	r = p.Orbit("groundhog", "show", task)
	require.Equal(t, 0, r.Code, r.String())
	assert.Contains(t, r.Stdout, "rewound refs/heads/main to before two: "+last[:12]+" -> "+first[:12]+" by cli")
	assert.Regexp(t, `to before two: \S+ -> \S+ by cli:\S+, signed by client `+clientKey(t, p)+`\n`, r.Stdout)
	assert.Contains(t, r.Stdout, "checkpoint two: pending")

	r = p.Orbit("groundhog", "run", task, "--activity", "gh_direct")
	require.Equal(t, 0, r.Code, r.String())
	assert.Equal(t, "Write three.txt: again\nWrite two.txt: again\nWrite one.txt: first\ninitial", testkit.Git(t, repo, "log", "--format=%s", "main"))
	r = p.Orbit("groundhog", "verify", task)
	assert.Equal(t, 0, r.Code, r.String())
	r = p.Orbit("groundhog", "rewind", task, "--to", "one")
	require.Equal(t, 0, r.Code, r.String())
	assert.Equal(t, "initial", testkit.Git(t, repo, "log", "--format=%s", "main"))
	assert.Equal(t, 0, p.Orbit("replay", "--verify").Code)
}

// TestGroundhogControlIsRefusedWhileARunWorks: approve and rewind do not
// touch a workspace a live run works in; they exit 1 naming the run.
func TestGroundhogControlIsRefusedWhileARunWorks(t *testing.T) {
	t.Parallel()
	p, repo, task, runID := aSleepingAttempt(t)

	for _, args := range [][]string{{"approve", task}, {"rewind", task, "--to", "greet"}} {
		r := p.Orbit(append([]string{"groundhog"}, args...)...)
		assert.Equal(t, 1, r.Code, r.String())
		assert.Contains(t, r.Stderr, "held by run "+runID)
	}
	assert.Equal(t, "groundhog/T-1/day-1", testkit.Git(t, repo, "branch", "--show-current"), "the run's workspace was not touched")
	r := p.Orbit("run", "cancel", runID)
	require.Equal(t, 0, r.Code, r.String())
	waitFor(t, "the run to end", func() bool { return events.Terminal(runView(t, p, runID).State) })
	assert.Equal(t, 0, p.Orbit("groundhog", "verify", task).Code)
}
