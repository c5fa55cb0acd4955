package main_test

import (
	"encoding/json"
	"os"
	"path/filepath"
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
	mark := filepath.Join(t.TempDir(), "slept")
	p, repo, task := groundhogProject(t, sleeperFixture(mark), greetPlan)
	p.StopEngine()
	engine := serve(t, p)
	runID := runUntilTheAgentSleeps(t, p, task, mark)
	killEngine(t, engine)
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

	r = p.Orbit("groundhog", "abandon", task, "--reason", "I committed notes on main by hand", "--json")
	require.Equal(t, 0, r.Code, r.String())
	var res groundhog.Abandonment
	require.NoError(t, json.Unmarshal([]byte(r.Stdout), &res), r.Stdout)
	assert.Equal(t, groundhog.AbandonKept, res.Outcome, res.Message)
	assert.Equal(t, events.TaskBacklog, res.Status)
	assert.Contains(t, res.Message, "nothing was reset")
	assert.Equal(t, theirs, testkit.Git(t, repo, "rev-parse", "main"), "the person's commit is untouched")

	r = p.Orbit("groundhog", "verify", task)
	assert.Equal(t, 0, r.Code, r.String())
	r = p.Orbit("groundhog", "show", task)
	require.Equal(t, 0, r.Code, r.String())
	assert.Contains(t, r.Stdout, "(day 1) on groundhog/T-1/day-1 from")
	assert.Contains(t, r.Stdout, ": abandoned")
	assert.Contains(t, r.Stdout, "abandoned by cli:")
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
	r = p.Orbit("task", "show", task, "--json")
	require.Equal(t, 0, r.Code, r.String())
	var tv projector.TaskView
	require.NoError(t, json.Unmarshal([]byte(r.Stdout), &tv))
	assert.Equal(t, events.TaskDone, tv.Status)
	assert.Equal(t, 0, p.Orbit("replay", "--verify").Code)
}

// TestGroundhogAbandonIsRefusedWhileARunWorks: abandon does not touch a
// workspace a live run works in; it exits 1 naming the run. Once the run
// is cancelled (which rewinds its attempt) there is nothing to abandon.
func TestGroundhogAbandonIsRefusedWhileARunWorks(t *testing.T) {
	t.Parallel()
	mark := filepath.Join(t.TempDir(), "slept")
	p, repo, task := groundhogProject(t, sleeperFixture(mark), greetPlan)
	runID := runUntilTheAgentSleeps(t, p, task, mark)

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
