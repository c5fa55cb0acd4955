package executor_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/runrig"
)

// TestParallelBranchesStartInTheOrderTheJobListsThem: the branches of a
// parallel step run at once, but their first events are in the log in
// the job's order (the scheduler had the last branch first, most
// often), nested structures and skipped branches included; so every view
// lists them so.
func TestParallelBranchesStartInTheOrderTheJobListsThem(t *testing.T) {
	t.Parallel()
	log := runrig.EngineLog(t)
	job := jobSpec(t, "branches", `
  steps:
    - id: all
      parallel:
        branches:
          - {id: a, spec: {type: deterministic, action: echo, config: {v: a}}}
          - {id: b, when: "false", spec: {type: deterministic, action: echo}}
          - id: c
            loop:
              max_iterations: 1
              steps:
                - {id: c_body, spec: {type: deterministic, action: echo}}
          - {id: d, spec: {type: deterministic, action: sleep, config: {ms: 1}}}
          - {id: e, spec: {type: deterministic, action: echo, config: {v: e}}}
`)
	for range 5 {
		runID, fin := runrig.RunJob(t, log, job, nil)
		require.Equal(t, events.StateSuccess, fin.State, "%+v", fin.Error)
		var first []string
		seen := map[string]bool{}
		for _, ev := range runrig.History(t, log, runID) {
			// The branches' own first events; what runs inside a branch
			// (c's body) may come before a later branch's start.
			_, starts := events.StepStart(ev)
			if (starts || ev.Type == events.StepSkipped) && !seen[ev.StepKey] && strings.Count(ev.StepKey, "/") <= 1 {
				seen[ev.StepKey] = true
				first = append(first, ev.StepKey)
			}
		}
		assert.Equal(t, []string{"all", "all/a", "all/b", "all/c", "all/d", "all/e"}, first)
	}
}
