package groundhog_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/agent"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/gitops"
	"github.com/orbitrun/orbit/groundhog"
	"github.com/orbitrun/orbit/internal/testkit"
)

// A shipping run gives the task a worktree of its own; a Groundhog step of
// that run works there, on the worktree's branch, and leaves the task's
// status to the pipeline: the repository's own checkout and branch are
// not touched, and the task stays in progress.
func TestAGroundhogStepOfAShippingRunWorksInTheTasksWorktree(t *testing.T) {
	t.Parallel()
	h := newHarness(t, map[string]string{"greet.txt": "hello\n"}, `
checkpoints:
  - id: farewell
    spec: Create bye.txt.
    success_criteria:
      - {kind: file_contains, path: bye.txt, pattern: "bye"}
`)
	worktree := filepath.Join(t.TempDir(), "wt")
	h.git("worktree", "add", "-b", "orbit/T-1/R1", worktree, "main")
	_, err := h.log.Append(h.ctx, events.Event{Type: events.TaskStatusChanged, TaskID: h.task},
		events.TaskStatusChangedData{Status: events.TaskInProgress, From: events.TaskBacklog, By: "run:SHIP", RunID: "SHIP"})
	require.NoError(t, err)
	_, err = h.log.Append(h.ctx, events.Event{Type: events.TaskWorktreeAssigned, TaskID: h.task},
		events.TaskWorktreeAssignedData{RunID: "SHIP", Repository: h.repo, Worktree: worktree, Branch: "orbit/T-1/R1", Base: "main"})
	require.NoError(t, err)

	res, err := groundhog.Run(h.ctx, groundhog.Config{
		Log: h.log, TaskID: h.task, RunID: "SHIP", StepKey: "implement/1/groundhog_one", Job: "task_local_pipeline", Activity: "groundhog_implement",
		Spec: spec("fs.write"),
		NewProvider: func(ctx context.Context, start func(fixture string) int) (agent.Provider, error) {
			return agent.NewProvider(agent.ProviderOptions{Name: "replay", Fixture: "f", FixtureData: []byte(fixture(writeTurn("bye.txt", "bye\n", "bye.txt says bye"))), Start: start("f")})
		},
		Memory: h.memory, Profile: agent.DefaultProfile, GitEnv: testkit.GitEnv(),
	})
	require.NoError(t, err)
	require.Equal(t, events.GroundhogDone, res.State, res.Message)

	assert.Equal(t, "bye", testkit.Git(t, worktree, "show", "orbit/T-1/R1:bye.txt"), "committed on the worktree's branch")
	assert.Equal(t, "orbit/T-1/R1", testkit.Git(t, worktree, "branch", "--show-current"))
	assert.Equal(t, "main", h.git("branch", "--show-current"), "the repository's checkout is not touched")
	assert.NoFileExists(t, filepath.Join(h.repo, "bye.txt"))
	st := h.events(events.TaskStatusChanged)
	var last events.TaskStatusChangedData
	require.NoError(t, st[len(st)-1].Decode(&last))
	assert.Equal(t, events.TaskInProgress, last.Status, "the pipeline moves the task on, not its Groundhog step")

	evs, err := h.log.Read(h.ctx, events.FollowOptions{Filters: []string{events.TaskFilter(h.task)}})
	require.NoError(t, err)
	ws, err := groundhog.Workspace(evs)
	require.NoError(t, err)
	assert.Equal(t, worktree, ws, "an auditor checks the worktree the task's work is in")
	repo, err := gitops.Open(ws, gitops.WithEnv(testkit.GitEnv()...))
	require.NoError(t, err)
	rep, err := groundhog.Verify(h.ctx, evs, repo)
	require.NoError(t, err)
	assert.True(t, rep.OK, "%+v", rep.Checks)

	// The base moves on; the shipping run rebases the branch onto it
	// (sync_base, git_merge): the checkpoint's commit is now a copy, which
	// verify recognises by its trailers and patch.
	recorded := testkit.Git(t, worktree, "rev-parse", "HEAD")
	h.git("commit", "--quiet", "--allow-empty", "-m", "the base moved")
	testkit.Git(t, worktree, "rebase", "--quiet", "main")
	require.NotEqual(t, recorded, testkit.Git(t, worktree, "rev-parse", "HEAD"))
	rep, err = groundhog.Verify(h.ctx, evs, repo)
	require.NoError(t, err)
	assert.True(t, rep.OK, "%+v", rep.Checks)
	assert.Contains(t, fmt.Sprint(rep.Checks), "its copy by a rebase")

	// A copy whose change differs is not the checkpoint's commit.
	testkit.Git(t, worktree, "commit", "--quiet", "--amend", "-C", "HEAD", "--allow-empty")
	write := filepath.Join(worktree, "bye.txt")
	require.NoError(t, os.WriteFile(write, []byte("not what was verified\n"), 0o644))
	testkit.Git(t, worktree, "commit", "--quiet", "--amend", "-a", "-C", "HEAD")
	rep, err = groundhog.Verify(h.ctx, evs, repo)
	require.NoError(t, err)
	assert.False(t, rep.OK, "a changed copy is refused")
}
