package console_test

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/internal/testkit"
)

// TestTheConsoleOfAnEngineOnACluster: the console reads the views through
// the engine's API and the events from the log, so it serves an engine on
// a three-node NATS cluster as it serves an embedded one — run list, run
// page, events and /metrics.
func TestTheConsoleOfAnEngineOnACluster(t *testing.T) {
	t.Parallel()
	cluster := testkit.StartCluster(t, filepath.Join(t.TempDir(), "creds"))
	p := testkit.ClusterProject(t, cluster, filepath.Join(t.TempDir(), "log.key"))
	e := testkit.StartEngine(t, p, "--http", "127.0.0.1:0")
	c := consoleFrom(t, e.Stderr())
	require.NotEmpty(t, c.Token, "the console's login URL: %s", e.Stderr())

	id := runJob(t, p, "example_parallel")
	code, body := c.get(t, "/")
	require.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, id)
	code, body = c.get(t, "/runs/"+id)
	require.Equal(t, http.StatusOK, code)
	for _, step := range []string{`data-key="checks/lint"`, `data-key="checks/unit_tests"`, `data-key="checks/mirror_check"`, `data-key="report"`} {
		assert.True(t, strings.Contains(body, step), "the run page shows %s", step)
	}
	code, body = c.get(t, "/runs/"+id+"/events")
	require.Equal(t, http.StatusOK, code)
	assert.True(t, strings.Contains(body, "run.finished"), "the events page lists run.finished")
	code, body = c.get(t, "/metrics")
	require.Equal(t, http.StatusOK, code)
	assert.True(t, strings.Contains(body, `orbit_runs{job="example_parallel",state="success"} 1`), "the run is counted")
}
