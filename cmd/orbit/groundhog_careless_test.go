package main_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
	"github.com/orbitrun/orbit/projector"
)

// writerActivity is a groundhog activity on the replay provider whose one
// turn sleeps (so that runs overlap), writes file with content and
// declares success.
func writerActivity(p *testkit.Project, name, file, content string) {
	replayActivity(p, name, []string{
		`{"content": [{"kind": "tool_use", "id": "s", "name": "shell.exec", "input": {"program": "sh", "args": ["-c", "sleep 1"]}}], "stop_reason": "tool_use"}`,
		`{"content": [
	    {"kind": "tool_use", "id": "w", "name": "fs.write", "input": {"path": "` + file + `", "content": "` + content + `\n"}},
	    {"kind": "tool_use", "id": "d", "name": "orbit.groundhog.checkpoint_success", "input": {"summary": "Add ` + file + `"}}], "stop_reason": "tool_use"}`,
	}, "  tools: [fs.write, shell.exec]\n  allowed_programs: [sh]\n")
}

func fileCheckpoint(file, content string) string {
	return "checkpoints:\n  - id: " + strings.TrimSuffix(file, ".txt") + "\n    spec: Write " + file + ".\n    success_criteria:\n" +
		"      - {kind: file_contains, path: " + file + ", pattern: " + content + "}\n"
}

// TestTwoGroundhogRunsOnOneRepositoryTakeTurns: two tasks on one
// repository run at once; the second waits for the workspace (and says
// so), then runs on what the first committed. Both end committed and both
// verify.
func TestTwoGroundhogRunsOnOneRepositoryTakeTurns(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	p.Env = append(p.Env, testkit.GitEnv()...)
	repo := testkit.NewGitRepo(t, map[string]string{"README.md": "# two\n"})
	writerActivity(p, "gh_one", "one.txt", "first")
	writerActivity(p, "gh_two", "two.txt", "second")
	var tasks []string
	for _, file := range []string{"one.txt", "two.txt"} {
		r := p.Orbit("task", "create", "--title", file, "--plan", p.WriteFile(file+".plan.yaml", fileCheckpoint(file, map[string]string{"one.txt": "first", "two.txt": "second"}[file])), "--workspace", repo)
		require.Equal(t, 0, r.Code, r.String())
		tasks = append(tasks, strings.TrimSpace(r.Stdout))
	}
	first := p.Command("groundhog", "run", tasks[0], "--activity", "gh_one")
	var firstErr testkit.SyncBuffer
	first.Stderr = &firstErr
	require.NoError(t, first.Start())
	waitFor(t, "the first run to start an attempt", func() bool {
		return strings.Contains(firstErr.String(), "attempt ")
	})
	second := p.Orbit("groundhog", "run", tasks[1], "--activity", "gh_two")
	require.NoError(t, first.Wait(), firstErr.String())
	assert.Equal(t, 0, second.Code, second.String())
	assert.Contains(t, second.Stderr, "waiting   workspace "+repo)
	assert.Contains(t, second.Stderr, "is held by run")
	assert.Contains(t, firstErr.String(), "committed one #1")
	assert.Contains(t, second.Stderr, "committed two #1")

	assert.Equal(t, "Add two.txt\nAdd one.txt\ninitial", testkit.Git(t, repo, "log", "--format=%s", "main"))
	for _, task := range tasks {
		r := p.Orbit("groundhog", "verify", task)
		assert.Equal(t, 0, r.Code, "%s: %s", task, r.String())
	}
}

// TestAGroundhogRunWithoutAProviderSpendsNoAttempt: the provider cannot be
// built (no key for claude): no attempt starts, no scratch branch is made,
// and the task says why its run ended instead of running for ever.
func TestAGroundhogRunWithoutAProviderSpendsNoAttempt(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	p.Env = append(p.Env, testkit.GitEnv()...)
	repo := testkit.NewGitRepo(t, map[string]string{"README.md": "# keyless\n"})
	r := p.Orbit("task", "create", "--title", "keyless", "--plan", p.WriteFile("plan.yaml", fileCheckpoint("one.txt", "first")), "--workspace", repo)
	require.Equal(t, 0, r.Code, r.String())
	task := strings.TrimSpace(r.Stdout)

	r = p.Orbit("groundhog", "run", task)
	assert.Equal(t, 1, r.Code, r.String())
	assert.Contains(t, r.Stderr, "no API key")
	assert.Equal(t, "main", testkit.Git(t, repo, "branch", "--show-current"))
	assert.Empty(t, testkit.Git(t, repo, "branch", "--list", "groundhog/*"), "no scratch branch")

	tv := orbitJSON[projector.TaskView](t, p, "task", "show", task, "--json")
	assert.Equal(t, events.TaskBacklog, tv.Status)
	assert.Contains(t, tv.StatusReason, "failed")
	assert.Contains(t, tv.StatusReason, "no API key")
	r = p.Orbit("groundhog", "verify", task)
	assert.Equal(t, 0, r.Code, r.String())
}
