package executor_test

import (
	"cmp"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/executor"
	"github.com/orbitrun/orbit/internal/runrig"
	"github.com/orbitrun/orbit/internal/testkit"
)

const sleeper = `
schemaVersion: 2
kind: Job
metadata: {name: sleeper}
spec:
  max_active_runs: 1
  steps:
    - id: nap
      spec:
        type: shell
        program: sh
        args: ["-c", "echo $$ > {{ input.name }}.pid; trap 'echo TERM >> {{ input.name }}.log' TERM; sleep 30 & wait; sleep 30"]
        allowed_programs: [sh]
`

// TestCancel cancels a running run whose shell step sleeps (its process is
// gone within the grace period) and a pending run queued behind it by
// max_active_runs (cancelled at once, nothing run).
func TestCancel(t *testing.T) {
	t.Parallel()
	log, dir := engineOver(t)
	job := runrig.ParseJob(t, sleeper)
	ctx := testkit.Context(t)

	running := runrig.Submit(t, log, job, map[string]any{"name": "first"})
	runrig.WaitFor(t, "the first run's step to start", func() bool { return runrig.Has(t, log, running, events.StepStarted, "nap") })
	pending := runrig.Submit(t, log, job, map[string]any{"name": "second"})
	runrig.WaitFor(t, "the second run to queue", func() bool { return runrig.Has(t, log, pending, events.RunQueued, "") })

	require.NoError(t, executor.RequestCancel(ctx, log, pending, "test", "not needed"))
	fin := runrig.WaitFinished(t, log, pending)
	assert.Equal(t, events.StateCancelled, fin.State)
	assert.Contains(t, fin.Error.Message, "cancelled by test: not needed")
	assert.False(t, runrig.Has(t, log, pending, events.RunStarted, ""), "a pending run is cancelled without starting")
	assert.False(t, runrig.Has(t, log, pending, events.StepStarted, ""))

	runrig.WaitFor(t, "the pid file", func() bool { _, err := os.Stat(filepath.Join(dir, "first.pid")); return err == nil })
	data, err := os.ReadFile(filepath.Join(dir, "first.pid"))
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	require.NoError(t, err)
	began := time.Now()
	require.NoError(t, executor.RequestCancel(ctx, log, running, "test", ""))
	fin = runrig.WaitFinished(t, log, running)
	assert.Equal(t, events.StateCancelled, fin.State)
	assert.True(t, testkit.WaitGone(pid, time.Second), "the step's process is gone")
	assert.Less(t, time.Since(began), 8*time.Second, "within the grace period")
	logged, _ := os.ReadFile(filepath.Join(dir, "first.log"))
	assert.Contains(t, string(logged), "TERM", "the process group got SIGTERM first")
	steps := runrig.DecodeAll[events.StepFinishedData](t, runrig.OfType(runrig.History(t, log, running), events.StepFinished))
	require.Len(t, steps, 1)
	assert.Equal(t, events.StateCancelled, steps[0].State)

	// A finished run never changes: a late cancel request is recorded but
	// nothing follows it.
	require.NoError(t, executor.RequestCancel(ctx, log, running, "test", "again"))
	assert.Len(t, runrig.OfType(runrig.History(t, log, running), events.RunFinished), 1)
}

func TestMaxActiveRunsQueuesInArrivalOrder(t *testing.T) {
	t.Parallel()
	log := runrig.EngineLog(t)
	job := jobSpec(t, "one_at_a_time", `
  max_active_runs: 1
  steps:
    - id: nap
      spec: {type: deterministic, action: sleep, config: {ms: 150}}
`)
	ids := []string{runrig.Submit(t, log, job, nil)}
	runrig.WaitFor(t, "the first run to start", func() bool { return runrig.Has(t, log, ids[0], events.RunStarted, "") })
	for range 3 {
		ids = append(ids, runrig.Submit(t, log, job, nil))
		time.Sleep(20 * time.Millisecond)
	}
	var starts, ends []time.Time
	for _, id := range ids {
		runrig.WaitFinished(t, log, id)
		evs := runrig.History(t, log, id)
		starts = append(starts, runrig.OfType(evs, events.RunStarted)[0].Time)
		ends = append(ends, runrig.OfType(evs, events.RunFinished)[0].Time)
	}
	for i := 1; i < len(ids); i++ {
		assert.True(t, runrig.Has(t, log, ids[i], events.RunQueued, ""), "run %d was queued", i)
		assert.False(t, starts[i].Before(ends[i-1]), "run %d started after run %d finished", i, i-1)
	}
}

func TestStepTimeoutAppliesToEveryActivity(t *testing.T) {
	t.Parallel()
	log := runrig.EngineLog(t)
	_, fin := runSpec(t, log, "slow", `
  steps:
    - id: nap
      timeout_seconds: 1
      spec: {type: deterministic, action: sleep, config: {ms: 5000}}
`)
	require.Equal(t, events.StateFailed, fin.State)
	assert.Equal(t, events.KindTimeout, fin.Error.Kind)
	assert.Contains(t, fin.Error.Message, "timed out after 1s")
}

func TestChildJobs(t *testing.T) {
	t.Parallel()
	log := testkit.StartLog(t, events.Config{})
	child := jobSpec(t, "child", `
  default_input: {greeting: hello}
  steps:
    - id: say
      spec: {type: deterministic, action: echo, config: {said: "{{ input.greeting }} {{ input.name }}"}}
`)
	startWithConfig(t, executor.Config{Log: log}, child)

	runID, fin := runSpec(t, log, "parent", `
  steps:
    - id: call
      spec: {type: deterministic, action: job.invoke, config: {job: child, input: {name: Ada}}}
    - id: detach
      spec: {type: deterministic, action: job.invoke, config: {job: child, input: {name: Bo}, wait: false}}
    - id: join
      spec: {type: deterministic, action: job.wait, config: {run_id: "{{ steps.detach.output.run_id }}"}}
    - id: report
      spec: {type: deterministic, action: echo, config: {a: "{{ steps.call.output.said }}", b: "{{ steps.join.output.said }}"}}
`)
	require.Equal(t, events.StateSuccess, fin.State, "%+v", fin.Error)
	assert.Equal(t, map[string]any{"a": "hello Ada", "b": "hello Bo"}, fin.Output)

	var started []events.StepStartedData
	for _, ev := range runrig.Starts(runrig.History(t, log, runID)) {
		d, _ := events.StepStart(ev)
		started = append(started, d)
	}
	require.Len(t, started, 4)
	childID := started[0].ChildRunID
	require.NotEmpty(t, childID)
	req := runrig.OfType(runrig.History(t, log, childID), events.RunRequested)[0]
	assert.Equal(t, runrig.OfType(runrig.History(t, log, runID), events.StepStarted)[0].ID, req.ParentID, "the child run hangs under the parent's step")
	var rd events.RunRequestedData
	require.NoError(t, req.Decode(&rd))
	assert.Equal(t, &events.RunLink{RunID: runID, StepKey: "call"}, rd.Parent)

	_, fin = runSpec(t, log, "orphan", `
  steps:
    - id: call
      spec: {type: deterministic, action: job.invoke, config: {job: nowhere}}
`)
	require.Equal(t, events.StateFailed, fin.State)
	assert.Equal(t, events.KindValidation, fin.Error.Kind)
	assert.Contains(t, fin.Error.Message, "nowhere")
}

// TestChildOfTheSameJobIsNotQueuedBehindItsParent: a job with
// max_active_runs 1 that invokes itself would wait forever for a child
// queued behind it.
func TestChildOfTheSameJobIsNotQueuedBehindItsParent(t *testing.T) {
	t.Parallel()
	log := testkit.StartLog(t, events.Config{})
	self := jobSpec(t, "recursive", `
  default_input: {depth: 0}
  steps:
    - id: again
      when: "{{ input.depth }} != 2"
      spec: {type: deterministic, action: job.invoke, config: {job: recursive, input: {depth: 2}}}
    - id: out
      spec: {type: deterministic, action: echo, config: {depth: "{{ input.depth }}"}}
`)
	startWithConfig(t, executor.Config{Log: log}, self)
	_, fin := runrig.RunJob(t, log, self, map[string]any{"depth": 1})
	require.Equal(t, events.StateSuccess, fin.State, "%+v", fin.Error)
}

// TestRequestsAtOnceStartInTheOrderTheLogRecordsThem: run requests that
// arrive together are handled at once, but a job's runs that wait for its
// one slot start in the order of their run.requested in the log, which is
// the order a restarted engine queues them in.
func TestRequestsAtOnceStartInTheOrderTheLogRecordsThem(t *testing.T) {
	t.Parallel()
	log := runrig.EngineLog(t)
	job := jobSpec(t, "one_at_a_time", `
  max_active_runs: 1
  steps:
    - id: echo
      spec: {type: deterministic, action: echo}
`)
	ids := make([]string, 16)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Go(func() { ids[i] = runrig.Submit(t, log, job, nil) })
	}
	wg.Wait()
	type run struct{ requested, started uint64 }
	var runs []run
	for _, id := range ids {
		runrig.WaitFinished(t, log, id)
		evs := runrig.History(t, log, id)
		runs = append(runs, run{runrig.OfType(evs, events.RunRequested)[0].Seq, runrig.OfType(evs, events.RunStarted)[0].Seq})
	}
	slices.SortFunc(runs, func(a, b run) int { return cmp.Compare(a.requested, b.requested) })
	for i := 1; i < len(runs); i++ {
		assert.Less(t, runs[i-1].started, runs[i].started, "the run requested %d-th started after the one before it", i)
	}
}
