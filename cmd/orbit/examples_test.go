package main_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
	"github.com/orbitrun/orbit/projector"
)

// stepsByKey indexes a run view's steps by instance key.
func stepsByKey(v projector.RunView) map[string]projector.StepView {
	m := make(map[string]projector.StepView, len(v.Steps))
	for _, s := range v.Steps {
		m[s.Key] = s
	}
	return m
}

// exampleChecks holds, for every seeded example job that runs to the end on
// its own, one check of the construct it shows.
var exampleChecks = map[string]func(t *testing.T, p *testkit.Project, v projector.RunView){
	"example_when": func(t *testing.T, _ *testkit.Project, v projector.RunView) {
		steps := stepsByKey(v)
		assert.Equal(t, events.StateSkipped, steps["quick_check"].State)
		assert.Equal(t, events.StateSuccess, steps["full_check"].State)
		assert.Equal(t, events.StateSuccess, steps["sign_off"].State, "a condition on steps.<id>.state")
		assert.Equal(t, events.StateSkipped, steps["switched_off"].State)
		out := v.Output.(map[string]any)
		assert.Equal(t, "skipped", out["quick_check"])
		assert.Equal(t, "success", out["sign_off"])
	},
	"example_retry": func(t *testing.T, p *testkit.Project, v projector.RunView) {
		assert.Equal(t, 3, stepsByKey(v)["flaky"].Attempts)
		assert.Equal(t, "attempt 3: done\n", v.Output.(map[string]any)["flaky_said"])
		var delays []int64
		for _, ev := range runEvents(t, p, v.ID, "--type", events.StepRetryScheduled) {
			var d events.StepRetryScheduledData
			require.NoError(t, ev.Decode(&d))
			delays = append(delays, d.DelayMS)
		}
		assert.Equal(t, []int64{200, 300}, delays, "exponential from 200 ms, capped at 300 ms")
	},
	"example_parallel": func(t *testing.T, _ *testkit.Project, v projector.RunView) {
		steps := stepsByKey(v)
		assert.Equal(t, events.StateFailed, steps["checks/mirror_check"].State)
		assert.Equal(t, events.StateSuccess, steps["checks"].State, "a quorum of 2 of 3")
		out := v.Output.(map[string]any)
		assert.Equal(t, "lint: 0 warnings\n", out["lint"])
		assert.Equal(t, "tests: 42 passed\n", out["tests"])
		assert.Equal(t, "failed", out["mirror"])
		succeeded := out["succeeded"].(map[string]any)
		assert.Len(t, succeeded, 2, "the parallel output holds the successful branches")
		assert.Contains(t, succeeded, "lint")
		assert.Contains(t, succeeded, "unit_tests")
	},
	"example_fan_out": func(t *testing.T, _ *testkit.Project, v projector.RunView) {
		out := v.Output.(map[string]any)
		var lines []string
		for _, r := range out["results"].([]any) {
			lines = append(lines, r.(map[string]any)["stdout"].(string))
		}
		assert.Equal(t, []string{"Oslo has 4 letters", "Nairobi has 7 letters", "Lima has 4 letters",
			"Montevideo has 10 letters", "Kyoto has 5 letters"}, lines, "collected in item order")
		assert.Equal(t, "Oslo has 4 letters", out["first"])
		for i := 1; i <= 5; i++ {
			assert.Contains(t, stepsByKey(v), "count_letters/"+strconv.Itoa(i), "one worker per item")
		}
	},
	"example_loop": func(t *testing.T, _ *testkit.Project, v projector.RunView) {
		var keys []string
		for _, s := range v.Steps {
			if strings.HasPrefix(s.Key, "review_fix/") {
				keys = append(keys, s.Key+"="+s.State)
			}
		}
		assert.Equal(t, []string{"review_fix/1/review=success", "review_fix/1/fix=success",
			"review_fix/2/review=success", "review_fix/2/fix=skipped"}, keys, "break_when ended it after iteration 2")
		assert.Equal(t, map[string]any{"verdict": "approved\n", "stages_done": float64(3), "last_fix": "skipped",
			"last_stage": "publish"}, v.Output)
	},
	"example_child_job": func(t *testing.T, p *testkit.Project, v projector.RunView) {
		require.Len(t, v.Children, 2)
		for i, key := range []string{"greet_first", "start_second"} {
			child := runView(t, p, v.Children[i])
			assert.Equal(t, "hello", child.Job)
			assert.Equal(t, events.StateSuccess, child.State)
			assert.Equal(t, &events.RunLink{RunID: v.ID, StepKey: key}, child.Parent)
		}
		assert.Equal(t, map[string]any{"first": "Hello, Ada! Greeted Ada.\n", "second": "Hello, Grace! Greeted Grace.\n"}, v.Output)
	},
	"example_agent": func(t *testing.T, p *testkit.Project, v projector.RunView) {
		out := v.Output.(map[string]any)
		assert.Equal(t, "end_turn", out["stop_reason"])
		assert.Equal(t, float64(3), out["turns"])
		assert.Equal(t, float64(2), out["tool_calls"])
		path := filepath.Join(p.Root, "hello.txt")
		data, err := os.ReadFile(path)
		require.NoError(t, err, "the agent wrote hello.txt into the project root")
		assert.NotEmpty(t, data)
		require.NoError(t, os.Remove(path))

		m := orbitJSON[projector.Metrics](t, p, "metrics", "--json")
		assert.GreaterOrEqual(t, m.Models["replay"].Turns, int64(3), "the metrics view counts the turns")
		assert.GreaterOrEqual(t, m.Tools["fs.write"].Calls, int64(1))
	},
	"example_recovery": func(t *testing.T, p *testkit.Project, v projector.RunView) {
		steps := stepsByKey(v)
		assert.Equal(t, 3, steps["deploy"].Attempts, "two attempts, the recovery, one more")
		rec := steps["deploy/recovery"]
		assert.Equal(t, events.StateSuccess, rec.State)
		assert.Equal(t, "activity:example_repair", rec.Target)
		assert.Contains(t, rec.Output.(map[string]any)["stdout"], "repaired deploy after attempt 2 failed (activity)")
		assert.Equal(t, "attempt 3: deployed\n", v.Output.(map[string]any)["deploy"])
		left, err := filepath.Glob(filepath.Join(p.Root, ".orbit", "state", "examples", v.ID+".*"))
		require.NoError(t, err)
		assert.Empty(t, left, "the step removes the marker it used")
	},
}

// TestExamplesRun runs every seeded example job (but example_slow, which is
// for `orbit run cancel`, and example_cli_agent, which needs the claude CLI
// and a model: TestSeededExampleCLIAgentRunsClaudeCode) with no input, as a
// user would, and checks the construct each one shows.
func TestExamplesRun(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)

	r := p.Orbit("job", "list", "--json")
	require.Equal(t, 0, r.Code, r.String())
	var jobs []struct{ Name, Layer string }
	require.NoError(t, json.Unmarshal([]byte(r.Stdout), &jobs), r.Stdout)
	var seeded, checked []string
	for _, j := range jobs {
		if j.Layer == "seeded" && strings.HasPrefix(j.Name, "example_") && j.Name != "example_slow" && j.Name != "example_cli_agent" {
			seeded = append(seeded, j.Name)
		}
	}
	for name := range exampleChecks {
		checked = append(checked, name)
	}
	sort.Strings(checked)
	require.Equal(t, seeded, checked, "every seeded example has a check")

	before := dirNames(t, p.Root)
	t.Run("run", func(t *testing.T) {
		for _, name := range checked {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				began := time.Now()
				r := p.Orbit("job", "run", name, "--json")
				require.Equal(t, 0, r.Code, r.String())
				var v projector.RunView
				require.NoError(t, json.Unmarshal([]byte(r.Stdout), &v), r.Stdout)
				require.Equal(t, events.StateSuccess, v.State, r.Stderr)
				assert.Less(t, time.Since(began), 10*time.Second, "an example runs quickly")
				exampleChecks[name](t, p, v)
			})
		}
	})
	assert.Equal(t, before, dirNames(t, p.Root), "the examples leave nothing in the project directory")
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// TestExampleSlowCancels starts example_slow detached, waits until its
// step's process runs, and cancels the run.
func TestExampleSlowCancels(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	runID := runJob(t, p, "example_slow", "--detach")

	require.Eventually(t, func() bool {
		return len(runEvents(t, p, runID, "--type", events.StepStarted)) > 0
	}, 15*time.Second, 50*time.Millisecond, "the nap step to start")

	began := time.Now()
	r := p.Orbit("run", "cancel", runID)
	require.Equal(t, 0, r.Code, r.String())
	assert.Equal(t, runID, strings.TrimSpace(r.Stdout))
	assert.Less(t, time.Since(began), 8*time.Second, "sleep stops on SIGTERM, well within the grace period")

	v := runView(t, p, runID)
	assert.Equal(t, events.StateCancelled, v.State)
	require.Len(t, v.Steps, 1)
	assert.Equal(t, events.StateCancelled, v.Steps[0].State)
}
