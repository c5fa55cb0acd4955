package executor_test

import (
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/runrig"
)

// TestItemsWrittenAsAList runs one fan_out worker and one loop iteration
// per element of items written as a YAML list: numbers, mappings and bools
// reach the steps as themselves, and string elements are rendered.
func TestItemsWrittenAsAList(t *testing.T) {
	t.Parallel()
	log := runrig.EngineLog(t)

	t.Run("fan_out", func(t *testing.T) {
		runID, fin := runSpec(t, log, "fan", `
  default_input: {name: world}
  steps:
    - id: each
      fan_out:
        items: [1, 2, 3, {k: v}, false, "hello {{ input.name }}"]
        max_workers: 2
        worker:
          id: w
          spec: {type: deterministic, action: echo, config: {got: "{{ item }}"}}
      fan_in: {join: {mode: all}}
`)
		require.Equal(t, events.StateSuccess, fin.State, "%+v", fin.Error)
		got := []any{}
		for _, out := range fin.Output.([]any) {
			got = append(got, out.(map[string]any)["got"])
		}
		assert.Equal(t, []any{float64(1), float64(2), float64(3), map[string]any{"k": "v"}, false, "hello world"}, got)
		assert.Len(t, itemsStarted(runrig.History(t, log, runID), "each"), 6)
	})

	t.Run("loop", func(t *testing.T) {
		runID, fin := runSpec(t, log, "loop", `
  steps:
    - id: each
      loop:
        items: [10, 20, 30]
        max_iterations: 5
        steps:
          - {id: visit, spec: {type: deterministic, action: echo, config: {item: "{{ item }}"}}}
`)
		require.Equal(t, events.StateSuccess, fin.State, "%+v", fin.Error)
		its := runrig.DecodeAll[events.LoopIterationData](t, runrig.OfType(runrig.History(t, log, runID), events.LoopIteration))
		require.Len(t, its, 3, "one iteration per element, not max_iterations")
		for i, want := range []float64{10, 20, 30} {
			assert.Equal(t, want, its[i].Item)
		}
	})

	t.Run("a template rendering a mapping is not one item", func(t *testing.T) {
		runID, fin := runSpec(t, log, "notlist", `
  default_input: {m: {a: 1}}
  steps:
    - id: each
      fan_out:
        items: "{{ input.m }}"
        worker: {id: w, spec: {type: deterministic, action: echo}}
      fan_in: {join: {mode: all}}
`)
		require.Equal(t, events.StateFailed, fin.State)
		assert.Equal(t, events.KindValidation, fin.Error.Kind)
		assert.Equal(t, "fan_out.items: {{ input.m }} rendered a mapping: not a list", fin.Error.Message)
		assert.Empty(t, itemsStarted(runrig.History(t, log, runID), "each"))
	})
}

// itemsStarted returns the step keys of the fan-out step's items that
// started (their worker's step.started), in log order.
func itemsStarted(hist []events.Event, step string) []string {
	item := regexp.MustCompile("^" + regexp.QuoteMeta(step) + `/\d+$`)
	var keys []string
	for _, ev := range runrig.Starts(hist) {
		if item.MatchString(ev.StepKey) {
			keys = append(keys, ev.StepKey)
		}
	}
	return keys
}
