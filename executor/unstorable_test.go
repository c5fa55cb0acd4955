package executor_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/executor"
	"github.com/orbitrun/orbit/internal/runrig"
	"github.com/orbitrun/orbit/internal/testkit"
)

// TestARunRequestTheLogCannotStoreFails: a run request whose run.requested
// is over the server's max_payload (here a job name of 1.5 MB, which no
// loaded job has, on a server that takes 1 MB) ends the run failed, with
// the reason, instead of being retried for ever; the command is removed.
func TestARunRequestTheLogCannotStoreFails(t *testing.T) {
	t.Parallel()
	for _, durability := range []string{events.DurabilityStrict, events.DurabilityRelaxed} {
		t.Run(durability, func(t *testing.T) {
			t.Parallel()
			log := testkit.StartLog(t, events.Config{MaxPayload: 1 << 20, Durability: durability})
			startWithJobs(t, log, 0)
			job := runrig.ParseJob(t, "schemaVersion: 2\nkind: Job\nmetadata: {name: j}\nspec:\n  steps:\n    - {id: a, spec: {type: deterministic, action: echo}}\n")
			job.Name = strings.Repeat("j", 3<<19)
			req, err := executor.NewRunRequest(job, nil, "test")
			require.NoError(t, err)
			require.NoError(t, executor.Submit(testkit.Context(t), log, req))

			fin := runrig.WaitFinished(t, log, req.RunID)
			assert.Equal(t, events.StateFailed, fin.State)
			require.NotNil(t, fin.Error)
			assert.Equal(t, events.KindLimit, fin.Error.Kind)
			assert.False(t, fin.Error.Retryable)
			assert.Contains(t, fin.Error.Message, "run.requested")
			assert.Contains(t, fin.Error.Message, "max_payload")
			assert.Less(t, len(fin.Error.Message), 1000)
		})
	}
}
