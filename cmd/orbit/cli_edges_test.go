package main_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/orbitrun/orbit/internal/testkit"
)

// TestEmptyListsAreJSONArrays: a read command with nothing to list prints
// `[]` with --json, not `null`, so that a script can iterate over it.
func TestEmptyListsAreJSONArrays(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	defer p.StopEngine()
	for _, args := range [][]string{{"run", "history"}, {"task", "list"}} {
		r := p.Orbit(append([]string{"--json"}, args...)...)
		assert.Equal(t, 0, r.Code, r.String())
		assert.Equal(t, "[]", strings.TrimSpace(r.Stdout), "%v", args)
	}
}

// TestTaskPlanWithoutFileNamesItsFlag: `task plan` takes its plan with
// --file, and says so when it is missing (not `task create`'s --plan).
func TestTaskPlanWithoutFileNamesItsFlag(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	defer p.StopEngine()
	r := p.Orbit("task", "plan", "T-1")
	assert.Equal(t, 2, r.Code, r.String())
	assert.Contains(t, r.Stderr, "--file FILE is required")
	assert.NotContains(t, r.Stderr, "--plan")
}

// TestNkeyHelpExampleRunsNoJob: the example in `orbit nkey new --help`
// must not be a command that runs a job (`orbit run list` runs a job
// named list).
func TestNkeyHelpExampleRunsNoJob(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	r := p.Orbit("nkey", "new", "--help")
	assert.Equal(t, 0, r.Code, r.String())
	assert.NotContains(t, r.Stdout, "orbit run list")
	assert.Contains(t, r.Stdout, "orbit run history")
}
