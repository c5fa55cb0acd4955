package executor_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/activity"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/executor"
	"github.com/orbitrun/orbit/internal/runrig"
	"github.com/orbitrun/orbit/internal/testkit"
)

// TestOnlyARunWhoseStepsWentToAWorkerHasItsReservationsLookedUp: a run's
// end gives back what it holds in orbit_locks, which only a step on a
// worker can have reserved; a run of steps the interpreter decided (echo)
// does not read the record at its end. Each run here is given a
// reservation no step of it made, before it is submitted: the run of echo
// steps leaves it where it is (so its end did not look), the run with a
// step on a worker (sleep) gives it back.
func TestOnlyARunWhoseStepsWentToAWorkerHasItsReservationsLookedUp(t *testing.T) {
	t.Parallel()
	log := runrig.EngineLog(t)
	ctx := testkit.Context(t)
	held := func() map[string]string {
		e, err := log.Locks().Get(ctx, "reservations")
		require.NoError(t, err)
		var rec map[string]struct {
			Owner string `json:"owner"`
		}
		require.NoError(t, json.Unmarshal(e.Value, &rec))
		out := map[string]string{}
		for res, h := range rec {
			out[res] = h.Owner
		}
		return out
	}
	run := func(name, step, resource string) string {
		t.Helper()
		job := runrig.ParseJob(t, "schemaVersion: 2\nkind: Job\nmetadata: {name: "+name+"}\nspec:\n  steps:\n"+
			"    - id: one\n      spec: {type: deterministic, action: echo, config: {n: 1}}\n"+
			"    - id: two\n      spec: "+step+"\n")
		req, err := executor.NewRunRequest(job, nil, "test")
		require.NoError(t, err)
		conflicts, err := activity.NewLocks(log).Reserve(ctx, req.RunID, "planted", []string{resource}, 0)
		require.NoError(t, err)
		require.Empty(t, conflicts)
		require.NoError(t, executor.Submit(ctx, log, req))
		assert.Equal(t, events.StateSuccess, runrig.WaitFinished(t, log, req.RunID).State)
		return req.RunID
	}

	pure := run("decided", "{type: deterministic, action: echo, config: {n: 2}}", activity.TaskResource("T-1"))
	assert.Empty(t, runrig.OfType(runrig.History(t, log, pure), events.StepStarted), "no step went to a worker")

	worked := run("worked", "{type: deterministic, action: sleep, config: {ms: 1}}", activity.TaskResource("T-2"))
	require.NotEmpty(t, runrig.OfType(runrig.History(t, log, worked), events.StepStarted))
	runrig.WaitFor(t, "the worked run's reservation given back", func() bool {
		_, still := held()[activity.TaskResource("T-2")]
		return !still
	})
	// The decided run ended before the worked one started.
	assert.Equal(t, pure, held()[activity.TaskResource("T-1")], "the decided run's end gave back its reservation")
}
