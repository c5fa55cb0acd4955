package main_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/internal/testkit"
)

// TestGroundhogDirectIsRefusedWhileCommitsAreHeld: checkpoint one is held
// for approval when the task is run with a direct activity; the run is
// refused before any attempt, saying which commit is held and what to do,
// and main has not moved.
func TestGroundhogDirectIsRefusedWhileCommitsAreHeld(t *testing.T) {
	t.Parallel()
	p, repo, task := controlProject(t, filesPlan("one.txt", "two.txt"))
	writesActivity(p, "gh_held", "  materialize: on_approval\n", "one.txt=first")
	writesActivity(p, "gh_direct", "", "one.txt=first", "two.txt=second")
	initial := testkit.Git(t, repo, "rev-parse", "main")
	r := p.Orbit("groundhog", "run", task, "--activity", "gh_held")
	require.NotEqual(t, 0, r.Code, "the fixture has no turn for two: %s", r.String())
	held := testkit.Git(t, repo, "rev-parse", "refs/orbit/groundhog/"+task)

	r = p.Orbit("groundhog", "run", task, "--activity", "gh_direct")
	assert.Equal(t, 1, r.Code, r.String())
	out := r.Stdout + r.Stderr
	assert.Contains(t, out, "held for approval")
	assert.Contains(t, out, "one "+held[:12])
	assert.Contains(t, out, "orbit groundhog approve "+task)
	assert.Equal(t, initial, testkit.Git(t, repo, "rev-parse", "main"))
	r = p.Orbit("groundhog", "verify", task)
	assert.Equal(t, 0, r.Code, r.String())
}
