package assets_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/assets"
)

// TestRunsAgentsFindsAgentStepsAnywhereInAJob: an agent step is found at the
// top, in a parallel branch, a fan-out worker, a loop body and as a
// recovery activity; a job of shell and deterministic steps runs none.
func TestRunsAgentsFindsAgentStepsAnywhereInAJob(t *testing.T) {
	t.Parallel()
	const agent = `{type: agent_loop, backend: http, instruction: hi, provider: replay, fixture: f.json}`
	const echo = `{type: deterministic, action: echo, config: {x: 1}}`
	for _, tc := range []struct {
		name  string
		steps string
		want  bool
	}{
		{"shell and deterministic", `
    - id: a
      spec: ` + echo, false},
		{"top level", `
    - id: a
      spec: ` + agent, true},
		{"parallel branch", `
    - id: p
      parallel:
        branches:
          - id: a
            spec: ` + echo + `
          - id: b
            spec: ` + agent, true},
		{"fan-out worker", `
    - id: f
      fan_out:
        items: "{{ input.xs }}"
        worker:
          id: w
          spec: ` + agent + `
      fan_in: {join: {mode: all}}`, true},
		{"loop body", `
    - id: l
      loop:
        max_iterations: 2
        steps:
          - id: a
            spec: ` + agent, true},
		{"recovery activity", `
    - id: a
      spec: ` + echo + `
      recovery_activity: fixer`, true},
	} {
		resolve := func(name string) (*assets.Activity, error) {
			return assets.ParseActivity(name+".yaml", []byte("schemaVersion: 2\nkind: Activity\nmetadata: {name: "+name+"}\nspec: "+agent+"\n"))
		}
		t.Run(tc.name, func(t *testing.T) {
			job, err := assets.ParseJob("j.yaml", []byte("schemaVersion: 2\nkind: Job\nmetadata: {name: j}\nspec:\n  steps:"+tc.steps+"\n"), resolve)
			require.NoError(t, err)
			assert.Equal(t, tc.want, job.RunsAgents())
		})
	}
}

// TestSeededJobsThatRunAgents: of the seeded jobs, example_agent runs an
// agent and hello does not.
func TestSeededJobsThatRunAgents(t *testing.T) {
	t.Parallel()
	cat, err := assets.OpenCatalog(t.TempDir(), assets.CatalogOptions{})
	require.NoError(t, err)
	for name, want := range map[string]bool{"example_agent": true, "hello": false, "example_parallel": false} {
		job, err := cat.Job(name)
		require.NoError(t, err)
		assert.Equal(t, want, job.RunsAgents(), name)
	}
}
