package executor_test

import (
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/activity"
	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/executor"
	"github.com/orbitrun/orbit/internal/runrig"
	"github.com/orbitrun/orbit/internal/testkit"
)

// startWithJobs starts an orchestrator and a worker whose job.invoke finds
// the given jobs by name.
func startWithJobs(t *testing.T, log *events.Log, maxDepth int, jobs ...*assets.Job) {
	t.Helper()
	startWithConfig(t, executor.Config{Log: log, Settings: func() activity.Settings { return activity.Settings{MaxChildDepth: maxDepth} }}, jobs...)
}

// startWithConfig is startWithJobs with the orchestrator's config given.
func startWithConfig(t *testing.T, cfg executor.Config, jobs ...*assets.Job) {
	t.Helper()
	cfg.Root = t.TempDir()
	cfg.Jobs = jobsOf(jobs...)
	runrig.Start(t, cfg, activity.WorkerConfig{Log: cfg.Log})
}

// jobsOf looks jobs up by name for job.invoke, as Config.Jobs does.
func jobsOf(jobs ...*assets.Job) func(name, backend string) (*assets.Job, error) {
	byName := map[string]*assets.Job{}
	for _, j := range jobs {
		byName[j.Name] = j
	}
	return func(name, _ string) (*assets.Job, error) {
		if j, ok := byName[name]; ok {
			return j, nil
		}
		return nil, fmt.Errorf("job %q: %w", name, assets.ErrNotFound)
	}
}

// napJob is a job named nap whose one step (sleep) sleeps a minute, of
// which maxActive runs at a time.
func napJob(t *testing.T, maxActive int) *assets.Job {
	t.Helper()
	return jobSpec(t, "nap", `
  max_active_runs: `+strconv.Itoa(maxActive)+`
  steps:
    - id: sleep
      spec: {type: deterministic, action: sleep, config: {ms: 60000}}
`)
}

// runsOf returns the run.requested events of job, in log order.
func runsOf(t *testing.T, log *events.Log, job string) []events.Event {
	t.Helper()
	evs, err := log.Read(testkit.Context(t), events.FollowOptions{Filters: []string{events.TypeFilter(events.AggregateRun, events.RunRequested)}})
	require.NoError(t, err)
	var out []events.Event
	for _, ev := range evs {
		if ev.Job == job {
			out = append(out, ev)
		}
	}
	return out
}

func TestChildDepthIsBounded(t *testing.T) {
	t.Parallel()
	log := testkit.StartLog(t, events.Config{})
	job := runrig.ParseJob(t, testkit.EndlessJob)
	startWithJobs(t, log, 3, job)

	_, fin := runrig.RunJob(t, log, job, nil)
	require.Equal(t, events.StateFailed, fin.State)
	assert.Equal(t, events.KindLimit, fin.Error.Kind)
	assert.False(t, fin.Error.Retryable)
	assert.Contains(t, fin.Error.Message, `job.invoke: a run of "endless" here would be at depth 4, past engine.max_child_depth (3)`)

	runs := runsOf(t, log, "endless")
	require.Len(t, runs, 4, "the root and three levels of children")
	for i, ev := range runs {
		var d events.RunRequestedData
		require.NoError(t, ev.Decode(&d))
		assert.Equal(t, i, d.Depth)
		fin := runrig.WaitFinished(t, log, ev.RunID)
		assert.Equal(t, events.StateFailed, fin.State, "run at depth %d", i)
	}
}

// TestARecursiveFanOutRunsOneChainAtATime: a job with max_active_runs 1
// that fans out over invocations of itself lends its slot to one child at
// a time; the children run one after the other, not as a tree all at once.
func TestARecursiveFanOutRunsOneChainAtATime(t *testing.T) {
	t.Parallel()
	log := testkit.StartLog(t, events.Config{})
	job := jobSpec(t, "spread", `
  max_active_runs: 1
  default_input: {leaf: no}
  steps:
    - id: kids
      when: "{{ input.leaf }} != yes"
      fan_out:
        items: "a, b, c, d"
        max_workers: 4
        worker:
          id: kid
          spec: {type: deterministic, action: job.invoke, config: {job: spread, input: {leaf: yes}}}
      fan_in: {join: {mode: all}}
    - id: nap
      spec: {type: deterministic, action: sleep, config: {ms: 100}}
`)
	startWithJobs(t, log, 0, job)
	root, fin := runrig.RunJob(t, log, job, nil)
	require.Equal(t, events.StateSuccess, fin.State, "%+v", fin.Error)

	type span struct{ start, end uint64 }
	var spans []span
	for _, ev := range runsOf(t, log, "spread") {
		if ev.RunID == root {
			continue
		}
		h := runrig.History(t, log, ev.RunID)
		started, finished := runrig.OfType(h, events.RunStarted), runrig.OfType(h, events.RunFinished)
		require.Len(t, started, 1)
		require.Len(t, finished, 1)
		spans = append(spans, span{started[0].Seq, finished[0].Seq})
	}
	require.Len(t, spans, 4)
	slices.SortFunc(spans, func(a, b span) int { return int(a.start) - int(b.start) })
	for i := 1; i < len(spans); i++ {
		assert.Greater(t, spans[i].start, spans[i-1].end, "child %d started before child %d finished", i, i-1)
	}
}

// TestCancelReachesEveryDescendant cancels the root of a tree of runs:
// children waited for, detached ones, queued ones and grandchildren all end
// cancelled.
func TestCancelReachesEveryDescendant(t *testing.T) {
	t.Parallel()
	log := testkit.StartLog(t, events.Config{})
	nap := napJob(t, 2)
	middle := jobSpec(t, "middle", `
  steps:
    - id: detached
      spec: {type: deterministic, action: job.invoke, config: {job: nap, wait: false}}
    - id: waited
      spec: {type: deterministic, action: job.invoke, config: {job: nap}}
`)
	root := jobSpec(t, "root", `
  steps:
    - id: detached
      spec: {type: deterministic, action: job.invoke, config: {job: nap, wait: false}}
    - id: queued
      spec: {type: deterministic, action: job.invoke, config: {job: nap, wait: false}}
    - id: deeper
      spec: {type: deterministic, action: job.invoke, config: {job: middle}}
`)
	startWithJobs(t, log, 0, nap, middle, root)
	rootID := runrig.Submit(t, log, root, nil)
	runrig.WaitFor(t, "four nap runs, one queued", func() bool { return len(runsOf(t, log, "nap")) == 4 })
	runrig.WaitFor(t, "the middle run to wait", func() bool {
		return len(runsOf(t, log, "middle")) == 1 && runrig.Has(t, log, runsOf(t, log, "middle")[0].RunID, events.StepStarted, "waited")
	})

	require.NoError(t, executor.RequestCancel(testkit.Context(t), log, rootID, "test", "enough"))
	assert.Equal(t, events.StateCancelled, runrig.WaitFinished(t, log, rootID).State)
	for _, job := range []string{"middle", "nap"} {
		for _, ev := range runsOf(t, log, job) {
			done := make(chan events.RunFinishedData, 1)
			go func() { done <- runrig.WaitFinished(t, log, ev.RunID) }()
			select {
			case fin := <-done:
				assert.Equal(t, events.StateCancelled, fin.State, "%s run %s", job, ev.RunID)
			case <-time.After(20 * time.Second):
				t.Fatalf("%s run %s was not cancelled", job, ev.RunID)
			}
		}
	}
}

func TestPinEnvLeavesSecretsOut(t *testing.T) {
	t.Parallel()
	job := jobSpec(t, "envs", `
  steps:
    - id: a
      spec: {type: deterministic, action: echo, config: {a: "{{ env.GREETING }}", b: "{{env.MY_API_TOKEN}}", c: "{{ env.UNSET_HERE }}"}}
`)
	req, err := executor.NewRunRequest(job, nil, "test")
	require.NoError(t, err)
	env := map[string]string{"GREETING": "hi", "MY_API_TOKEN": "sk-1234567890", "OTHER": "x"}
	require.NoError(t, req.PinEnv(func(name string) (string, bool) { v, ok := env[name]; return v, ok }))
	assert.Equal(t, map[string]string{"GREETING": "hi"}, req.Env)
}
