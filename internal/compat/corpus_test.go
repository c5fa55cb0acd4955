package compat_test

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/activity"
	"github.com/orbitrun/orbit/agent"
	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/executor"
	"github.com/orbitrun/orbit/internal/testkit"
)

const corpus = "testdata/upstream"

// mainGo is the workspace file the agent jobs review and fix.
const mainGo = "package main\n\nfunc run() error {\n\terr := work()\n\treturn nil // TODO handle err\n}\n"

// outcome is what a run of a corpus job must show.
type outcome struct {
	state string
	check func(t *testing.T, r *result)
}

// result is a finished run of a corpus job.
type result struct {
	fin    events.RunFinishedData
	evs    []events.Event
	root   string
	output map[string]any
}

// keys returns the step keys of the run's events of type typ, in order.
func (r *result) keys(typ string) []string {
	var out []string
	for _, ev := range r.evs {
		if ev.Type == typ {
			out = append(out, ev.StepKey)
		}
	}
	return out
}

// finished returns the state each step key finished with, last attempt.
func (r *result) finished(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, ev := range r.evs {
		if ev.Type == events.StepFinished {
			var d events.StepFinishedData
			require.NoError(t, ev.Decode(&d))
			out[ev.StepKey] = d.State
		}
	}
	return out
}

// outcomes are the corpus's promises, one per job file.
var outcomes = map[string]outcome{
	"fanout_fanin": {events.StateSuccess, func(t *testing.T, r *result) {
		assert.Equal(t, float64(5), r.output["first"], "orbit")
		assert.Equal(t, float64(9), r.output["last"], "groundhog")
		assert.Equal(t, []string{"per_word/1", "per_word/2", "per_word/3", "per_word/4"}, r.keys(events.StepStarted)[1:5],
			"after the fan-out's step.started, its items' in item order")
		assert.Empty(t, r.keys(events.FanoutItem), "no fanout.item under step protocol 2")
	}},
	"parallel_branches": {events.StateSuccess, func(t *testing.T, r *result) {
		assert.Equal(t, "lint ok\n", r.output["lint"])
		assert.Equal(t, "unit ok\n", r.output["unit"])
	}},
	"parallel_branches_failing": {events.StateFailed, func(t *testing.T, r *result) {
		assert.Equal(t, "checks/unit", r.fin.Error.StepKey)
		st := r.finished(t)
		assert.Equal(t, events.StateSuccess, st["checks/lint"], "the other branch ran to its end")
		assert.NotContains(t, st, "never")
		log, err := os.ReadFile(filepath.Join(r.root, "failures.log"))
		require.NoError(t, err)
		assert.Equal(t, "parallel_branches_failing checks/unit activity\n", string(log), "failure_activity ran once")
		assert.Equal(t, events.StateSuccess, st[executor.FailureActivityKey])
	}},
	"retry_backoff": {events.StateSuccess, func(t *testing.T, r *result) {
		var delays []int64
		for _, ev := range r.evs {
			if ev.Type == events.StepRetryScheduled {
				var d events.StepRetryScheduledData
				require.NoError(t, ev.Decode(&d))
				delays = append(delays, d.DelayMS)
			}
		}
		assert.Equal(t, []int64{100, 200}, delays, "exponential backoff before attempts 2 and 3")
		assert.Equal(t, "attempt 3\n", r.output["stdout"])
	}},
	"loop_no_converge": {events.StateSuccess, func(t *testing.T, r *result) {
		assert.Len(t, r.keys(events.LoopIteration), 3, "every iteration of max_iterations ran")
		assert.Equal(t, []string{"refine", "refine/1/score", "refine/2/score", "refine/3/score"}, r.keys(events.StepStarted))
	}},
	"loop_review_fix": {events.StateSuccess, func(t *testing.T, r *result) {
		assert.Len(t, r.keys(events.LoopIteration), 2, "the second review broke the loop")
		assert.Equal(t, []string{"review_fix/2/fix"}, r.keys(events.StepSkipped), "nothing to fix after blocking=0")
		data, err := os.ReadFile(filepath.Join(r.root, "main.go"))
		require.NoError(t, err)
		assert.Contains(t, string(data), "return err\n", "the fixer's edit is in the workspace")
		assert.Equal(t, "reviewed: blocking=0", r.output["review"].(map[string]any)["final_message"])
	}},
	"conditional_on_value": {events.StateSuccess, func(t *testing.T, r *result) {
		assert.Equal(t, []string{"slow_path"}, r.keys(events.StepSkipped))
		assert.Equal(t, []any{events.StateSuccess, events.StateSkipped}, []any{r.output["fast"], r.output["slow"]})
	}},
	"orphan_subroutine": {events.StateSuccess, func(t *testing.T, r *result) {
		assert.Equal(t, "10", r.output["stdout"], "len(subroutine), from its default input")
	}},
	"tool_denial_no_retry": {events.StateFailed, func(t *testing.T, r *result) {
		assert.Equal(t, events.KindToolDenied, r.fin.Error.Kind)
		assert.False(t, r.fin.Error.Retryable)
		assert.Equal(t, []string{"review"}, r.keys(events.StepStarted), "one attempt, retry policy or not")
		assert.Len(t, r.keys(events.ToolDenied), 1)
		data, err := os.ReadFile(filepath.Join(r.root, "main.go"))
		require.NoError(t, err)
		assert.Equal(t, mainGo, string(data), "the denied write did not happen")
	}},
}

// TestUpstreamCorpus loads the corpus as a project's env layer (every
// file must load, with the seeded fsProfiles known) and runs each job on
// its own engine: an embedded JetStream log, the orchestrator and a
// worker, agents on the replay provider with the job's fixture.
func TestUpstreamCorpus(t *testing.T) {
	t.Parallel()
	activities, err := filepath.Abs(filepath.Join(corpus, "activities"))
	require.NoError(t, err)
	jobs, err := filepath.Abs(filepath.Join(corpus, "jobs"))
	require.NoError(t, err)
	var project assets.Config
	cat, err := assets.OpenCatalog(t.TempDir(), assets.CatalogOptions{
		ActivityDir: activities, JobDir: jobs, FSProfiles: project.FSProfileNames(),
	})
	require.NoError(t, err)
	require.Empty(t, cat.Problems(), "every corpus file loads")

	files, err := filepath.Glob(filepath.Join(jobs, "*.yaml"))
	require.NoError(t, err)
	var names []string
	for _, f := range files {
		names = append(names, strings.TrimSuffix(filepath.Base(f), ".yaml"))
	}
	sort.Strings(names)
	var want []string
	for name := range outcomes {
		want = append(want, name)
	}
	sort.Strings(want)
	require.Equal(t, want, names, "every corpus job has a promised outcome, and every outcome a job")

	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			job, err := cat.Job(name)
			require.NoError(t, err)
			r := runCorpusJob(t, job, project)
			oc := outcomes[name]
			require.Equal(t, oc.state, r.fin.State, "%+v", r.fin.Error)
			oc.check(t, r)
		})
	}
}

// runCorpusJob runs job on a fresh engine whose workspace holds main.go.
func runCorpusJob(t *testing.T, job *assets.Job, project assets.Config) *result {
	t.Helper()
	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "main.go"), []byte(mainGo), 0o644))
	env := map[string]string{}
	if fixture, err := filepath.Abs(filepath.Join(corpus, "fixtures", job.Name+".json")); err == nil {
		if _, err := os.Stat(fixture); err == nil {
			env["ORBIT_REPLAY_FIXTURE"] = fixture
		}
	}
	lookup := func(name string) (string, bool) { v, ok := env[name]; return v, ok }
	profiles := map[string]agent.FSProfile{}
	for name, p := range project.Profiles() {
		profiles[name] = agent.FSProfile{Name: name, Read: p.Read, Write: p.Write}
	}

	log := testkit.StartLog(t, events.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	orch := executor.NewOrchestrator(executor.Config{Log: log, Root: root, Env: lookup})
	worker := activity.NewWorker(activity.WorkerConfig{Log: log, Env: lookup,
		Settings: func() activity.Settings { return activity.Settings{FSProfiles: profiles} }})
	for _, run := range []func(context.Context) error{worker.Run, orch.Run} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			assert.NoError(t, run(ctx))
		}()
	}
	t.Cleanup(func() { cancel(); wg.Wait() })

	req, err := executor.NewRunRequest(job, nil, "compat")
	require.NoError(t, err)
	tctx := testkit.Context(t)
	feed, err := log.Follow(tctx, events.FollowOptions{Filters: []string{events.EventSubject(events.AggregateRun, req.RunID, events.RunFinished)}})
	require.NoError(t, err)
	defer feed.Stop()
	require.NoError(t, executor.Submit(tctx, log, req))
	r := &result{root: root}
	select {
	case ev := <-feed.Events():
		require.NoError(t, ev.Decode(&r.fin))
	case <-tctx.Done():
		t.Fatalf("run of %s did not finish", job.Name)
	}
	r.evs, err = log.Read(tctx, events.FollowOptions{Filters: []string{events.RunFilter(req.RunID)}})
	require.NoError(t, err)
	r.output, _ = r.fin.Output.(map[string]any)
	return r
}
