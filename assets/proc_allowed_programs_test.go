package assets_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/assets"
)

// TestProcAllowedPrograms: the upstream proc_allowed_programs is
// allowed_programs by another name on agent specs, and [] allows nothing.
func TestProcAllowedPrograms(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		spec string
		want []string
	}{
		{"  type: agent_loop\n  proc_allowed_programs: [go, git]\n", []string{"go", "git"}},
		{"  type: groundhog\n  proc_allowed_programs: [make]\n", []string{"make"}},
		{"  type: agent_loop\n  proc_allowed_programs: []\n", nil},
		{"  type: agent_loop\n  allowed_programs: [go]\n", []string{"go"}},
	} {
		a, err := assets.ParseActivity("a.yaml", []byte("schemaVersion: 2\nkind: Activity\nmetadata: {name: a}\nspec:\n"+tc.spec))
		require.NoError(t, err, tc.spec)
		if tc.want == nil {
			assert.Empty(t, a.Spec.AllowedPrograms, tc.spec)
			continue
		}
		assert.Equal(t, tc.want, a.Spec.AllowedPrograms, tc.spec)
	}
}
