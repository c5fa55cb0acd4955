package executor_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/executor"
	"github.com/orbitrun/orbit/internal/runrig"
	"github.com/orbitrun/orbit/internal/testkit"
)

// hookActivity writes the failure it is given to hook.log in the
// workspace, after pause seconds, and exits with code.
func hookActivity(t *testing.T, pause, code string) *assets.Activity {
	t.Helper()
	a, err := assets.ParseActivity("notify.yaml", []byte(`
schemaVersion: 2
kind: Activity
metadata: {name: notify}
spec:
  type: shell
  program: sh
  args: ["-c", "sleep `+pause+`; printf '%s|%s|%s|%s|%s\n' \"$1\" \"$2\" \"$3\" \"$4\" \"$5\" >> hook.log; exit `+code+`", "sh",
         "{{ input.run_id }}", "{{ input.job }}", "{{ input.step_key }}", "{{ input.error.kind }}", "{{ input.error.message }}"]
  allowed_programs: [sh]
`))
	require.NoError(t, err)
	return a
}

// hookJob is a job whose failure_activity is hook and whose second step
// runs body.
func hookJob(t *testing.T, hook *assets.Activity, body string) *assets.Job {
	t.Helper()
	job, err := assets.ParseJob("hooked.yaml", []byte(`
schemaVersion: 2
kind: Job
metadata: {name: hooked}
spec:
  state: enabled
  failure_activity: notify
  steps:
    - id: prepare
      spec: {type: deterministic, action: echo}
    - id: build
      spec: `+body+`
`), func(string) (*assets.Activity, error) { return hook, nil })
	require.NoError(t, err)
	return job
}

const failingBuild = `{type: shell, program: sh, args: ["-c", "echo compile error >&2; exit 2"], allowed_programs: [sh]}`

// hookLines returns the lines of hook.log in dir.
func hookLines(t *testing.T, dir string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "hook.log"))
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	return strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
}

// TestFailureActivityRunsOnceWhenARunFails: the hook runs as the step
// failure_activity with the failure as input, its own failure changes
// nothing, and it does not run for a run that succeeds or is cancelled.
func TestFailureActivityRunsOnceWhenARunFails(t *testing.T) {
	t.Parallel()
	log := testkit.StartLog(t, events.Config{})
	for _, tc := range []struct{ name, code string }{{"hook succeeds", "0"}, {"hook fails", "7"}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			runrig.StartEngine(t, log, dir, nil)
			runID, fin := runrig.RunJob(t, log, hookJob(t, hookActivity(t, "0", tc.code), failingBuild), nil)
			require.Equal(t, events.StateFailed, fin.State)
			assert.Equal(t, "build", fin.Error.StepKey, "the run ends with the failure that triggered the hook")
			assert.Equal(t, events.KindActivity, fin.Error.Kind)

			lines := hookLines(t, dir)
			require.Len(t, lines, 1)
			assert.Equal(t, runID+"|hooked|build|activity|"+fin.Error.Message, lines[0])
			evs := runrig.History(t, log, runID)
			var hookEvents []string
			for _, ev := range evs {
				if ev.StepKey == executor.FailureActivityKey {
					hookEvents = append(hookEvents, ev.Type)
				}
			}
			assert.Contains(t, hookEvents, events.StepStarted)
			assert.Contains(t, hookEvents, events.StepFinished)
			for _, ev := range runrig.OfType(evs, events.StepStarted) {
				if ev.StepKey == executor.FailureActivityKey {
					var d events.StepStartedData
					require.NoError(t, ev.Decode(&d))
					in, _ := d.Input.(map[string]any)
					assert.Equal(t, "build", in["step_key"], "the hook's command carries the failure as its input (a deterministic action reads it there)")
					assert.Equal(t, runID, in["run_id"])
				}
			}
			finished := runrig.DecodeAll[events.StepFinishedData](t, runrig.OfType(evs, events.StepFinished))
			assert.Equal(t, map[bool]string{true: "success", false: "failed"}[tc.code == "0"], finished[len(finished)-1].State)
			assert.Equal(t, events.RunFinished, evs[len(evs)-1].Type, "the hook runs before the run ends")
		})
	}
	t.Run("not on success or cancel", func(t *testing.T) {
		dir := t.TempDir()
		runrig.StartEngine(t, log, dir, nil)
		hook := hookActivity(t, "0", "0")
		_, fin := runrig.RunJob(t, log, hookJob(t, hook, `{type: shell, program: "true", allowed_programs: ["true"]}`), nil)
		require.Equal(t, events.StateSuccess, fin.State, "%+v", fin.Error)

		runID := runrig.Submit(t, log, hookJob(t, hook, `{type: shell, program: sleep, args: ["30"], allowed_programs: [sleep]}`), nil)
		runrig.WaitFor(t, "the build to start", func() bool { return runrig.Has(t, log, runID, events.StepStarted, "build") })
		require.NoError(t, executor.RequestCancel(testkit.Context(t), log, runID, "test", "enough"))
		assert.Equal(t, events.StateCancelled, runrig.WaitFinished(t, log, runID).State)
		assert.Empty(t, hookLines(t, dir))
		assert.False(t, runrig.Has(t, log, runID, events.StepStarted, executor.FailureActivityKey))
	})
}

// TestFailureActivityIsNotRunTwiceAcrossARestart stops the engine while
// the hook runs and starts another: the run ends failed with the hook
// completed exactly once.
func TestFailureActivityIsNotRunTwiceAcrossARestart(t *testing.T) {
	t.Parallel()
	r := newRestartRig(t)
	log, dir := r.log, r.dir
	runID := r.submit(t, hookJob(t, hookActivity(t, "1", "0"), failingBuild), nil)
	runrig.WaitFor(t, "the hook to start", func() bool { return runrig.Has(t, log, runID, events.StepStarted, executor.FailureActivityKey) })
	second := r.restart(t)
	fin := runrig.WaitFinished(t, log, runID)
	require.Equal(t, events.StateFailed, fin.State)
	assert.Equal(t, "build", fin.Error.StepKey)
	second.Stop()
	assert.Len(t, hookLines(t, dir), 1, "the hook completed once")

	// A third engine resuming the finished run runs nothing.
	before := len(runrig.History(t, log, runID))
	third := runrig.StartEngine(t, log, dir, resuming(runID))
	time.Sleep(500 * time.Millisecond)
	third.Stop()
	assert.Len(t, runrig.History(t, log, runID), before)
	assert.Len(t, hookLines(t, dir), 1)
}
