package assets_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/assets"
)

// TestNamesHaveALengthLimit: a name or id over assets.MaxNameBytes is a
// load error naming the file, the YAML path and the limit, and does not
// quote the name back; one of exactly the limit loads.
func TestNamesHaveALengthLimit(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("n", assets.MaxNameBytes+1)
	huge := strings.Repeat("n", 10<<20)
	job := func(name, id, extra string) string {
		return "schemaVersion: 2\nkind: Job\nmetadata: {name: " + name + "}\nspec:\n  steps:\n" +
			"    - {id: " + id + ", spec: {type: deterministic, action: echo}" + extra + "}\n"
	}
	for _, tt := range []struct {
		name, yaml, path string
		size             int
	}{
		{"metadata.name of 10 MB", job(huge, "a", ""), "metadata.name", len(huge)},
		{"metadata.name", job(long, "a", ""), "metadata.name", len(long)},
		{"step id", job("j", long, ""), "spec.steps[0].id", len(long)},
		{"target", "schemaVersion: 2\nkind: Job\nmetadata: {name: j}\nspec:\n  steps:\n    - {id: a, target: activity:" + long + "}\n",
			"spec.steps[0].target", len(long)},
		{"wait signal", "schemaVersion: 2\nkind: Job\nmetadata: {name: j}\nspec:\n  steps:\n    - {id: a, wait: {signal: " + long + "}}\n",
			"spec.steps[0].wait.signal", len(long)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := assets.ParseJob("jobs/j.yaml", []byte(tt.yaml), nil)
			require.ErrorIs(t, err, assets.ErrInvalid)
			want := fmt.Sprintf(`%s: "nnnn`, tt.path)
			assert.Contains(t, err.Error(), want)
			assert.Contains(t, err.Error(), fmt.Sprintf(`"… (%d bytes) is longer than a name may be (%d bytes)`, tt.size, assets.MaxNameBytes))
			assert.Contains(t, err.Error(), "jobs/j.yaml:")
			assert.Less(t, len(err.Error()), 1000, "the name is not quoted back")
		})
	}

	limit := strings.Repeat("n", assets.MaxNameBytes)
	j, err := assets.ParseJob("jobs/j.yaml", []byte(job(limit, limit, "")), nil)
	require.NoError(t, err)
	assert.Equal(t, limit, j.Name)
}
