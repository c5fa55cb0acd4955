package console_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

func TestTheRunPageShowsTheRunsTraceID(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	c := serveConsole(t, p)
	id := runJob(t, p, "hello")
	trace := events.RunTraceID(id, "")
	assert.Equal(t, trace, showRun(t, p, id).TraceID)
	code, body := c.get(t, "/runs/"+id)
	require.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, `<dd class="trace-id">`+trace+`</dd>`)
}
