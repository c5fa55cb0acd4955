package main_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
	"github.com/orbitrun/orbit/projector"
)

// repoProject is a project whose root is a git repository (main, one
// commit) with a bare origin: tasks change it by default.
func repoProject(t *testing.T, files map[string]string) (p *testkit.Project, origin string) {
	t.Helper()
	p = testkit.NewProject(t)
	p.Env = append(p.Env, testkit.GitEnv()...)
	testkit.Git(t, p.Root, "init", "--quiet", "--initial-branch=main")
	var paths []string
	for path, content := range files {
		p.WriteFile(path, content)
		paths = append(paths, path)
	}
	testkit.Git(t, p.Root, append([]string{"add", "--"}, paths...)...)
	testkit.Git(t, p.Root, "commit", "--quiet", "-m", "initial")
	origin = filepath.Join(t.TempDir(), "origin.git")
	testkit.Git(t, p.Root, "init", "--quiet", "--bare", "--initial-branch=main", origin)
	testkit.Git(t, p.Root, "remote", "add", "origin", origin)
	testkit.Git(t, p.Root, "push", "--quiet", "--set-upstream", "origin", "main")
	return p, origin
}

func taskView(t *testing.T, p *testkit.Project, id string) projector.TaskView {
	t.Helper()
	return orbitJSON[projector.TaskView](t, p, "--json", "task", "show", id)
}

// TestTaskCommandsOnAFreshRoot: add prints the new id alone (its
// repository the one holding the root); list, show, update, start and
// archive change and show the record and its history, and refuse what
// the lifecycle does, exit 2 with the reason.
func TestTaskCommandsOnAFreshRoot(t *testing.T) {
	t.Parallel()
	p, _ := repoProject(t, map[string]string{"greet.txt": "hello\n"})
	r := p.Orbit("task", "add", "--title", "Greet in French", "--description", "Say bonjour.",
		"--acceptance", "greet.txt says bonjour", "--acceptance", "hello stays", "--context-file", "greet.txt",
		"--plan-file", p.WriteFile("plan.md", "Edit greet.txt.\n"), "--priority", "high", "--status", "backlog")
	require.Equal(t, 0, r.Code, r.String())
	assert.Equal(t, "T-1\n", r.Stdout, "the id alone")
	r = p.Orbit("task", "add", "--title", "Add a farewell")
	require.Equal(t, 0, r.Code, r.String())
	assert.Equal(t, "T-2\n", r.Stdout)

	v := taskView(t, p, "T-1")
	assert.Equal(t, events.TaskBacklog, v.Status)
	assert.Equal(t, []string{"greet.txt says bonjour", "hello stays"}, v.AcceptanceCriteria)
	assert.Equal(t, []string{"greet.txt"}, v.ContextFiles)
	assert.Equal(t, "Edit greet.txt.\n", v.PlanText)
	assert.Equal(t, testkit.Git(t, p.Root, "rev-parse", "--show-toplevel"), v.Workspace, "the repository holding the root")
	assert.Equal(t, events.TaskProposed, taskView(t, p, "T-2").Status, "proposed unless it says otherwise")

	r = p.Orbit("task", "list", "--status", "backlog")
	require.Equal(t, 0, r.Code, r.String())
	assert.Contains(t, r.Stdout, "T-1   backlog  high")
	assert.NotContains(t, r.Stdout, "T-2")

	r = p.Orbit("task", "start", "T-2")
	require.Equal(t, 0, r.Code, r.String())
	assert.Equal(t, "T-2 started\n", r.Stdout)
	r = p.Orbit("task", "start", "T-2")
	assert.Equal(t, 2, r.Code, r.String())
	assert.Contains(t, r.Stderr, "already in progress")
	r = p.Orbit("task", "update", "T-2", "--status", "review")
	assert.Equal(t, 2, r.Code, r.String())
	assert.Contains(t, r.Stderr, "--summary")
	r = p.Orbit("task", "update", "T-2", "--status", "review", "--summary", "Wrote farewell.txt.", "--reason", "ready for a look")
	require.Equal(t, 0, r.Code, r.String())
	r = p.Orbit("task", "update", "T-2", "--status", "archived")
	assert.Equal(t, 2, r.Code)
	assert.Contains(t, r.Stderr, "orbit task archive T-2")
	archived := orbitJSON[projector.TaskView](t, p, "--json", "task", "archive", "T-2", "--reason", "not wanted after all")
	assert.Equal(t, events.TaskArchived, archived.Status)
	var moves []string
	for _, h := range archived.History {
		moves = append(moves, h.From+">"+h.To)
		assert.True(t, strings.HasPrefix(h.By, "cli:"), "who moved it: %q", h.By)
	}
	assert.Equal(t, []string{">proposed", "proposed>in-progress", "in-progress>review", "review>archived"}, moves)

	r = p.Orbit("task", "show", "T-2")
	require.Equal(t, 0, r.Code, r.String())
	for _, want := range []string{"Status:       archived", "Execution summary:\n  Wrote farewell.txt.", "in-progress → review", ": ready for a look"} {
		assert.Contains(t, r.Stdout, want)
	}

	for _, args := range [][]string{
		{"task", "add"},
		{"task", "add", "--title", "x", "--status", "done"},
		{"task", "add", "--title", "x", "--context-file", "../outside"},
		{"task", "add", "--title", "x", "--depends-on", "T-9"},
		{"task", "update", "T-1", "--priority", "urgent"},
		{"task", "show", "T-9"},
	} {
		r := p.Orbit(args...)
		assert.Equal(t, 2, r.Code, "%v: %s", args, r)
	}
	r = p.Orbit("task", "create", "--title", "old style", "--plan", p.WriteFile("cp.yaml",
		"checkpoints:\n  - id: one\n    spec: Add one.txt.\n    success_criteria: [{kind: file_exists, path: one.txt}]\n"), "--workspace", p.Root)
	require.Equal(t, 0, r.Code, r.String())
	created := taskView(t, p, strings.TrimSpace(r.Stdout))
	assert.Equal(t, events.TaskBacklog, created.Status, "task create still makes a Groundhog task, ready to run")
	assert.Equal(t, "main", created.Branch)
	assert.Equal(t, 1, created.PlanVersion)
}

// TestTaskAddNeedsARepository: without --workspace the task's repository
// is the one holding the project root; a root outside any says so.
func TestTaskAddNeedsARepository(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	r := p.Orbit("task", "add", "--title", "nowhere")
	assert.Equal(t, 2, r.Code, r.String())
	assert.Contains(t, r.Stderr, "not in a git repository")
	assert.Contains(t, r.Stderr, "--workspace")
}

// TestGroundhogRunNeedsACheckpointPlanAndABranch: a backlog task without a
// checkpoint plan, or without a branch, is not something Groundhog can run
// alone: the command says what to do instead, exit 2.
func TestGroundhogRunNeedsACheckpointPlanAndABranch(t *testing.T) {
	t.Parallel()
	p, _ := repoProject(t, map[string]string{"greet.txt": "hello\n"})
	r := p.Orbit("task", "add", "--title", "plain", "--status", "backlog")
	require.Equal(t, 0, r.Code, r.String())
	r = p.Orbit("groundhog", "run", "T-1")
	assert.Equal(t, 2, r.Code, r.String())
	assert.Contains(t, r.Stderr, "orbit task plan T-1")
	r = p.Orbit("task", "plan", "T-1", "--file", p.WriteFile("cp.yaml",
		"checkpoints:\n  - id: one\n    spec: Add one.txt.\n    success_criteria: [{kind: file_exists, path: one.txt}]\n"))
	require.Equal(t, 0, r.Code, r.String())
	r = p.Orbit("groundhog", "run", "T-1")
	assert.Equal(t, 2, r.Code, r.String())
	assert.Contains(t, r.Stderr, "orbit run ship T-1")
}
