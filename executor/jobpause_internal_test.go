package executor

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

// TestAnEmbeddedEngineReadsAJobsPauseOnceAndForgetsItOnAChange: on an
// embedded store admission reads a job's pause key once and keeps it (no
// round trip to the server per run admitted), and a pause or unpause made
// through the orchestrator is seen by the next admission. A write to the
// key past the orchestrator, which nothing makes on an embedded store, is
// not: that is what shows the key is not read again.
func TestAnEmbeddedEngineReadsAJobsPauseOnceAndForgetsItOnAChange(t *testing.T) {
	t.Parallel()
	log := testkit.StartLog(t, events.Config{})
	require.True(t, log.Embedded())
	ctx := testkit.Context(t)
	o := NewOrchestrator(Config{Log: log, Engine: "e1"})
	const job = "paused_job"

	assert.False(t, o.jobPaused(ctx, job))
	changed, err := PauseJob(ctx, log, true, JobPause{Job: job})
	require.NoError(t, err)
	require.True(t, changed)
	assert.False(t, o.jobPaused(ctx, job), "the key was read again")

	changed, err = o.PauseJob(ctx, false, JobPause{Job: job})
	require.NoError(t, err)
	require.True(t, changed)
	assert.False(t, o.jobPaused(ctx, job))

	changed, err = o.PauseJob(ctx, true, JobPause{Job: job})
	require.NoError(t, err)
	require.True(t, changed)
	assert.True(t, o.jobPaused(ctx, job), "a pause made through the orchestrator")
	assert.True(t, o.jobPaused(ctx, job))

	changed, err = o.PauseJob(ctx, true, JobPause{Job: job})
	require.NoError(t, err)
	assert.False(t, changed)
	assert.True(t, o.jobPaused(ctx, job), "paused twice")

	changed, err = o.PauseJob(ctx, false, JobPause{Job: job})
	require.NoError(t, err)
	require.True(t, changed)
	assert.False(t, o.jobPaused(ctx, job), "an unpause made through the orchestrator")
}
