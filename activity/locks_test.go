package activity_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/runrig"
	"github.com/orbitrun/orbit/internal/testkit"
)

const holder = `
schemaVersion: 2
kind: Job
metadata: {name: holder}
spec:
  max_active_runs: 5
  steps:
    - id: lock
      spec: {type: deterministic, action: locks.reserve, config: {tasks: [T-1], paths: ["src/**"]}}
    - id: work
      spec: {type: deterministic, action: sleep, config: {ms: 1500}}
`

const contender = `
schemaVersion: 2
kind: Job
metadata: {name: contender}
spec:
  max_active_runs: 5
  steps:
    - id: lock
      spec: {type: deterministic, action: locks.reserve, config: {paths: ["src/app/main.go"]}}
    - id: unlock
      spec: {type: deterministic, action: locks.release}
`

func reservations(t *testing.T, log *events.Log) map[string]map[string]any {
	t.Helper()
	e, err := log.Locks().Get(testkit.Context(t), "reservations")
	if err != nil {
		return nil
	}
	var held map[string]map[string]any
	require.NoError(t, json.Unmarshal(e.Value, &held))
	return held
}

// TestReservationsContend runs two jobs that want overlapping resources at
// the same time: the second fails naming the holder; once the holder's run
// has finished (and its reservations were released), the same job gets
// them.
func TestReservationsContend(t *testing.T) {
	t.Parallel()
	log := runrig.EngineLog(t)

	first := runrig.Submit(t, log, runrig.ParseJob(t, holder), nil)
	runrig.WaitFor(t, "the holder to reserve", func() bool { return runrig.Has(t, log, first, events.StepFinished, "lock") })
	held := reservations(t, log)
	require.Contains(t, held, "files:src/**")
	assert.Equal(t, first, held["files:src/**"]["owner"])

	_, fin := runrig.RunJob(t, log, runrig.ParseJob(t, contender), nil)
	require.Equal(t, events.StateFailed, fin.State)
	assert.Contains(t, fin.Error.Message, "files:src/** is held by run "+first+" (step lock)")
	assert.Contains(t, fin.Error.Message, "overlaps files:src/app/main.go")

	assert.Equal(t, events.StateSuccess, runrig.WaitFinished(t, log, first).State)
	runrig.WaitFor(t, "the finished run's reservations to go", func() bool { return len(reservations(t, log)) == 0 })

	runID, fin := runrig.RunJob(t, log, runrig.ParseJob(t, contender), nil)
	require.Equal(t, events.StateSuccess, fin.State, "%+v", fin.Error)
	assert.Equal(t, map[string]any{"released": []any{"files:src/app/main.go"}}, fin.Output)
	assert.NotContains(t, reservations(t, log), "files:src/app/main.go", runID)
}

// TestStaleAndExpiredReservationsAreTakenBack: a reservation of a run that
// has finished (its release was lost) and one past its TTL are reclaimed
// by the next reserver.
func TestStaleAndExpiredReservationsAreTakenBack(t *testing.T) {
	t.Parallel()
	log := runrig.EngineLog(t)
	ctx := testkit.Context(t)
	finishedRun, _ := runrig.RunYAML(t, log, `
schemaVersion: 2
kind: Job
metadata: {name: quick}
spec:
  steps:
    - {id: s, spec: {type: deterministic, action: echo}}
`)
	stale, err := json.Marshal(map[string]any{
		"task:T-9":  map[string]any{"owner": finishedRun, "step": "lock", "acquired": time.Now().UTC()},
		"task:T-10": map[string]any{"owner": "some-manual-owner", "step": "", "acquired": time.Now().Add(-time.Hour).UTC(), "expires": time.Now().Add(-time.Minute).UTC()},
		"task:T-11": map[string]any{"owner": "someone-alive", "step": "", "acquired": time.Now().UTC(), "expires": time.Now().Add(time.Hour).UTC()},
	})
	require.NoError(t, err)
	cur, _ := log.Locks().Get(ctx, "reservations")
	if cur.Revision == 0 {
		_, err = log.Locks().Create(ctx, "reservations", stale)
	} else {
		_, err = log.Locks().Update(ctx, "reservations", stale, cur.Revision)
	}
	require.NoError(t, err)

	runID, fin := runrig.RunYAML(t, log, `
schemaVersion: 2
kind: Job
metadata: {name: reclaimer}
spec:
  steps:
    - id: lock
      spec: {type: deterministic, action: locks.reserve, config: {tasks: [T-9, T-10], ttl_seconds: 60}}
    - id: live
      spec: {type: deterministic, action: locks.reserve, config: {tasks: [T-11]}}
`)
	require.Equal(t, events.StateFailed, fin.State)
	assert.Equal(t, "live", fin.Error.StepKey)
	assert.Contains(t, fin.Error.Message, "task:T-11 is held by run someone-alive")
	runrig.WaitFor(t, "the reclaiming run's reservations to be released", func() bool {
		held := reservations(t, log)
		return held["task:T-9"] == nil && held["task:T-10"] == nil
	})
	held := reservations(t, log)
	assert.Equal(t, "someone-alive", held["task:T-11"]["owner"], "a live holder's reservation is kept")
	assert.NotEqual(t, runID, held["task:T-11"]["owner"])
}

const racer = `
schemaVersion: 2
kind: Job
metadata: {name: racer}
spec:
  max_active_runs: 8
  steps:
    - id: lock
      spec: {type: deterministic, action: locks.reserve, config: {tasks: [T-7]}}
    - id: work
      spec: {type: deterministic, action: sleep, config: {ms: 300}}
`

// TestReservationsRace submits several runs that reach for the same task at
// once. Whatever the timing, no two of them hold it together: a winner
// takes it only after the previous winner's run has finished (in log
// order), and every loser names a run of the race as the holder.
func TestReservationsRace(t *testing.T) {
	t.Parallel()
	log := runrig.EngineLog(t)

	job := runrig.ParseJob(t, racer)
	var runs []string
	for range 5 {
		runs = append(runs, runrig.Submit(t, log, job, nil))
	}
	type hold struct{ from, to uint64 }
	var holds []hold
	for _, runID := range runs {
		fin := runrig.WaitFinished(t, log, runID)
		evs := runrig.History(t, log, runID)
		if fin.State == events.StateFailed {
			assert.Equal(t, "lock", fin.Error.StepKey)
			assert.Regexp(t, `task:T-7 is held by run (`+strings.Join(runs, "|")+`) \(step lock\)`, fin.Error.Message)
			continue
		}
		require.Equal(t, events.StateSuccess, fin.State, "%+v", fin.Error)
		locked := runrig.OfType(evs, events.StepFinished)[0]
		require.Equal(t, "lock", locked.StepKey)
		finished := runrig.OfType(evs, events.RunFinished)
		require.Len(t, finished, 1)
		holds = append(holds, hold{locked.Seq, finished[0].Seq})
	}
	require.NotEmpty(t, holds, "someone wins the race")
	for i, a := range holds {
		for _, b := range holds[i+1:] {
			assert.True(t, a.to < b.from || b.to < a.from, "two runs held task T-7 at once: %v and %v", a, b)
		}
	}
	runrig.WaitFor(t, "every reservation to be released", func() bool { return len(reservations(t, log)) == 0 })
}
