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

// TestFanOutItemsStartInItemOrder checks the order a fan-out records its
// items in under step protocol 2, where an item has no fanout.item and
// its worker's step.started is its first event: the items' step.started
// in item order (their turns), each before its step.finished — in both
// durability modes, with many items in flight.
func TestFanOutItemsStartInItemOrder(t *testing.T) {
	t.Parallel()
	const items = 40
	for _, durability := range []string{events.DurabilityStrict, events.DurabilityRelaxed} {
		t.Run(durability, func(t *testing.T) {
			t.Parallel()
			log := testkit.StartLog(t, events.Config{Durability: durability})
			runrig.StartEngine(t, log, t.TempDir(), nil)
			runID, fin := runrig.RunJob(t, log, jobSpec(t, "order", `
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
			var before uint64
			for i := 1; i <= items; i++ {
				itemKey := "fan/" + strconv.Itoa(i)
				require.Zero(t, seqs[itemKey][events.FanoutItem], "%s: no fanout.item under step protocol 2", itemKey)
				// A decided item's one event is its step.finished.
				started, finished := seqs[itemKey][events.StepStarted], seqs[itemKey][events.StepFinished]
				require.Zero(t, started, "%s: no step.started: the orchestrator decides an echo", itemKey)
				require.NotZero(t, finished, "%s: step.finished", itemKey)
				assert.Less(t, before, finished, "%s: started after the item before it", itemKey)
				before = finished
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
