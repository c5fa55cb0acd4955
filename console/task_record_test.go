package console_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTaskPageShowsTheRecord: beside its chronicle, a task's page shows
// its record: the runs that worked on it and the history of its status,
// who moved it and when.
func TestTaskPageShowsTheRecord(t *testing.T) {
	t.Parallel()
	c, task := groundhogProject(t)
	code, body := c.get(t, "/tasks/"+task)
	require.Equal(t, http.StatusOK, code, body)
	for _, want := range []string{"groundhog run</dt>", "Status history", `<td><span class="state in-progress">in-progress</span></td>`,
		`<span class="state done">done</span>`, "Checkpoint plan"} {
		assert.Contains(t, body, want)
	}
}
