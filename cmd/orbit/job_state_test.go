package main_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/internal/testkit"
)

// TestJobStateEnabledAndDisabled: a job written with the upstream
// system's state: enabled runs, as one with Orbit's former state: active
// does; a state: disabled job is listed but refuses to run, exit 2, saying
// so, and starts no run.
func TestJobStateEnabledAndDisabled(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	defer p.StopEngine()
	for _, state := range []string{"enabled", "active", "disabled"} {
		p.WriteFile(".orbit/jobs/"+state+".yaml", "schemaVersion: 2\nkind: Job\nmetadata: {name: "+state+"}\nspec:\n  state: "+state+
			"\n  steps:\n    - {id: a, spec: {type: deterministic, action: echo}}\n")
	}
	r := p.Orbit("job", "list")
	require.Equal(t, 0, r.Code, r.String())
	assert.Regexp(t, `(?m)^disabled\s+workflow\s+workspace`, r.Stdout)

	for _, state := range []string{"enabled", "active"} {
		r = p.Orbit("job", "run", state)
		assert.Equal(t, 0, r.Code, "%s: %s", state, r)
	}
	r = p.Orbit("job", "run", "disabled")
	assert.Equal(t, 2, r.Code, r.String())
	assert.Contains(t, r.Stderr, "job is disabled: disabled")
	assert.Empty(t, r.Stdout, "no run id: nothing was started")
}
