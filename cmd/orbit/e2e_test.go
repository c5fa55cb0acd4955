package main_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
	"github.com/orbitrun/orbit/projector"
)

// runJob runs `orbit job run` with args, which must exit 0, and returns
// the run's id, all its stdout prints.
func runJob(t *testing.T, p *testkit.Project, args ...string) string {
	t.Helper()
	r := p.Orbit(append([]string{"job", "run"}, args...)...)
	require.Equal(t, 0, r.Code, r.String())
	return strings.TrimSpace(r.Stdout)
}

// orbitJSON runs orbit with args, which must exit 0, and decodes its
// stdout into a T.
func orbitJSON[T any](t *testing.T, p *testkit.Project, args ...string) T {
	t.Helper()
	r := p.Orbit(args...)
	require.Equal(t, 0, r.Code, r.String())
	var v T
	require.NoError(t, json.Unmarshal([]byte(r.Stdout), &v), r.Stdout)
	return v
}

// runView runs `orbit run show --json` and decodes it.
func runView(t *testing.T, p *testkit.Project, id string) projector.RunView {
	t.Helper()
	args := []string{"run", "show", "--json"}
	if id != "" {
		args = append(args, id)
	}
	return orbitJSON[projector.RunView](t, p, args...)
}

func runEvents(t *testing.T, p *testkit.Project, id string, filters ...string) []events.Event {
	t.Helper()
	return orbitJSON[[]events.Event](t, p, append([]string{"run", "events", "--json", id}, filters...)...)
}

func types(evs []events.Event) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = ev.Type
	}
	return out
}

func TestHelloRunsEndToEnd(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)

	r := p.Orbit("job", "run", "hello", "--input", `{"name":"Ada"}`)
	require.Equal(t, 0, r.Code, r.String())
	runID := strings.TrimSpace(r.Stdout)
	assert.Len(t, runID, 26, "stdout carries the run id alone")
	for _, step := range []string{"greet", "compose", "announce"} {
		assert.Regexp(t, `(?m)^  success\s+`+step+`\s+\d+m?s$`, r.Stderr)
	}
	// The shell step is started, then ends; the orchestrator decides the
	// echoes, which end as they start (step protocol 4).
	assert.Regexp(t, `(?m)^  started\s+announce$`, r.Stderr)
	assert.NotRegexp(t, `(?m)^  started\s+greet$`, r.Stderr)
	assert.Contains(t, r.Stderr, "run "+runID+" (hello) success in")

	v := runView(t, p, runID)
	assert.Equal(t, events.StateSuccess, v.State)
	assert.Equal(t, map[string]any{"name": "Ada"}, v.Input)
	out, _ := v.Output.(map[string]any)
	assert.Equal(t, "Hello, Ada! Greeted Ada.\n", out["stdout"])
	require.Len(t, v.Steps, 3)
	assert.Equal(t, []string{"greet", "compose", "announce"}, []string{v.Steps[0].Key, v.Steps[1].Key, v.Steps[2].Key})

	evs := runEvents(t, p, runID)
	assert.Equal(t, "run.requested", evs[0].Type)
	assert.Equal(t, "run.started", evs[1].Type)
	assert.Equal(t, "run.finished", evs[len(evs)-1].Type)
	assert.Equal(t, []string{"step.finished", "step.finished", "step.finished"}, types(runEvents(t, p, runID, "--type", "step.finished")))
	assert.Equal(t, []string{"step.started", "shell.exited", "step.finished"},
		types(runEvents(t, p, runID, "--step", "announce")))

	// The default run of show/events is the latest one.
	assert.Equal(t, runID, runView(t, p, "").ID)

	r = p.Orbit("replay", "--verify")
	assert.Equal(t, 0, r.Code, r.String())
	assert.Contains(t, r.Stdout, "0 differences")
	runs := orbitJSON[[]projector.RunView](t, p, "run", "history", "--json")
	require.Len(t, runs, 1)
	assert.Equal(t, runID, runs[0].ID)
}

func TestJobRunJSONPrintsTheFinalView(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	p.WriteFile("input.json", `{"name":"file"}`)
	v := orbitJSON[projector.RunView](t, p, "run", "hello", "--json", "--input", "@"+filepath.Join(p.Root, "input.json"))
	assert.Equal(t, events.StateSuccess, v.State)
	assert.Equal(t, map[string]any{"name": "file"}, v.Input)
	assert.Len(t, v.Steps, 3)

	r := p.OrbitIn([]byte(`{"name":"stdin"}`), "run", "hello", "--json", "--input", "@-")
	require.Equal(t, 0, r.Code, r.String())
	require.NoError(t, json.Unmarshal([]byte(r.Stdout), &v), r.Stdout)
	assert.Equal(t, map[string]any{"name": "stdin"}, v.Input)
}

const failingJobs = `
schemaVersion: 2
kind: Job
metadata: {name: exits_three}
spec:
  steps:
    - id: first
      spec: {type: deterministic, action: echo, config: {ok: true}}
    - id: boom
      spec:
        type: shell
        program: sh
        args: ["-c", "echo about to fail >&2; exit 3"]
        allowed_programs: [sh]
    - id: never
      spec: {type: deterministic, action: echo}
`

const slowJob = `
schemaVersion: 2
kind: Job
metadata: {name: too_slow}
spec:
  steps:
    - id: hang
      timeout_seconds: 1
      spec:
        type: shell
        program: sh
        args: ["-c", "sleep 60 & echo $! > child.pid; sleep 60"]
        allowed_programs: [sh]
`

func TestFailedShellStepsFailTheRun(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	p.WriteFile(".orbit/jobs/exits_three.yaml", failingJobs)
	p.WriteFile(".orbit/jobs/too_slow.yaml", slowJob)

	r := p.Orbit("job", "run", "exits_three")
	assert.Equal(t, 1, r.Code, r.String())
	assert.Contains(t, r.Stderr, "exited with code 3 (expected [0]): about to fail")
	v := runView(t, p, strings.TrimSpace(r.Stdout))
	assert.Equal(t, events.StateFailed, v.State)
	require.NotNil(t, v.Error)
	assert.Equal(t, "boom", v.Error.StepKey, "the first concrete error names its step")
	assert.Equal(t, events.KindActivity, v.Error.Kind)
	assert.Len(t, v.Steps, 2, "nothing runs after the failed step")

	r = p.Orbit("job", "run", "too_slow")
	assert.Equal(t, 1, r.Code, r.String())
	assert.Contains(t, r.Stderr, "timed out after 1s")
	v = runView(t, p, strings.TrimSpace(r.Stdout))
	assert.Equal(t, events.StateFailed, v.State)
	assert.Equal(t, events.KindTimeout, v.Error.Kind)
	assert.Equal(t, events.StateTimeout, v.Steps[0].State)

	data, err := os.ReadFile(filepath.Join(p.Root, "child.pid"))
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	require.NoError(t, err)
	assert.True(t, testkit.WaitGone(pid, 5*time.Second), "the step's background child %d must be gone with its process group", pid)
}

func TestTwoCommandsOnOneRootShareAnEngine(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	var wg sync.WaitGroup
	results := make([]testkit.Result, 3)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = p.Orbit("job", "run", "hello")
		}()
	}
	wg.Wait()
	ids := map[string]bool{}
	for _, r := range results {
		require.Equal(t, 0, r.Code, r.String())
		ids[strings.TrimSpace(r.Stdout)] = true
	}
	assert.Len(t, ids, 3)
	runs := orbitJSON[[]projector.RunView](t, p, "run", "history", "--json")
	assert.Len(t, runs, 3)
}

func TestDetachedRunCanBeTailed(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	runID := runJob(t, p, "hello", "--detach")
	require.Len(t, runID, 26)
	r := p.Orbit("run", "tail", runID)
	require.Equal(t, 0, r.Code, r.String())
	lines := strings.Split(strings.TrimSpace(r.Stdout), "\n")
	assert.Contains(t, lines[0], "run.requested")
	assert.Contains(t, lines[len(lines)-1], "run.finished")
}
