package executor_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/runrig"
)

func TestWhenSkipsAndCountsAsSuccess(t *testing.T) {
	t.Parallel()
	log := runrig.EngineLog(t)
	runID, fin := runSpec(t, log, "w", `
  default_input: {mode: "fast && slow == fast"}
  steps:
    - id: check
      spec: {type: deterministic, action: echo, config: {verdict: "a == b"}}
    - id: skipped
      when: "{{ steps.check.output.verdict }} == approved"
      spec: {type: deterministic, action: fail}
    - id: taken
      when: "{{ input.mode }} != slow && {{ steps.skipped.state }} == skipped"
      spec: {type: deterministic, action: echo, config: {ran: true}}
`)
	require.Equal(t, events.StateSuccess, fin.State, "%+v", fin.Error)
	assert.Equal(t, true, fin.Output.(map[string]any)["ran"])
	evs := runrig.History(t, log, runID)
	skipped := runrig.OfType(evs, events.StepSkipped)
	require.Len(t, skipped, 1)
	assert.Equal(t, "skipped", skipped[0].StepKey)
	for _, ev := range runrig.OfType(evs, events.StepStarted) {
		assert.NotEqual(t, "skipped", ev.StepKey)
	}
}

func TestRetryBacksOffAndSucceedsOnAttemptThree(t *testing.T) {
	t.Parallel()
	log := runrig.EngineLog(t)
	runID, fin := runSpec(t, log, "r", `
  steps:
    - id: flaky
      retry: {max_attempts: 4, initial_backoff_ms: 100, backoff_cap_ms: 150}
      spec:
        type: shell
        program: sh
        args: ["-c", "test $ORBIT_STEP_ATTEMPT -ge 3 || { echo attempt $ORBIT_STEP_ATTEMPT failed >&2; exit 1; }"]
        allowed_programs: [sh]
`)
	require.Equal(t, events.StateSuccess, fin.State, "%+v", fin.Error)
	evs := runrig.History(t, log, runID)
	retries := runrig.DecodeAll[events.StepRetryScheduledData](t, runrig.OfType(evs, events.StepRetryScheduled))
	require.Len(t, retries, 2)
	assert.Equal(t, 2, retries[0].Attempt)
	assert.Equal(t, int64(100), retries[0].DelayMS)
	assert.Equal(t, 3, retries[1].Attempt)
	assert.Equal(t, int64(150), retries[1].DelayMS, "doubled to 200, capped at 150")
	assert.Contains(t, retries[0].Cause.Message, "attempt 1 failed")
	finished := runrig.DecodeAll[events.StepFinishedData](t, runrig.OfType(evs, events.StepFinished))
	require.Len(t, finished, 3)
	assert.Equal(t, []string{"failed", "failed", "success"}, []string{finished[0].State, finished[1].State, finished[2].State})
	// The waits really happened: attempt 3 started no earlier than 250ms after attempt 1 ended.
	starts := runrig.OfType(evs, events.StepStarted)
	assert.GreaterOrEqual(t, starts[2].Time.Sub(runrig.OfType(evs, events.StepFinished)[0].Time), 250*time.Millisecond)
}

func TestRetryStopsWhenExhaustedOrNotRetryable(t *testing.T) {
	t.Parallel()
	log := runrig.EngineLog(t)
	for name, tc := range map[string]struct {
		retryable bool
		attempts  int
	}{"exhausted": {true, 3}, "not retryable": {false, 1}} {
		t.Run(name, func(t *testing.T) {
			runID, fin := runrig.RunJob(t, log, jobSpec(t, "x", `
  steps:
    - id: broken
      retry: {max_attempts: 3, initial_backoff_ms: 10, backoff_strategy: linear}
      spec: {type: deterministic, action: fail, config: {message: nope, retryable: `+strconv.FormatBool(tc.retryable)+`}}
`), nil)
			assert.Equal(t, events.StateFailed, fin.State)
			assert.Equal(t, "nope", fin.Error.Message)
			evs := runrig.History(t, log, runID)
			assert.Len(t, runrig.OfType(evs, events.StepFinished), tc.attempts)
			assert.Len(t, runrig.OfType(evs, events.StepRetryScheduled), tc.attempts-1)
		})
	}
}

const parallelJob = `
schemaVersion: 2
kind: Job
metadata: {name: p}
spec:
  steps:
    - id: fanned
      parallel:
        join: JOIN
        branches:
          - id: branch_a
            spec: {type: deterministic, action: echo, config: {a: 1}}
          - id: branch_b
            spec: {type: deterministic, action: fail, config: {message: b broke}}
          - id: branch_c
            BRANCH_C
    - id: after
      spec: {type: deterministic, action: echo, config: {saw: "{{ steps.branch_a.output.a }}/{{ steps.branch_b.state }}"}}
`

func TestParallelJoins(t *testing.T) {
	t.Parallel()
	log := runrig.EngineLog(t)
	okC := `spec: {type: deterministic, action: echo, config: {c: 3}}`
	failC := `spec: {type: deterministic, action: fail, config: {message: c broke}}`
	structuralC := "loop:\n              items: '[1, 2, 3]'\n              max_iterations: 2\n              steps:\n                - id: inner\n                  spec: {type: deterministic, action: echo}"
	cases := []struct {
		name, join, c string
		state         string
		msg           string
		succeeded     int
	}{
		{"all fails when one branch fails", "{mode: all}", okC, events.StateFailed, "join all: 2 of 3 succeeded, 3 needed; fanned/branch_b: b broke", 2},
		{"any succeeds with one success", "{mode: any}", failC, events.StateSuccess, "", 1},
		{"quorum met", "{mode: quorum, n: 2}", okC, events.StateSuccess, "", 2},
		{"quorum not met", "{mode: quorum, n: 2}", failC, events.StateFailed, "join quorum: 1 of 3 succeeded, 2 needed; fanned/branch_b: b broke", 1},
		{"a structural failure is the one surfaced", "{mode: all}", structuralC, events.StateFailed, "loop.items has 3 items but max_iterations is 2", 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job := strings.ReplaceAll(strings.ReplaceAll(parallelJob, "JOIN", tc.join), "BRANCH_C", tc.c)
			runID, fin := runrig.RunJob(t, log, runrig.ParseJob(t, job), nil)
			require.Equal(t, tc.state, fin.State, "%+v", fin.Error)
			if tc.msg != "" {
				assert.Contains(t, fin.Error.Message, tc.msg)
			} else {
				assert.Equal(t, map[string]any{"saw": "1/failed"}, fin.Output)
			}
			joins := runrig.DecodeAll[events.StepJoinData](t, runrig.OfType(runrig.History(t, log, runID), events.StepJoin))
			require.Len(t, joins, 1)
			assert.Equal(t, tc.succeeded, joins[0].Succeeded)
			require.Len(t, joins[0].Members, 3)
			assert.Equal(t, "fanned/branch_a", joins[0].Members[0].Key)
			assert.Equal(t, events.StateSuccess, joins[0].Members[0].State)
			assert.Equal(t, events.StateFailed, joins[0].Members[1].State)
		})
	}
	t.Run("structural kind", func(t *testing.T) {
		job := strings.ReplaceAll(strings.ReplaceAll(parallelJob, "JOIN", "{mode: all}"), "BRANCH_C", structuralC)
		_, fin := runrig.RunJob(t, log, runrig.ParseJob(t, job), nil)
		assert.Equal(t, events.KindStructural, fin.Error.Kind)
		assert.Equal(t, "fanned/branch_c", fin.Error.StepKey)
	})
}

// TestFanOutBoundsConcurrency runs 6 items with max_workers 2; every worker
// writes its own start and end times, and no instant has more than two
// workers between them.
func TestFanOutBoundsConcurrency(t *testing.T) {
	t.Parallel()
	log, dir := engineOver(t)
	runID, fin := runSpec(t, log, "f", `
  default_input: {prefix: item}
  steps:
    - id: per_item
      fan_out:
        items: "a, b, c, d, e, f"
        max_workers: 2
        worker:
          id: work
          spec:
            type: shell
            program: sh
            args: ["-c", "date +%s%N > start.$1; sleep 0.3; date +%s%N > end.$1; printf '%s-%s' \"$2\" \"$1\"", "sh", "{{ item }}", "{{ input.prefix }}"]
            allowed_programs: [sh]
      fan_in: {join: {mode: all}, collect: results}
    - id: summary
      spec: {type: deterministic, action: echo, config: {all: "{{ steps.results.output }}", first: "{{ steps.per_item.output.0.stdout }}"}}
`)
	require.Equal(t, events.StateSuccess, fin.State, "%+v", fin.Error)

	type span struct{ start, end int64 }
	var spans []span
	for _, item := range []string{"a", "b", "c", "d", "e", "f"} {
		read := func(name string) int64 {
			data, err := os.ReadFile(filepath.Join(dir, name+"."+item))
			require.NoError(t, err)
			n, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
			require.NoError(t, err)
			return n
		}
		spans = append(spans, span{read("start"), read("end")})
	}
	maxOverlap := 0
	for _, s := range spans {
		overlap := 0
		for _, o := range spans {
			if o.start <= s.start && s.start < o.end {
				overlap++
			}
		}
		maxOverlap = max(maxOverlap, overlap)
	}
	assert.LessOrEqual(t, maxOverlap, 2, "at most max_workers items at once")
	assert.Equal(t, 2, maxOverlap, "and the bound is used")

	out := fin.Output.(map[string]any)
	assert.Equal(t, "item-a", out["first"])
	all := out["all"].([]any)
	require.Len(t, all, 6)
	for i, item := range []string{"a", "b", "c", "d", "e", "f"} {
		assert.Equal(t, "item-"+item, all[i].(map[string]any)["stdout"], "collected in item order")
	}
	assert.Equal(t, []string{"per_item/1", "per_item/2", "per_item/3", "per_item/4", "per_item/5", "per_item/6"},
		itemsStarted(runrig.History(t, log, runID), "per_item"), "the items start in item order")
}

func TestFanOutWorkerFailingUnderAll(t *testing.T) {
	t.Parallel()
	log := runrig.EngineLog(t)
	_, fin := runSpec(t, log, "f", `
  steps:
    - id: per_item
      fan_out:
        items: '["ok", "bad", "ok"]'
        worker:
          id: work
          when: "{{ item }} == ok"
          spec: {type: deterministic, action: echo, config: {item: "{{ item }}"}}
      fan_in: {join: {mode: all}}
    - id: strict
      fan_out:
        items: '["ok", "bad"]'
        worker:
          id: check
          spec: {type: deterministic, action: fail, config: {message: "{{ input.item }} is bad"}}
      fan_in: {join: {mode: all}}
`)
	require.Equal(t, events.StateFailed, fin.State)
	assert.Equal(t, "strict/1", fin.Error.StepKey)
	assert.Contains(t, fin.Error.Message, "0 of 2 succeeded")
}

func TestLoops(t *testing.T) {
	t.Parallel()
	log := runrig.EngineLog(t)

	t.Run("breaks after the body of iteration 2", func(t *testing.T) {
		runID, fin := runSpec(t, log, "l", `
  steps:
    - id: review_fix
      loop:
        max_iterations: 5
        break_when: "{{ steps.review.output.n }} == 2"
        steps:
          - id: review
            spec: {type: deterministic, action: echo, config: {n: "{{ iteration }}", also: "{{ input.iteration }}"}}
          - id: fix
            spec: {type: deterministic, action: echo, config: {after: "{{ steps.review.output.n }}"}}
    - id: after
      spec: {type: deterministic, action: echo, config: {last: "{{ steps.fix.output.after }}"}}
`)
		require.Equal(t, events.StateSuccess, fin.State, "%+v", fin.Error)
		assert.Equal(t, map[string]any{"last": float64(2)}, fin.Output)
		its := runrig.DecodeAll[events.LoopIterationData](t, runrig.OfType(runrig.History(t, log, runID), events.LoopIteration))
		require.Len(t, its, 2)
		assert.False(t, its[0].Break)
		assert.True(t, its[1].Break)
		var keys []string
		for _, ev := range runrig.OfType(runrig.History(t, log, runID), events.StepFinished) {
			keys = append(keys, ev.StepKey)
		}
		assert.Equal(t, []string{"review_fix/1/review", "review_fix/1/fix", "review_fix/2/review", "review_fix/2/fix", "review_fix", "after"}, keys)
	})
	t.Run("over items, never breaking", func(t *testing.T) {
		_, fin := runSpec(t, log, "l", `
  steps:
    - id: each
      loop:
        items: "x y z"
        max_iterations: 3
        break_when: "{{ item }} == never"
        steps:
          - id: visit
            spec: {type: deterministic, action: echo, config: {item: "{{ item }}", i: "{{ iteration }}"}}
`)
		require.Equal(t, events.StateSuccess, fin.State, "%+v", fin.Error)
		assert.Equal(t, map[string]any{"visit": map[string]any{"item": "z", "i": float64(3), "iteration": float64(3)}}, fin.Output)
	})
	t.Run("more items than max_iterations is structural", func(t *testing.T) {
		runID, fin := runSpec(t, log, "l", `
  steps:
    - id: each
      loop:
        items: '[1, 2, 3]'
        max_iterations: 2
        steps:
          - id: visit
            spec: {type: deterministic, action: echo}
`)
		require.Equal(t, events.StateFailed, fin.State)
		assert.Equal(t, events.KindStructural, fin.Error.Kind)
		assert.False(t, fin.Error.Retryable)
		assert.Empty(t, runrig.OfType(runrig.History(t, log, runID), events.LoopIteration), "nothing ran: not a truncation")
	})
}

func TestRecoveryActivityThenOneMoreAttempt(t *testing.T) {
	t.Parallel()
	log, dir := engineOver(t)
	fixer, err := assets.ParseActivity("fixer.yaml", []byte(runrig.FixerActivity))
	require.NoError(t, err)
	resolve := func(name string) (*assets.Activity, error) { return fixer, nil }

	job, err := assets.ParseJob("rec.yaml", []byte(`
schemaVersion: 2
kind: Job
metadata: {name: rec}
spec:
  recovery_activity: fixer
  steps:
    - id: needs_file
      default_input: {want: ready.txt}
      retry: {max_attempts: 2, initial_backoff_ms: 0}
      spec: {type: shell, program: cat, args: ["{{ input.want }}"], allowed_programs: [cat]}
    - id: still_broken
      default_input: {want: never.txt}
      spec: {type: shell, program: cat, args: ["{{ input.want }}"], allowed_programs: [cat]}
`), resolve)
	require.NoError(t, err)
	runID, fin := runrig.RunJob(t, log, job, nil)
	require.Equal(t, events.StateFailed, fin.State)
	assert.Equal(t, "still_broken", fin.Error.StepKey, "the last attempt's failure stands after recovery")

	var keys []string
	for _, ev := range runrig.OfType(runrig.History(t, log, runID), events.StepFinished) {
		var d events.StepFinishedData
		require.NoError(t, ev.Decode(&d))
		keys = append(keys, ev.StepKey+"#"+strconv.Itoa(d.Attempt)+"="+d.State)
	}
	assert.Equal(t, []string{
		"needs_file#1=failed", "needs_file#2=failed", // retries first
		"needs_file/recovery#1=success", "needs_file#3=success", // then recovery, then one more attempt
		"still_broken#1=failed", "still_broken/recovery#1=success", "still_broken#2=failed", // exactly one more
	}, keys)
	data, err := os.ReadFile(filepath.Join(dir, "recovery.log"))
	require.NoError(t, err)
	assert.Equal(t, "needs_file|needs_file|activity|ready.txtstill_broken|still_broken|activity|never.txt", string(data))
}
