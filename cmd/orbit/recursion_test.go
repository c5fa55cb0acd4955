package main_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

// TestAJobThatAlwaysInvokesItselfIsRefusedAndStopsNothingElse: the cycle is
// a load error of that job alone, naming the file, the step and the cycle;
// every other job still runs.
func TestAJobThatAlwaysInvokesItselfIsRefusedAndStopsNothingElse(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	file := p.WriteFile(".orbit/jobs/rec.yaml", `schemaVersion: 2
kind: Job
metadata: {name: rec}
spec:
  steps:
    - {id: again, spec: {type: deterministic, action: job.invoke, config: {job: rec, wait: true}}}
`)
	r := p.Orbit("job", "run", "rec")
	assert.Equal(t, 2, r.Code, r.String())
	assert.Contains(t, r.Stderr, file+`: spec.steps[0]: job.invoke of "rec" always runs and leads back to this job (rec → rec)`)
	assert.Empty(t, r.Stdout, "nothing was submitted")

	r = p.Orbit("job", "run", "hello")
	assert.Equal(t, 0, r.Code, r.String())
	assert.Contains(t, r.Stderr, "1 catalog file(s) could not be loaded")

	r = p.Orbit("job", "list")
	assert.Equal(t, 0, r.Code, r.String())
	assert.Contains(t, r.Stderr, "left out of the catalog: "+file)
	assert.NotContains(t, r.Stdout, "rec ")
	assert.Contains(t, r.Stdout, "hello")
}

// TestEndlessRecursionStopsAtTheDepthLimit: a recursion the loader cannot
// see as endless stops at engine.max_child_depth with an error that says
// so, and the engine takes the next job at once.
func TestEndlessRecursionStopsAtTheDepthLimit(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	p.WriteFile(".orbit/config.yaml", "engine:\n  max_child_depth: 3\n")
	p.WriteFile(".orbit/jobs/endless.yaml", `schemaVersion: 2
kind: Job
metadata: {name: endless}
spec:
  default_input: {more: yes}
  steps:
    - id: again
      when: "{{ input.more }} == yes"
      spec: {type: deterministic, action: job.invoke, config: {job: endless}}
`)
	r := p.Orbit("job", "run", "endless")
	assert.Equal(t, 1, r.Code, r.String())
	assert.Contains(t, r.Stderr, `a run of "endless" here would be at depth 4, past engine.max_child_depth (3)`)
	runID := strings.TrimSpace(r.Stdout)
	v := runView(t, p, runID)
	assert.Equal(t, events.StateFailed, v.State)
	require.NotNil(t, v.Error)
	assert.Equal(t, events.KindLimit, v.Error.Kind)

	h := p.Orbit("run", "history", "--job", "endless", "--json")
	require.Equal(t, 0, h.Code, h.String())
	assert.Equal(t, 4, strings.Count(h.Stdout, `"job": "endless"`), "the root and three levels of children:\n%s", h.Stdout)

	r = p.Orbit("job", "run", "hello")
	assert.Equal(t, 0, r.Code, r.String())
}
