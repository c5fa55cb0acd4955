package executor_test

import (
	"testing"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

// engineLog starts a log and an engine on it, over a workspace root of
// the test's own; both stop when the test ends.
func engineLog(t *testing.T) *events.Log {
	t.Helper()
	log := testkit.StartLog(t, events.Config{})
	startEngine(t, log, t.TempDir(), nil)
	return log
}

// runYAML runs the job written in yaml, on its default input, and waits
// for its run.finished event.
func runYAML(t *testing.T, log *events.Log, yaml string) (string, events.RunFinishedData) {
	t.Helper()
	return runJob(t, log, parseJob(t, yaml), nil)
}
