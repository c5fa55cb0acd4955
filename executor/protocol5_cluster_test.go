package executor_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/runrig"
	"github.com/orbitrun/orbit/internal/testkit"
)

// TestAShellStepOnASharedServerKeepsItsStart: under step protocol 5 a
// first execution on an embedded store has no activity.started, but on a
// shared server its start is stored before the program runs and names the
// engine that took the command, which the step.finished names too.
func TestAShellStepOnASharedServerKeepsItsStart(t *testing.T) {
	t.Parallel()
	c := testkit.StartCluster(t, filepath.Join(t.TempDir(), "creds"))
	e := startShared(t, c, "e1")
	require.False(t, e.log.Embedded())
	runID, fin := runrig.RunJob(t, e.log, jobSpec(t, "forked", `
  steps:
    - id: fork
      spec: {type: shell, program: echo, args: [hi], allowed_programs: [echo]}
`), nil)
	require.Equal(t, events.StateSuccess, fin.State, "%+v", fin.Error)
	evs := runrig.History(t, e.log, runID)
	var req events.RunRequestedData
	require.NoError(t, runrig.OfType(evs, events.RunRequested)[0].Decode(&req))
	assert.Equal(t, 5, req.Protocol)
	starts := runrig.DecodeAll[events.ActivityStartedData](t, runrig.OfType(evs, events.ActivityStarted))
	require.Len(t, starts, 1)
	assert.Equal(t, "e1", starts[0].Worker)
	assert.False(t, starts[0].Redelivered)
	ends := runrig.DecodeAll[events.StepFinishedData](t, runrig.OfType(evs, events.StepFinished))
	require.Len(t, ends, 1)
	assert.Equal(t, "e1", ends[0].Worker)
	assert.Less(t, runrig.OfType(evs, events.ActivityStarted)[0].Seq, runrig.OfType(evs, events.ShellExited)[0].Seq)
}
