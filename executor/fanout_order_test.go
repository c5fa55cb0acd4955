package executor_test

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/runrig"
	"github.com/orbitrun/orbit/internal/testkit"
)

// TestFanOutItemIsStoredBeforeItsDispatch checks the order a fan-out
// records each item in, now that fanout.item is not awaited on its own
// before the item's step is dispatched: fanout.item, then the worker
// instance's step.started, then its step.finished — in both durability
// modes, with many items in flight.
func TestFanOutItemIsStoredBeforeItsDispatch(t *testing.T) {
	t.Parallel()
	const items = 40
	for _, durability := range []string{events.DurabilityStrict, events.DurabilityRelaxed} {
		t.Run(durability, func(t *testing.T) {
			t.Parallel()
			log := testkit.StartLog(t, events.Config{Durability: durability})
			runrig.StartEngine(t, log, t.TempDir(), nil)
			runID, fin := runrig.RunJob(t, log, runrig.ParseJob(t, `
schemaVersion: 2
kind: Job
metadata: {name: order}
spec:
  steps:
    - id: fan
      fan_out:
        items: "{{ input.items }}"
        max_workers: 16
        worker:
          id: w
          spec: {type: deterministic, action: echo, config: {item: "{{ item }}"}}
      fan_in: {join: {mode: all}}
`), map[string]any{"items": testItems(items)})
			require.Equal(t, events.StateSuccess, fin.State, "%+v", fin.Error)

			seqs := map[string]map[string]uint64{} // step key → type → seq
			for _, ev := range runrig.History(t, log, runID) {
				if seqs[ev.StepKey] == nil {
					seqs[ev.StepKey] = map[string]uint64{}
				}
				seqs[ev.StepKey][ev.Type] = ev.Seq
			}
			for i := 1; i <= items; i++ {
				itemKey := "fan/" + strconv.Itoa(i)
				item, started, finished := seqs[itemKey][events.FanoutItem], seqs[itemKey][events.StepStarted], seqs[itemKey][events.StepFinished]
				require.NotZero(t, item, "%s: fanout.item", itemKey)
				require.NotZero(t, started, "%s: step.started", itemKey)
				assert.Less(t, item, started, "%s: fanout.item is stored before the item's dispatch", itemKey)
				assert.Less(t, started, finished, "%s: and its step.started before its end", itemKey)
			}
		})
	}
}

func testItems(n int) []any {
	list := make([]any, n)
	for i := range list {
		list[i] = i
	}
	return list
}
