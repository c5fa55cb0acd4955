package main_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/engine"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
	"github.com/orbitrun/orbit/projector"
	"github.com/orbitrun/orbit/shipping"
)

func stepOutput(v projector.RunView, key string) map[string]any {
	for _, s := range v.Steps {
		if s.Key == key {
			out, _ := s.Output.(map[string]any)
			return out
		}
	}
	return nil
}

// TestShipABacklogThroughTheBinary is make demo-ship with the built binary:
// three backlog tasks, T-1 and T-3 sharing greet.txt; orbit run auto ships
// the two independent ones at once, each in its worktree, and the third
// once the one it shares greet.txt with has shipped. Each lands on origin's
// main as a commit naming its task; the tasks end in review; the agents'
// turns are replayed from examples/ship/fixtures.
func TestShipABacklogThroughTheBinary(t *testing.T) {
	t.Parallel()
	p, origin := repoProject(t, map[string]string{"README.md": "# greeter\n", "greet.txt": "hello\n"})
	p.Env = append(p.Env, "ORBIT_REPLAY_FIXTURE="+filepath.Join(testkit.ModuleRoot(t), "examples", "ship", "fixtures"))
	for _, task := range [][]string{
		{"Greet in French", "greet.txt"}, {"Add a farewell", "farewell.txt"}, {"Greet in Spanish", "greet.txt"},
	} {
		r := p.Orbit("task", "add", "--title", task[0], "--context-file", task[1], "--status", "backlog")
		require.Equal(t, 0, r.Code, r.String())
	}

	rep := orbitJSON[shipping.AutoReport](t, p, "--json", "run", "auto", "--mode", "local", "--poll-seconds", "1")
	assert.Equal(t, shipping.StatusCompleted, rep.WorkflowStatus)
	assert.Equal(t, events.StateSuccess, rep.State)
	assert.Equal(t, 3, rep.Listed)
	assert.Equal(t, 3, rep.Dispatched)
	assert.Empty(t, rep.Excluded)

	// Each gate: how often it asked for its files, and its pipeline.
	type gate struct {
		tries    int
		pipeline projector.RunView
		refused  []any
	}
	gates := map[string]*gate{}
	for _, g := range rep.Gates {
		require.Equal(t, events.StateSuccess, g.State, "%+v", g)
		require.Len(t, g.TaskIDs, 1)
		v := runView(t, p, g.RunID)
		gt := &gate{pipeline: runView(t, p, g.Child)}
		for i := 1; ; i++ {
			out := stepOutput(v, "wait_for_window/"+strconv.Itoa(i)+"/reserve")
			if out == nil {
				break
			}
			gt.tries = i
			if out["reserved"] == false {
				gt.refused = append(gt.refused, out["conflicts"])
			}
		}
		gates[g.TaskIDs[0]] = gt
	}
	require.Len(t, gates, 3)
	assert.Equal(t, 1, gates["T-2"].tries, "T-2 shares nothing: admitted at once")
	first, second := "T-1", "T-3"
	if gates["T-3"].tries == 1 {
		first, second = "T-3", "T-1"
	}
	assert.Equal(t, 1, gates[first].tries, "one of the two sharing greet.txt is admitted at once")
	assert.Greater(t, gates[second].tries, 1, "the other waits in its gate")
	require.NotEmpty(t, gates[second].refused)
	assert.Contains(t, fmtAny(gates[second].refused[0]), "greet.txt", "refused for the file the other holds")
	assert.False(t, gates[second].pipeline.StartedAt.Before(*gates[first].pipeline.FinishedAt),
		"%s's pipeline starts once %s's has ended", second, first)
	assert.True(t, gates["T-2"].pipeline.StartedAt.Before(*gates[second].pipeline.StartedAt),
		"T-2 did not wait for the one that waited")
	worktrees := map[string]bool{}
	for id, g := range gates {
		w := stepOutput(g.pipeline, "worktree")["workspace_path"].(string)
		assert.True(t, strings.HasPrefix(w, filepath.Join(p.Root, ".orbit", "state", "worktrees")), id)
		worktrees[w] = true
	}
	assert.Len(t, worktrees, 3, "a worktree each")

	// Each task landed on origin's main as a commit naming it, and is in
	// review with its agent's summary.
	subjects := testkit.Git(t, origin, "log", "--format=%s", "main")
	assert.Equal(t, "initial", subjects[strings.LastIndex(subjects, "\n")+1:])
	for id, title := range map[string]string{"T-1": "Greet in French", "T-2": "Add a farewell", "T-3": "Greet in Spanish"} {
		assert.Contains(t, subjects, id+": "+title)
		assert.Contains(t, testkit.Git(t, origin, "log", "--format=%(trailers:key=Orbit-Task,valueonly)", "main"), id)
		v := taskView(t, p, id)
		assert.Equal(t, events.TaskReview, v.Status, id)
		assert.NotEmpty(t, v.ExecutionSummary, id)
		assert.Equal(t, []string{events.TaskBacklog, events.TaskInProgress, events.TaskReview}, statuses(v), id)
	}
	greet := testkit.Git(t, origin, "show", "main:greet.txt")
	assert.Contains(t, greet, "bonjour")
	assert.Contains(t, greet, "hola")
	assert.Equal(t, "goodbye", testkit.Git(t, origin, "show", "main:farewell.txt"))
	assert.Equal(t, testkit.Git(t, origin, "rev-parse", "main"), testkit.Git(t, p.Root, "rev-parse", "main"),
		"the root's main moved with its checkout")
	assert.Empty(t, testkit.Git(t, p.Root, "status", "--porcelain", "--untracked-files=no"), "and its checkout is clean")

	r := p.Orbit("replay", "--verify")
	assert.Equal(t, 0, r.Code, r.String())

	// Finished and landed, the runs' worktrees and branches are garbage
	// once the grace is past: a dry run says so, --apply removes them, and
	// a second pass finds nothing.
	gc := orbitJSON[engine.CollectReport](t, p, "--json", "gc", "--worktrees", "--branches")
	require.Len(t, gc.Worktrees, 3)
	for _, w := range gc.Worktrees {
		assert.Equal(t, shipping.GCKept, w.Outcome, "within the grace: %+v", w)
	}
	r = p.Orbit("--json", "gc", "--worktrees", "--branches", "--grace", "0s")
	require.Equal(t, 0, r.Code, r.String())
	gc = engine.CollectReport{}
	require.NoError(t, json.Unmarshal([]byte(r.Stdout), &gc))
	assert.True(t, gc.DryRun)
	require.Len(t, gc.Worktrees, 3)
	for _, w := range gc.Worktrees {
		assert.Equal(t, shipping.GCWouldRemove, w.Outcome, "%+v", w)
		assert.DirExists(t, w.Path)
	}
	require.Len(t, gc.Branches, 3)
	var branches []string
	for _, b := range gc.Branches {
		assert.Equal(t, shipping.GCWouldRemove, b.Outcome, "landed on main: %+v", b)
		assert.Equal(t, shipping.GCRunBranch, b.Kind)
		branches = append(branches, b.Branch)
	}
	r = p.Orbit("gc", "--apply", "--grace", "0s")
	require.Equal(t, 0, r.Code, r.String())
	assert.Contains(t, r.Stdout, "recorded as gc.collected")
	for w := range worktrees {
		assert.NoDirExists(t, w)
	}
	left := testkit.Git(t, p.Root, "branch", "--format=%(refname:short)")
	for _, b := range branches {
		assert.NotContains(t, strings.Fields(left), b)
	}
	r = p.Orbit("--json", "gc", "--worktrees", "--branches", "--grace", "0s")
	require.Equal(t, 0, r.Code, r.String())
	gc = engine.CollectReport{}
	require.NoError(t, json.Unmarshal([]byte(r.Stdout), &gc))
	assert.Empty(t, gc.Worktrees, "a second pass finds nothing")
	assert.Empty(t, gc.Branches)

	// Shipped tasks are not shipped again: nothing is left in the backlog.
	r = p.Orbit("run", "auto", "--mode", "local")
	require.Equal(t, 0, r.Code, r.String())
	assert.Contains(t, r.Stdout, "workflow_status: empty_backlog")
	r = p.Orbit("run", "ship", "T-1", "--mode", "local")
	require.Equal(t, 0, r.Code, r.String())
	assert.Contains(t, r.Stdout, "skipped: T-1 is review already")
}

// TestShipRefusesAModeWithoutItsPipeline: --mode pr needs the job
// task_pr_pipeline; without it nothing is submitted.
func TestShipRefusesAModeWithoutItsPipeline(t *testing.T) {
	t.Parallel()
	p, _ := repoProject(t, map[string]string{"greet.txt": "hello\n"})
	r := p.Orbit("run", "ship", "T-1", "--mode", "nope")
	assert.Equal(t, 2, r.Code, r.String())
	assert.Contains(t, r.Stderr, "task_nope_pipeline")
	r = p.Orbit("run", "auto", "--base-sync", "sideways")
	assert.Equal(t, 2, r.Code, r.String())
	r = p.Orbit("--json", "run", "history")
	assert.Equal(t, "[]", strings.TrimSpace(r.Stdout), "nothing was submitted")
}

func statuses(v projector.TaskView) []string {
	var out []string
	for _, h := range v.History {
		out = append(out, h.To)
	}
	return out
}

func fmtAny(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestShipATaskWithACheckpointPlanThroughGroundhog: a task with a
// checkpoint plan is implemented by Groundhog in the run's worktree (each
// checkpoint verified, one squash commit each, the first attempt of the
// second refuted and rewound), merged and pushed as those commits; the
// checkpoints' summaries become its execution summary, and groundhog
// verify holds on the worktree's branch.
func TestShipATaskWithACheckpointPlanThroughGroundhog(t *testing.T) {
	t.Parallel()
	p, origin := repoProject(t, map[string]string{"README.md": "# greeter\n"})
	fixtures := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(fixtures, "T-1.json"), []byte(readExample(t, "fixture.json")), 0o644))
	p.Env = append(p.Env, "ORBIT_REPLAY_FIXTURE="+fixtures)
	r := p.Orbit("task", "add", "--title", "Greeter with a test", "--checkpoint-plan", p.WriteFile("plan.yaml", readExample(t, "plan.yaml")),
		"--status", "backlog")
	require.Equal(t, 0, r.Code, r.String())

	r = p.Orbit("run", "ship", "T-1", "--mode", "local")
	require.Equal(t, 0, r.Code, r.String())
	assert.Contains(t, r.Stdout, "workflow_status: completed")
	assert.Equal(t, "Add test.sh, which checks greet.sh's output and says what it expected\nAdd greet.sh, which prints \"hello, <name>\" for its first argument\ninitial",
		testkit.Git(t, origin, "log", "--format=%s", "main"), "Groundhog's verified commits, nothing else")
	v := taskView(t, p, "T-1")
	assert.Equal(t, events.TaskReview, v.Status)
	assert.Contains(t, v.ExecutionSummary, "greet: Add greet.sh")
	assert.Contains(t, v.ExecutionSummary, "test: Add test.sh")
	assert.Equal(t, []string{events.TaskBacklog, events.TaskInProgress, events.TaskReview}, statuses(v), "Groundhog left the status to the pipeline")
	r = p.Orbit("groundhog", "verify", "T-1")
	assert.Equal(t, 0, r.Code, r.String())
	assert.Equal(t, testkit.Git(t, origin, "rev-parse", "main"), testkit.Git(t, p.Root, "rev-parse", "main"))
}
