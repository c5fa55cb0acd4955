package main_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/internal/testkit"
)

// loopJob loops 30 times over two steps; iteration 25 fails.
const loopJob = `
schemaVersion: 2
kind: Job
metadata: {name: thirty}
spec:
  steps:
    - id: many
      loop:
        max_iterations: 30
        steps:
          - {id: a, spec: {type: deterministic, action: echo}}
          - {id: b, when: "{{ iteration }} == 25", spec: {type: deterministic, action: fail, config: {message: twenty-five}}}
`

// TestProgressSummarisesBigLoops: by default a run's progress lists the
// first ten iterations of a loop and counts the rest, failures listed;
// --progress full lists every step, --progress compact none inside the
// loop. A 5,000-iteration loop printed 10,007 lines.
func TestProgressSummarisesBigLoops(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	p.WriteFile(".orbit/jobs/thirty.yaml", loopJob)

	r := p.Orbit("job", "run", "thirty")
	require.Equal(t, 1, r.Code, r.String())
	auto := r.Stderr
	assert.Contains(t, auto, "  success   many/10/a ")
	assert.NotContains(t, auto, "many/11/a")
	assert.Contains(t, auto, "iterations past the 10th are counted, not listed (--progress full lists them)")
	assert.Regexp(t, `(?m)^  failed +many/25/b +\S+  twenty-five$`, auto, "a failure is listed")
	assert.Regexp(t, `(?m)^  failed +many +\S+  25 iterations \(max_iterations 30\): 1 failed, 24 success; `, auto)
	assert.Less(t, strings.Count(auto, "\n"), 60)

	r = p.Orbit("job", "run", "thirty", "--progress", "full")
	require.Equal(t, 1, r.Code, r.String())
	assert.Contains(t, r.Stderr, "  success   many/24/a ")
	assert.NotContains(t, r.Stderr, "counted, not listed")

	r = p.Orbit("run", "thirty", "--progress", "compact")
	require.Equal(t, 1, r.Code, r.String())
	assert.NotContains(t, r.Stderr, "many/1/a")
	assert.Regexp(t, `(?m)^  failed +many/25/b `, r.Stderr)
	assert.Contains(t, r.Stderr, "...       many ")

	r = p.Orbit("job", "run", "thirty", "--progress", "some")
	assert.Equal(t, 2, r.Code, r.String())
	assert.Contains(t, r.Stderr, `"some" is not one of full, compact, auto`)
}
