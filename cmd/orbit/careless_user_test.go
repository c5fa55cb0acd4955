package main_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/internal/testkit"
)

// TestRunOfAJobInABrokenFileNamesTheFile runs a job whose file is not
// YAML: the catalog cannot tell which job the file meant to define, so the
// refusal must name the file, its line and the reason rather than only say
// the job is not found.
func TestRunOfAJobInABrokenFileNamesTheFile(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	file := p.WriteFile(".orbit/jobs/bad.yaml", "schemaVersion: 2\nkind: Job\nmetadata: {name: bad}\nspec:\n  steps:\n    - id: a\n      spec: {type: shell, program: echo, args: [x}\n")

	r := p.Orbit("run", "bad")
	require.Equal(t, 2, r.Code, r.String())
	assert.Empty(t, r.Stdout)
	assert.Contains(t, r.Stderr, `no job "bad" (orbit job list lists the jobs)`)
	assert.Regexp(t, regexp.QuoteMeta(file)+`:\d+: invalid YAML`, r.Stderr)
}

// TestTaskOnARepositoryWithNoCommitIsRefused creates Groundhog tasks on a
// repository whose current branch has no commit yet: every attempt starts
// from the task branch's last commit, so the task is refused at once (exit
// 2, naming the workspace and the branch) rather than accepted and failed
// at its first attempt.
func TestTaskOnARepositoryWithNoCommitIsRefused(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	repo := t.TempDir()
	git := exec.Command("git", "init", "--quiet", "--initial-branch=trunk", repo)
	out, err := git.CombinedOutput()
	require.NoError(t, err, string(out))
	plan := p.WriteFile("plan.yaml", "checkpoints:\n  - id: a\n    spec: Add a.\n    success_criteria:\n      - {kind: file_exists, path: a}\n")

	for _, args := range [][]string{
		{"task", "create", "--title", "A", "--plan", plan, "--workspace", repo},
		{"task", "add", "--title", "A", "--checkpoint-plan", plan, "--workspace", repo},
	} {
		r := p.Orbit(args...)
		assert.Equal(t, 2, r.Code, "%v\n%s", args, r)
		assert.Empty(t, r.Stdout, "%v creates no task", args)
		assert.Contains(t, r.Stderr, repo, args)
		assert.Contains(t, r.Stderr, "trunk has no commit yet", args)
	}
}

// TestTheLogsStoreRemovedStopsTheEngine removes .orbit/state/nats under a
// running engine, as docs/durability.md's faults table says a careless
// rm -rf may: the engine must stop within seconds rather than go on
// acknowledging runs into files that are gone, and the next command is
// refused as for any lost log (exit 3).
func TestTheLogsStoreRemovedStopsTheEngine(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	r := p.Orbit("run", "hello")
	require.Equal(t, 0, r.Code, r.String())
	pid := p.EnginePID()
	require.NotZero(t, pid)

	store := filepath.Join(p.Root, ".orbit", "state", "nats")
	// The live server may add a file while the tree is being removed, as
	// under rm -rf: remove again until nothing is left.
	require.Eventually(t, func() bool { return os.RemoveAll(store) == nil }, 10*time.Second, 50*time.Millisecond)
	require.True(t, testkit.WaitGone(pid, 15*time.Second), "the engine stopped")
	log, err := os.ReadFile(filepath.Join(p.Root, ".orbit", "state", "engine.log"))
	require.NoError(t, err)
	assert.Contains(t, string(log), store+" was removed")

	r = p.Orbit("run", "history")
	assert.Equal(t, 3, r.Code, r.String())
	assert.Contains(t, r.Stderr, "the event log was lost or replaced")
}
