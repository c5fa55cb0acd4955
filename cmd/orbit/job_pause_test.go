package main_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

// TestAPausedJobQueuesItsNewRunsAcrossAKilledEngine: a run of a job that
// started before the job was paused finishes; one requested after it
// queues (run.queued says job_paused), also across a SIGKILL of the engine
// and a new one; job list and job show say paused; unpaused, the queued
// run runs to its end.
func TestAPausedJobQueuesItsNewRunsAcrossAKilledEngine(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	p.WriteFile(".orbit/jobs/napper.yaml", `
schemaVersion: 2
kind: Job
metadata: {name: napper, description: naps}
spec:
  max_active_runs: 5
  steps:
    - {id: nap, spec: {type: deterministic, action: sleep, config: {ms: 1500}}}
`)
	engine := serve(t, p)
	before := runJob(t, p, "napper", "--detach")
	waitFor(t, "the first run to start", func() bool { return runView(t, p, before).State == events.StateRunning })

	r := p.Orbit("job", "pause", "napper", "--reason", "deploy freeze")
	require.Equal(t, 0, r.Code, r.String())
	r = p.Orbit("job", "pause", "napper")
	require.Equal(t, 0, r.Code, r.String())
	assert.Contains(t, r.Stderr, "already paused")
	r = p.Orbit("job", "pause", "nosuch")
	assert.Equal(t, 2, r.Code, "no such job: %s", r)
	assert.Equal(t, "orbit: no job \"nosuch\" (orbit job list lists the jobs)\n", r.Stderr, "as every command says it")
	r = p.Orbit("job", "unpause", "nosuch")
	assert.Equal(t, 2, r.Code, "neither paused nor a job: %s", r)
	assert.Equal(t, "orbit: no job \"nosuch\" (orbit job list lists the jobs)\n", r.Stderr)

	held := runJob(t, p, "napper", "--detach")
	waitFor(t, "the first run to finish", func() bool { return runView(t, p, before).State == events.StateSuccess })
	waitFor(t, "the held run to be queued", func() bool {
		r := p.Orbit("run", "events", "--json", held)
		var evs []events.Event
		if r.Code != 0 || json.Unmarshal([]byte(r.Stdout), &evs) != nil {
			return false
		}
		for _, ev := range evs {
			var d events.RunQueuedData
			if ev.Type == events.RunQueued && ev.Decode(&d) == nil && d.JobPaused {
				return true
			}
		}
		return false
	})
	assert.Equal(t, events.StatePending, runView(t, p, held).State)
	list := p.Orbit("job", "list")
	require.Equal(t, 0, list.Code, list.String())
	assert.Contains(t, list.Stdout, "[paused] naps")
	show := p.Orbit("job", "show", "napper")
	require.Equal(t, 0, show.Code, show.String())
	assert.Contains(t, show.Stderr, "paused since")

	killEngine(t, engine)
	serve(t, p)
	time.Sleep(2 * time.Second)
	assert.Equal(t, events.StatePending, runView(t, p, held).State, "still held after the restart")

	r = p.Orbit("job", "unpause", "napper")
	require.Equal(t, 0, r.Code, r.String())
	waitFor(t, "the held run to finish", func() bool { return runView(t, p, held).State == events.StateSuccess })
	list = p.Orbit("job", "list")
	assert.NotContains(t, list.Stdout, "[paused]")

	// A job removed from the catalog while paused can still be unpaused.
	r = p.Orbit("job", "pause", "napper")
	require.Equal(t, 0, r.Code, r.String())
	require.NoError(t, os.Remove(filepath.Join(p.Root, ".orbit/jobs/napper.yaml")))
	r = p.Orbit("job", "unpause", "napper")
	assert.Equal(t, 0, r.Code, r.String())
}

// TestAPausedJobHoldsItsRunsOnEveryEngineOfTheCluster: two engines of the
// three-node cluster; a job paused through one holds the runs requested
// through the other, whichever engine's admission tries them, until it is
// unpaused.
func TestAPausedJobHoldsItsRunsOnEveryEngineOfTheCluster(t *testing.T) {
	t.Parallel()
	c := testkit.StartCluster(t, filepath.Join(t.TempDir(), "creds"))
	ps := clusterProjects(t, c, 2, "tock", tockJob)
	testkit.StartEngines(t, ps)
	r := ps[0].Orbit("job", "pause", "tock")
	require.Equal(t, 0, r.Code, r.String())
	var held []string
	for range 4 {
		r := ps[1].Orbit("job", "run", "tock", "--detach")
		require.Equal(t, 0, r.Code, r.String())
		held = append(held, strings.TrimSpace(r.Stdout))
	}
	time.Sleep(4 * time.Second)
	for _, id := range held {
		assert.Equal(t, events.StatePending, runView(t, ps[1], id).State, "run %s is held", id)
	}
	r = ps[1].Orbit("job", "unpause", "tock")
	require.Equal(t, 0, r.Code, r.String())
	for _, id := range held {
		waitFor(t, "run "+id+" to finish", func() bool { return runView(t, ps[0], id).State == events.StateSuccess })
	}
}
