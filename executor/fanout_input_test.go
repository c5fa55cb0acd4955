package executor_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/runrig"
	"github.com/orbitrun/orbit/internal/testkit"
	"github.com/orbitrun/orbit/interpreter"
)

// TestFanOutItemInputsAreRecordedAsEncoded: a fan-out's items share the
// members of their input but the item, which are encoded once for them
// all. Each item's step.started must record exactly what encoding its
// whole input records — by reference, from step protocol 4 on, for a step
// that takes the item's input as it is — its worker must get that input,
// and a step that changes the input inside an item (a loop's iteration, a
// default_input) must record its own.
func TestFanOutItemInputsAreRecordedAsEncoded(t *testing.T) {
	t.Parallel()
	log := testkit.StartLog(t, events.Config{Durability: events.DurabilityRelaxed})
	runrig.StartEngine(t, log, t.TempDir(), nil)
	items := []any{0.1, 1e21, "a<b>&c", map[string]any{"z": 1, "a": []any{true, nil}}}
	input := map[string]any{
		"items": items,
		"extra": map[string]any{"k": []any{1.5, "é\u2028"}},
		"item":  "the job's own, replaced in each item",
	}
	runID, fin := runrig.RunJob(t, log, jobSpec(t, "fanout_input", `
  steps:
    - id: fan
      fan_out:
        items: "{{ input.items }}"
        worker:
          id: w
          spec: {type: deterministic, action: echo}
      fan_in: {join: {mode: all}}
    - id: nested
      fan_out:
        items: "{{ input.items }}"
        worker:
          id: l
          loop:
            max_iterations: 2
            steps:
              - id: body
                spec: {type: deterministic, action: echo}
              - id: merged
                default_input: {more: "{{ iteration }}"}
                spec: {type: deterministic, action: echo}
      fan_in: {join: {mode: all}}
`), input)
	require.Equal(t, events.StateSuccess, fin.State, "%+v", fin.Error)

	decoded := func(v any) any {
		raw, err := json.Marshal(v)
		require.NoError(t, err)
		var out any
		require.NoError(t, json.Unmarshal(raw, &out))
		return out
	}
	base := decoded(input)
	checked := 0
	var fanStarted events.Event
	var err error
	for _, ev := range runrig.History(t, log, runID) {
		if ev.Type == events.StepStarted && ev.StepKey == "fan" {
			fanStarted = ev
		}
		type start struct {
			ActivityType string            `json:"activity_type"`
			Input        json.RawMessage   `json:"input"`
			Item         *events.ItemInput `json:"item"`
		}
		var d start
		switch ev.Type {
		case events.StepStarted:
			require.NoError(t, ev.Decode(&d))
		case events.StepFinished:
			// A decided step's start is in its step.finished.
			var f struct {
				Started *start `json:"started"`
			}
			require.NoError(t, ev.Decode(&f))
			if f.Started == nil {
				continue
			}
			d = *f.Started
		default:
			continue
		}
		if d.ActivityType != assets.TypeDeterministic {
			continue
		}
		if d.Item != nil {
			require.Empty(t, d.Input, ev.StepKey)
			require.Equal(t, interpreter.StepEventID(events.StepStarted, runID, "fan", 1), d.Item.Of, ev.StepKey)
			var fan struct {
				Input map[string]json.RawMessage `json:"input"`
			}
			require.NoError(t, fanStarted.Decode(&fan))
			var scope any
			require.NoError(t, json.Unmarshal(fan.Input[events.FanOutScopeInput], &scope))
			d.Input, err = json.Marshal(events.WithItem(scope, d.Item.Value))
			require.NoError(t, err)
		}
		var got any
		require.NoError(t, json.Unmarshal(d.Input, &got))
		again, err := json.Marshal(got)
		require.NoError(t, err)
		assert.Equal(t, string(again), string(d.Input), "%s: the recorded input is its encoding", ev.StepKey)

		var i, it int
		want := map[string]any{}
		for k, v := range base.(map[string]any) {
			want[k] = v
		}
		switch {
		case scan(ev.StepKey, "fan/%d", &i):
			want["item"] = decoded(items[i-1])
		case scan(ev.StepKey, "nested/%d/%d/body", &i, &it):
			want["item"], want["iteration"] = decoded(items[i-1]), float64(it)
		case scan(ev.StepKey, "nested/%d/%d/merged", &i, &it):
			want["item"], want["iteration"], want["more"] = decoded(items[i-1]), float64(it), float64(it)
		default:
			t.Fatalf("unexpected step %s", ev.StepKey)
		}
		assert.Equal(t, want, got, "%s: the recorded input", ev.StepKey)
		checked++
	}
	assert.Equal(t, len(items)*5, checked, "every item's steps checked")

	var out struct {
		Output []any `json:"output"`
	}
	for _, ev := range runrig.History(t, log, runID) {
		if ev.Type == events.StepFinished && ev.StepKey == "fan" {
			require.NoError(t, ev.Decode(&out))
		}
	}
	require.Len(t, out.Output, len(items))
	for i, o := range out.Output {
		want := base.(map[string]any)
		want = map[string]any{"items": want["items"], "extra": want["extra"], "item": decoded(items[i])}
		assert.Equal(t, want, o, "item %d: its worker got its input", i+1)
	}
}

// scan reports whether key has the format, reading its numbers.
func scan(key, format string, n ...any) bool {
	got, err := fmt.Sscanf(key, format, n...)
	return err == nil && got == len(n)
}
