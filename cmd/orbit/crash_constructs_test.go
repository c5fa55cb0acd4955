package main_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

// Each unit of work writes "began <x>" before its sleep and "<x>" into
// done.txt after it, so a unit the kill interrupted has begun twice but is
// done once, and a unit that finished before the kill has begun once.
const fanOutCrashJob = `
schemaVersion: 2
kind: Job
metadata: {name: crash_fan_out}
spec:
  steps:
    - id: per_item
      fan_out:
        items: "a b c d e f"
        max_workers: 2
        worker:
          id: work
          spec:
            type: shell
            program: sh
            args: ["-c", "echo $1 >> began.txt; sleep 0.7; echo $1 >> done.txt; printf 'did %s' $1", "sh", "{{ item }}"]
            allowed_programs: [sh]
      fan_in: {join: {mode: all}, collect: done}
    - id: summary
      spec: {type: deterministic, action: echo, config: {done: "{{ steps.done.output }}"}}
`

const loopCrashJob = `
schemaVersion: 2
kind: Job
metadata: {name: crash_loop}
spec:
  steps:
    - id: rounds
      retry: {max_attempts: 2, initial_backoff_ms: 50}
      loop:
        max_iterations: 5
        break_when: "{{ steps.work.output.stdout }} == round 4"
        steps:
          - id: work
            spec:
              type: shell
              program: sh
              args: ["-c", "echo $1 >> began.txt; sleep 0.7; echo $1 >> done.txt; printf 'round %s' $1", "sh", "{{ iteration }}"]
              allowed_programs: [sh]
          - id: note
            spec: {type: deterministic, action: echo, config: {after: "{{ steps.work.output.stdout }}"}}
`

// crashRun runs a job on `orbit serve`, SIGKILLs the engine once at least
// killAfter steps whose key starts with unit have finished, restarts it,
// and returns the finished run's output, the contents of began.txt and
// done.txt, and the units finished before the kill.
func crashRun(t *testing.T, job, unit string, killAfter int) (output any, began, done []string, p *testkit.Project, runID string, before map[string]bool) {
	p = testkit.NewProject(t)
	p.WriteFile(".orbit/jobs/job.yaml", job)
	engine := serve(t, p)
	name := strings.Fields(strings.SplitN(strings.SplitN(job, "name: ", 2)[1], "}", 2)[0])[0]
	runID = runJob(t, p, name, "--detach")
	before = map[string]bool{}
	if killAfter > 0 {
		waitFor(t, "work to be done before the kill", func() bool {
			for _, ev := range runEvents(t, p, runID, "--type", events.StepFinished) {
				if strings.HasPrefix(ev.StepKey, unit) {
					before[ev.StepKey] = true
				}
			}
			return len(before) >= killAfter
		})
		killEngine(t, engine)
		serve(t, p)
	}
	waitFor(t, "the run to finish", func() bool { return events.Terminal(runView(t, p, runID).State) })
	v := runView(t, p, runID)
	require.Equal(t, events.StateSuccess, v.State, "%+v", v.Error)
	return v.Output, readLines(t, filepath.Join(p.Root, "began.txt")), readLines(t, filepath.Join(p.Root, "done.txt")), p, runID, before
}

func activityStarts(t *testing.T, p *testkit.Project, runID string) map[string]int {
	starts := map[string]int{}
	for _, ev := range runEvents(t, p, runID, "--type", events.ActivityStarted) {
		starts[ev.StepKey]++
	}
	return starts
}

func assertSameJSON(t *testing.T, want, got any) {
	t.Helper()
	w, err := json.Marshal(want)
	require.NoError(t, err)
	g, err := json.Marshal(got)
	require.NoError(t, err)
	assert.JSONEq(t, string(w), string(g))
}

func TestKillInsideAFanOut(t *testing.T) {
	t.Parallel()
	want, _, _, _, _, _ := crashRun(t, fanOutCrashJob, "per_item/", 0)
	got, began, done, p, runID, before := crashRun(t, fanOutCrashJob, "per_item/", 2)

	assertSameJSON(t, want, got)
	for _, item := range []string{"a", "b", "c", "d", "e", "f"} {
		assert.Equal(t, 1, count(done, item), "item %s done exactly once: %v", item, done)
	}
	starts := activityStarts(t, p, runID)
	for i, item := range []string{"a", "b", "c", "d", "e", "f"} {
		key := "per_item/" + strconv.Itoa(i+1)
		// Every execution that began is on record: the first by its
		// step.started (no activity.started on an embedded store, step
		// protocol 5), each repeat by its activity.started. A recorded
		// start may not have begun: the kill came between
		// activity.started and the program's first line, when the next
		// items were just dispatched.
		assert.LessOrEqual(t, count(began, item), starts[key]+1, "every repeat of %s is on record", key)
		assert.LessOrEqual(t, starts[key], count(began, item), "one kill cuts at most one execution of %s short", key)
	}
	require.GreaterOrEqual(t, len(before), 2)
	for i, item := range []string{"a", "b", "c", "d", "e", "f"} {
		if before["per_item/"+strconv.Itoa(i+1)] {
			assert.Equal(t, 1, count(began, item), "item %s finished before the kill and never ran again", item)
		}
	}
	// Under step protocol 4 the items' steps, those dispatched again after
	// the kill included, name the fan-out's step.started by reference;
	// run show shows their inputs whole.
	fanID := ""
	for _, ev := range runEvents(t, p, runID, "--type", events.StepStarted) {
		var d events.StepStartedData
		require.NoError(t, ev.Decode(&d))
		switch {
		case ev.StepKey == "per_item":
			fanID = ev.ID
		case strings.HasPrefix(ev.StepKey, "per_item/"):
			require.NotNil(t, d.Item, ev.StepKey)
			assert.Equal(t, fanID, d.Item.Of, ev.StepKey)
			assert.Nil(t, d.Input, ev.StepKey)
		}
	}
	for _, s := range runView(t, p, runID).Steps {
		var i int
		if scanned, _ := fmt.Sscanf(s.Key, "per_item/%d", &i); scanned == 1 {
			assert.Equal(t, map[string]any{"item": []string{"a", "b", "c", "d", "e", "f"}[i-1]}, s.Input, s.Key)
		}
	}
	assert.Equal(t, 0, p.Orbit("replay", "--verify").Code)
}

func TestKillInsideALoop(t *testing.T) {
	t.Parallel()
	want, _, _, _, _, _ := crashRun(t, loopCrashJob, "rounds/", 0)
	got, began, done, p, runID, before := crashRun(t, loopCrashJob, "rounds/", 2)

	assertSameJSON(t, want, got)
	assert.Equal(t, []string{"1", "2", "3", "4"}, done, "each iteration done once, in order, and the loop broke after 4")
	require.NotEmpty(t, before)
	for key := range before {
		if strings.HasSuffix(key, "/work") {
			n := strings.Split(key, "/")[1]
			assert.Equal(t, 1, count(began, n), "iteration %s finished before the kill and never ran again", n)
		}
	}
	starts := activityStarts(t, p, runID)
	for i := 1; i <= 4; i++ {
		key, n := "rounds/"+strconv.Itoa(i)+"/work", count(began, strconv.Itoa(i))
		// As in a fan-out: the first execution has no activity.started,
		// each repeat has one, and a recorded start may not have begun,
		// when the kill came between activity.started and the program's
		// first line.
		assert.LessOrEqual(t, n, starts[key]+1, "every repeat of %s is on record", key)
		assert.LessOrEqual(t, starts[key], n, "one kill cuts at most one execution of %s short", key)
	}
	its := runEvents(t, p, runID, "--type", events.LoopIteration)
	assert.Len(t, its, 4)
	assert.Equal(t, 0, p.Orbit("replay", "--verify").Code)
}
