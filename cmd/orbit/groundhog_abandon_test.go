package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/groundhog"
	"github.com/orbitrun/orbit/internal/testkit"
	"github.com/orbitrun/orbit/projector"
)

// TestGroundhogAbandon is the stuck task, and the way out: a run is killed
// with kill -9 mid-attempt, a person commits on the task branch from a
// second worktree, and from then on every run of the task fails closed
// (the attempt can be neither rewound nor committed). abandon records the
// attempt as abandoned, leaves the person's commit and the workspace as
// they are, verify passes, and the next run commits on top.
func TestGroundhogAbandon(t *testing.T) {
	t.Parallel()
	p, repo, task, runID := killedMidAttempt(t)
	require.Equal(t, "groundhog/T-1/day-1", testkit.Git(t, repo, "branch", "--show-current"))

	other := filepath.Join(t.TempDir(), "other")
	testkit.Git(t, repo, "worktree", "add", "--quiet", other, "main")
	require.NoError(t, os.WriteFile(filepath.Join(other, "NOTES.md"), []byte("by hand\n"), 0o644))
	testkit.Git(t, other, "add", "NOTES.md")
	testkit.Git(t, other, "commit", "--quiet", "-m", "Notes, by hand")
	testkit.Git(t, repo, "worktree", "remove", other)
	theirs := testkit.Git(t, repo, "rev-parse", "main")

	serve(t, p)
	waitFor(t, "the resumed run to end", func() bool { return events.Terminal(runView(t, p, runID).State) })
	assert.Equal(t, events.StateFailed, runView(t, p, runID).State)
	r := p.Orbit("groundhog", "run", task)
	assert.Equal(t, 1, r.Code, "stuck: every run fails closed\n%s", r.String())
	assert.Contains(t, r.Stderr, "task branch moved")
	r = p.Orbit("groundhog", "verify", task)
	assert.Equal(t, 1, r.Code, r.String())
	assert.Contains(t, r.Stdout, "still open")

	res := orbitJSON[groundhog.Abandonment](t, p, "groundhog", "abandon", task, "--reason", "I committed notes on main by hand", "--json")
	assert.Equal(t, groundhog.AbandonKept, res.Outcome, res.Message)
	assert.Equal(t, events.TaskBacklog, res.Status)
	assert.Contains(t, res.Message, "was not reset")
	assert.Equal(t, theirs, testkit.Git(t, repo, "rev-parse", "main"), "the person's commit is untouched")

	r = p.Orbit("groundhog", "verify", task)
	assert.Equal(t, 0, r.Code, r.String())
	r = p.Orbit("groundhog", "show", task)
	require.Equal(t, 0, r.Code, r.String())
	assert.Contains(t, r.Stdout, "(day 1) on groundhog/T-1/day-1 from")
	assert.Contains(t, r.Stdout, ": abandoned")
	assert.Contains(t, r.Stdout, "abandoned by cli:")
	assert.Regexp(t, `abandoned by cli:\S+, signed by client `+clientKey(t, p)+`: `, r.Stdout)
	assert.Contains(t, r.Stdout, "I committed notes on main by hand")

	r = p.Orbit("groundhog", "abandon", task)
	assert.Equal(t, 0, r.Code, r.String())
	assert.Contains(t, r.Stdout, "nothing to abandon")
	r = p.Orbit("groundhog", "abandon", "T-99")
	assert.Equal(t, 2, r.Code, r.String())

	r = p.Orbit("groundhog", "run", task)
	require.Equal(t, 0, r.Code, r.String())
	assert.Equal(t, "Add greet.sh\nNotes, by hand\ninitial", testkit.Git(t, repo, "log", "--format=%s", "main"))
	r = p.Orbit("groundhog", "verify", task)
	assert.Equal(t, 0, r.Code, r.String())
	tv := orbitJSON[projector.TaskView](t, p, "task", "show", task, "--json")
	assert.Equal(t, events.TaskDone, tv.Status)
	assert.Equal(t, 0, p.Orbit("replay", "--verify").Code)
}

// TestGroundhogAbandonIsRefusedWhileARunWorks: abandon does not touch a
// workspace a live run works in; it exits 1 naming the run. Once the run
// is cancelled (which rewinds its attempt) there is nothing to abandon.
func TestGroundhogAbandonIsRefusedWhileARunWorks(t *testing.T) {
	t.Parallel()
	p, repo, task, runID := aSleepingAttempt(t)

	r := p.Orbit("groundhog", "abandon", task, "--reason", "too slow")
	assert.Equal(t, 1, r.Code, r.String())
	assert.Contains(t, r.Stderr, "held by run "+runID)
	assert.Equal(t, "groundhog/T-1/day-1", testkit.Git(t, repo, "branch", "--show-current"), "the run's workspace was not touched")

	r = p.Orbit("run", "cancel", runID)
	require.Equal(t, 0, r.Code, r.String())
	waitFor(t, "the run to end", func() bool { return events.Terminal(runView(t, p, runID).State) })
	r = p.Orbit("groundhog", "abandon", task)
	assert.Equal(t, 0, r.Code, r.String())
	assert.Contains(t, r.Stdout, "nothing to abandon")
	assert.Equal(t, 0, p.Orbit("groundhog", "verify", task).Code)
}

// TestGroundhogAbandonTakesTheAttemptsFilesOutOfTheWorkspace: the engine is
// killed after an attempt's verification, its untracked a.txt in the
// workspace; a person switches the workspace to main and commits a file of
// their own there. The resumed run fails closed (the task branch moved), and
// abandon cannot rewind, but it takes the attempt's a.txt out of the
// workspace — kept on the scratch branch, and said so — leaving the person's
// commit as it is. The next attempt starts from a clean tree: it writes
// a.txt itself and commits it on top of the person's commit.
func TestGroundhogAbandonTakesTheAttemptsFilesOutOfTheWorkspace(t *testing.T) {
	t.Parallel()
	p, repo, task := groundhogProject(t, `[
	  {"content": [
	    {"kind": "tool_use", "id": "w1", "name": "fs.write", "input": {"path": "a.txt", "content": "from the agent\n"}},
	    {"kind": "tool_use", "id": "d1", "name": "orbit.groundhog.checkpoint_success", "input": {"summary": "Add a.txt"}}], "stop_reason": "tool_use"}
	]`, `
checkpoints:
  - id: a
    spec: Add a.txt.
    success_criteria:
      - {kind: file_exists, path: a.txt}
`)
	p.StopEngine()
	died := serveToFailpoint(t, p, "groundhog-after-verification")
	r := p.Orbit("groundhog", "run", task, "--detach")
	require.Equal(t, 0, r.Code, r.String())
	runID := strings.TrimSpace(r.Stdout)
	died()
	require.Equal(t, "groundhog/T-1/day-1", testkit.Git(t, repo, "branch", "--show-current"))
	require.FileExists(t, filepath.Join(repo, "a.txt"))

	// The person takes the workspace back to main (a.txt, untracked, comes
	// along) and commits a file of their own.
	testkit.Git(t, repo, "switch", "--quiet", "main")
	require.NoError(t, os.WriteFile(filepath.Join(repo, "NOTES.md"), []byte("by hand\n"), 0o644))
	testkit.Git(t, repo, "add", "NOTES.md")
	testkit.Git(t, repo, "commit", "--quiet", "-m", "Notes, by hand")
	theirs := testkit.Git(t, repo, "rev-parse", "main")

	serve(t, p)
	waitFor(t, "the resumed run to end", func() bool { return events.Terminal(runView(t, p, runID).State) })
	assert.Equal(t, events.StateFailed, runView(t, p, runID).State, "the task branch moved under a verified attempt: fail closed")

	res := orbitJSON[groundhog.Abandonment](t, p, "groundhog", "abandon", task, "--reason", "I committed notes on main", "--json")
	assert.Equal(t, groundhog.AbandonKept, res.Outcome, res.Message)
	assert.Equal(t, []string{"a.txt"}, res.SetAside, res.Message)
	assert.Contains(t, res.Message, "a.txt")
	assert.Contains(t, res.Message, "groundhog/T-1/day-1 at "+res.ScratchSHA[:12])
	assert.NotContains(t, res.Message, "nothing was reset")
	assert.NoFileExists(t, filepath.Join(repo, "a.txt"), "the attempt's file left the workspace")
	assert.Equal(t, "from the agent", testkit.Git(t, repo, "show", res.ScratchSHA+":a.txt"), "and is kept on the scratch branch")
	assert.Equal(t, theirs, testkit.Git(t, repo, "rev-parse", "main"), "the person's commit is untouched")
	assert.FileExists(t, filepath.Join(repo, "NOTES.md"))
	assert.Empty(t, testkit.Git(t, repo, "status", "--porcelain"), "a clean tree for the next attempt")

	r = p.Orbit("groundhog", "run", task)
	require.Equal(t, 0, r.Code, r.String())
	mine := testkit.Git(t, repo, "rev-parse", "main")
	assert.NotEqual(t, theirs, mine, "the next attempt made a commit of its own")
	assert.Contains(t, r.Stderr, "committed")
	assert.Contains(t, r.Stderr, mine[:12])
	assert.NotContains(t, r.Stderr, theirs[:12], "no other commit's sha is reported as the attempt's")
	assert.Equal(t, "Add a.txt\nNotes, by hand\ninitial", testkit.Git(t, repo, "log", "--format=%s", "main"))
	assert.Equal(t, "a.txt", testkit.Git(t, repo, "diff-tree", "--no-commit-id", "--name-only", "-r", "main"))
	assert.Equal(t, 0, p.Orbit("groundhog", "verify", task).Code)
}

// TestGroundhogAnAttemptWithoutChangesSaysSo: an attempt whose checkpoint
// already holds commits nothing, and its progress says "no changes", never
// the sha of a commit it did not make.
func TestGroundhogAnAttemptWithoutChangesSaysSo(t *testing.T) {
	t.Parallel()
	p, repo, task := groundhogProject(t, `[
	  {"content": [{"kind": "tool_use", "id": "d1", "name": "orbit.groundhog.checkpoint_success", "input": {"summary": "The readme is there"}}], "stop_reason": "tool_use"}
	]`, `
checkpoints:
  - id: readme
    spec: Make sure there is a README.md.
    success_criteria:
      - {kind: file_exists, path: README.md}
`)
	head := testkit.Git(t, repo, "rev-parse", "main")
	r := p.Orbit("groundhog", "run", task)
	require.Equal(t, 0, r.Code, r.String())
	assert.Equal(t, head, testkit.Git(t, repo, "rev-parse", "main"), "nothing was committed")
	assert.Contains(t, r.Stderr, "no changes")
	assert.NotContains(t, r.Stderr, head[:12])
	assert.NotContains(t, r.Stderr, head[:7])
}
