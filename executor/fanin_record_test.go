package executor_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/runrig"
	"github.com/orbitrun/orbit/internal/testkit"
)

// TestFanInRecordsTheItemsOutputsAsTheyWereRecorded: a fan-in's
// step.finished, and run.finished after it, are built from the items'
// outputs as their step.finished hold them. What they record must be
// exactly what encoding the decoded outputs records — numbers of every
// shape, escapes, nested values, a skipped item's null — and the run's
// output the fan-in's.
func TestFanInRecordsTheItemsOutputsAsTheyWereRecorded(t *testing.T) {
	t.Parallel()
	log := testkit.StartLog(t, events.Config{Durability: events.DurabilityRelaxed})
	runrig.StartEngine(t, log, t.TempDir(), nil)
	items := []any{
		0.1, 1e21, 12345678901234567, -0.0, 3, "a<b>&c", "é\u2028\"q\"",
		map[string]any{"z": 1, "a": []any{true, nil, 2.5e-9}}, []any{}, "skip",
	}
	runID, fin := runrig.RunJob(t, log, jobSpec(t, "fanin_record", `
  steps:
    - id: fan
      fan_out:
        items: "{{ input.items }}"
        max_workers: 4
        worker:
          id: w
          when: "{{ item }} != skip"
          spec: {type: deterministic, action: echo, config: {item: "{{ item }}", n: 7}}
      fan_in: {join: {mode: all}}
`), map[string]any{"items": items, "extra": map[string]any{"k": []any{1.5, "x"}}})
	require.Equal(t, events.StateSuccess, fin.State, "%+v", fin.Error)

	var (
		itemOutputs = make([]any, len(items))
		fanOutput   json.RawMessage
		runOutput   json.RawMessage
	)
	for _, ev := range runrig.History(t, log, runID) {
		var d struct {
			Output json.RawMessage `json:"output"`
		}
		require.NoError(t, ev.Decode(&d))
		switch {
		case ev.Type == events.StepFinished && ev.StepKey == "fan":
			fanOutput = d.Output
		case ev.Type == events.StepFinished:
			var i int
			_, err := fmtSscan(ev.StepKey, &i)
			require.NoError(t, err)
			var out any
			require.NoError(t, json.Unmarshal(d.Output, &out))
			itemOutputs[i-1] = out
		case ev.Type == events.RunFinished:
			runOutput = d.Output
		}
	}
	want, err := json.Marshal(itemOutputs)
	require.NoError(t, err)
	assert.Equal(t, string(want), string(fanOutput), "the fan-in records what encoding its items' outputs records")
	assert.Equal(t, string(fanOutput), string(runOutput), "the run's output is the fan-in's")
	assert.Nil(t, itemOutputs[len(items)-1], "the skipped item's output is null")
}

// fmtSscan reads the item index from a fan-out item's key, fan/<i>.
func fmtSscan(key string, i *int) (int, error) {
	return fmt.Sscanf(key, "fan/%d", i)
}
