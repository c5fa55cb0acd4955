package main_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/internal/testkit"
)

// TestAChildRunTakesItsParentsBackend: `orbit job run --backend cli`
// records the backend in the run's run.requested, and the engine gives
// it to the run's child, whatever runtime.backend says.
func TestAChildRunTakesItsParentsBackend(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	p.WriteFile(".orbit/jobs/parent.yaml", "schemaVersion: 2\nkind: Job\nmetadata: {name: parent}\nspec:\n  steps:\n"+
		"    - {id: call, spec: {type: deterministic, action: job.invoke, config: {job: child}}}\n")
	p.WriteFile(".orbit/jobs/child.yaml", "schemaVersion: 2\nkind: Job\nmetadata: {name: child}\nspec:\n  steps:\n"+
		"    - {id: say, spec: {type: deterministic, action: echo}}\n")
	serve(t, p)
	r := p.Orbit("job", "run", "parent", "--backend", "cli")
	require.Equal(t, 0, r.Code, r.String())

	r = p.Orbit("run", "history", "--json")
	require.Equal(t, 0, r.Code, r.String())
	var runs []struct{ ID, Job string }
	require.NoError(t, json.Unmarshal([]byte(r.Stdout), &runs))
	backends := map[string]string{}
	for _, run := range runs {
		r = p.Orbit("run", "events", run.ID, "--json", "--type", "run.requested")
		require.Equal(t, 0, r.Code, r.String())
		var evs []struct {
			Data struct{ Backend string } `json:"data"`
		}
		require.NoError(t, json.Unmarshal([]byte(r.Stdout), &evs), r.Stdout)
		require.Len(t, evs, 1, r.Stdout)
		backends[run.Job] = evs[0].Data.Backend
	}
	assert.Equal(t, map[string]string{"parent": "cli", "child": "cli"}, backends)
}
