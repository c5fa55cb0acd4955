package assets

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTheShellReferenceShowsEveryShellField: shell_reference, the
// activity users copy to start their own, sets every field a shell
// activity has, sandbox included.
func TestTheShellReferenceShowsEveryShellField(t *testing.T) {
	t.Parallel()
	data, err := SeededFile("activities/shell_reference.yaml")
	require.NoError(t, err)
	for _, field := range typeFields[TypeShell] {
		assert.Contains(t, string(data), "\n  "+field+":", "shell_reference does not show %s", field)
	}
	assert.Contains(t, string(data), "sandbox: agent", "the comment names the value that sandboxes")
}
