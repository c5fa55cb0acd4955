package executor_test

import (
	"context"
	"testing"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/runrig"
	"github.com/orbitrun/orbit/internal/testkit"
)

// restartRig is a log and a workspace root on which a test runs a job on
// one engine, stops that engine mid-run and starts another, which resumes
// the run.
type restartRig struct {
	log   *events.Log
	dir   string // the engines' workspace root
	runID string
	first *runrig.Engine
}

func newRestartRig(t *testing.T) *restartRig {
	t.Helper()
	return &restartRig{log: testkit.StartLog(t, events.Config{}), dir: t.TempDir()}
}

// submit starts the first engine and submits job, with input, to it.
func (r *restartRig) submit(t *testing.T, job *assets.Job, input any) string {
	t.Helper()
	r.first = runrig.StartEngine(t, r.log, r.dir, nil)
	r.runID = runrig.Submit(t, r.log, job, input)
	return r.runID
}

// restart stops the first engine and starts another, which resumes the
// run, and returns it.
func (r *restartRig) restart(t *testing.T) *runrig.Engine {
	t.Helper()
	r.first.Stop()
	return runrig.StartEngine(t, r.log, r.dir, resuming(r.runID))
}

// resuming is the list of active runs of an engine that resumes runID.
func resuming(runID string) func(context.Context) ([]string, error) {
	return func(context.Context) ([]string, error) { return []string{runID}, nil }
}
