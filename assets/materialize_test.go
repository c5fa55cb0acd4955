package assets_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/assets"
)

// TestMaterializeIsStoredAsWritten: on_approval and direct load as
// written; an activity that does not write the field stores nothing (it
// is direct), so specs stored before the field existed are unchanged.
func TestMaterializeIsStoredAsWritten(t *testing.T) {
	t.Parallel()
	for written, want := range map[string]string{"  materialize: on_approval\n": assets.MaterializeOnApproval, "  materialize: direct\n": assets.MaterializeDirect, "": ""} {
		a, err := assets.ParseActivity("act.yaml", []byte("schemaVersion: 2\nkind: Activity\nmetadata: {name: held}\nspec:\n  type: groundhog\n  provider: claude\n"+written))
		require.NoError(t, err, written)
		assert.Equal(t, want, a.Spec.Materialize, written)
	}
}
