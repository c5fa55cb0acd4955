package main_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/internal/testkit"
)

// TestUpstreamFilesThroughTheCLI: the upstream corpus, named by
// ORBIT_JOB_DIR and ORBIT_ACTIVITY_DIR, runs from the binary with the
// exit codes of its outcomes (the failing one after its failure_activity
// ran), and the upstream keys' load errors are exit 2 naming file, YAML
// path and reason.
func TestUpstreamFilesThroughTheCLI(t *testing.T) {
	t.Parallel()
	corpus, err := filepath.Abs("../../internal/compat/testdata/upstream")
	require.NoError(t, err)
	p := testkit.NewProject(t)
	p.Env = append(p.Env, "ORBIT_JOB_DIR="+filepath.Join(corpus, "jobs"), "ORBIT_ACTIVITY_DIR="+filepath.Join(corpus, "activities"))
	defer p.StopEngine()

	r := p.Orbit("job", "run", "conditional_on_value")
	assert.Equal(t, 0, r.Code, r.String())
	r = p.Orbit("job", "run", "parallel_branches_failing")
	assert.Equal(t, 1, r.Code, r.String())
	assert.Contains(t, r.Stdout+r.Stderr, "failure_activity")
	log, err := os.ReadFile(filepath.Join(p.Root, "failures.log"))
	require.NoError(t, err)
	assert.Equal(t, "parallel_branches_failing checks/unit activity\n", string(log))

	bad := p.WriteFile("bad.yaml", `schemaVersion: 2
kind: Job
metadata: {name: bad}
spec:
  failure_activity: notify_on_failur
  steps:
    - id: review
      fsProfile: reviewr
      spec: {type: agent_loop, require_completion_envelope: "yes"}
`)
	r = p.Orbit("job", "run", bad)
	assert.Equal(t, 2, r.Code, r.String())
	for _, want := range []string{
		`bad.yaml:5: spec.failure_activity: unknown activity "notify_on_failur"`,
		`bad.yaml:8: spec.steps[0].fsProfile: unknown fsProfile "reviewr" (profiles: default, docs_writer, implementer, pure_compute, reviewer) (did you mean "reviewer"?)`,
		`bad.yaml:9: spec.steps[0].spec.require_completion_envelope: must be true or false, not "yes"`,
	} {
		assert.Contains(t, r.Stderr, want)
	}
	assert.Empty(t, r.Stdout, "nothing was started")
}
