package assets_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/assets"
)

// TestEnvelopeFields: require_completion_envelope is true unless written
// false, and require_response_envelope is false unless written true.
func TestEnvelopeFields(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name           string
		fields         string
		wantResponse   bool
		wantCompletion bool
	}{
		{"defaults", "", false, true},
		{"both written", "require_response_envelope: true\n  require_completion_envelope: false\n", true, false},
		{"completion true", "require_completion_envelope: true\n", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a, err := assets.ParseActivity("a.yaml", []byte("schemaVersion: 2\nkind: Activity\nmetadata: {name: a}\n"+
				"spec:\n  type: agent_loop\n  "+tt.fields))
			require.NoError(t, err)
			assert.Equal(t, tt.wantResponse, a.Spec.RequireResponseEnvelope)
			assert.Equal(t, tt.wantCompletion, a.Spec.CompletionRequired())
		})
	}
	g, err := assets.ParseActivity("g.yaml", []byte("schemaVersion: 2\nkind: Activity\nmetadata: {name: g}\n"+
		"spec: {type: groundhog, require_completion_envelope: true}\n"))
	require.NoError(t, err)
	assert.True(t, g.Spec.CompletionRequired())
}

// TestFailureActivityResolves: failure_activity names a catalog activity,
// with or without the activity: prefix, resolved at load.
func TestFailureActivityResolves(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writeFile(t, root, ".orbit/activities/notify.yaml", "schemaVersion: 2\nkind: Activity\nmetadata: {name: notify}\n"+
		"spec: {type: shell, program: echo, allowed_programs: [echo]}\n")
	for _, ref := range []string{"notify", "activity:notify"} {
		writeFile(t, root, ".orbit/jobs/j.yaml", "schemaVersion: 2\nkind: Job\nmetadata: {name: j}\n"+
			"spec:\n  failure_activity: "+ref+"\n  steps:\n    - {id: a, target: activity:notify}\n")
		cat, err := openStrict(root, assets.CatalogOptions{})
		require.NoError(t, err)
		j, err := cat.Job("j")
		require.NoError(t, err)
		require.NotNil(t, j.Spec.FailureActivity, ref)
		assert.Equal(t, "notify", j.Spec.FailureActivity.Name)
		assert.Equal(t, "echo", j.Spec.FailureActivity.Spec.Program)
	}
}
