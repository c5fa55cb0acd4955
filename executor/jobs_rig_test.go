package executor_test

import (
	"testing"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/runrig"
	"github.com/orbitrun/orbit/internal/testkit"
)

// engineOver starts a log and an engine on it over a workspace root of
// the test's own, and returns the log and the root.
func engineOver(t *testing.T) (*events.Log, string) {
	t.Helper()
	log := testkit.StartLog(t, events.Config{})
	root := t.TempDir()
	runrig.StartEngine(t, log, root, nil)
	return log, root
}

// jobSpec parses the job named name whose spec is spec, YAML written at
// the indentation of the spec's fields.
func jobSpec(t *testing.T, name, spec string) *assets.Job {
	t.Helper()
	return runrig.ParseJob(t, "schemaVersion: 2\nkind: Job\nmetadata: {name: "+name+"}\nspec:"+spec)
}

// runSpec runs jobSpec(name, spec) on its default input and waits for the
// run's end.
func runSpec(t *testing.T, log *events.Log, name, spec string) (string, events.RunFinishedData) {
	t.Helper()
	return runrig.RunJob(t, log, jobSpec(t, name, spec), nil)
}
