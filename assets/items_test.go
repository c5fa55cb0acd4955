package assets_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/assets"
)

// TestItemsList loads fan_out and loop items written as YAML lists: the
// elements keep their JSON types, strings stay templates to render at run
// time, and the job survives the JSON round trip it takes through the log.
func TestItemsList(t *testing.T) {
	t.Parallel()
	j, err := assets.ParseJob("j.yaml", job(`
    - id: fan
      fan_out:
        items: [1, 2.5, true, null, "two", {a: [x]}, "{{ input.name }}"]
        worker: {id: w, spec: `+echo+`, default_input: "{{ item }}"}
      fan_in: {}
    - id: none
      loop:
        items: []
        max_iterations: 1
        steps:
          - {id: s, spec: `+echo+`, default_input: "{{ item }}"}
    - id: text
      loop:
        items: "a, b"
        max_iterations: 2
        steps:
          - {id: t, spec: `+echo+`}
`), nil)
	require.NoError(t, err)
	fan := j.Spec.Steps[0].FanOut
	assert.Empty(t, fan.Items)
	assert.Equal(t, []any{float64(1), 2.5, true, nil, "two", map[string]any{"a": []any{"x"}}, "{{ input.name }}"}, fan.ItemList)

	none := j.Spec.Steps[1].Loop
	assert.Equal(t, []any{}, none.ItemList, "an empty list is a loop over no items, not a loop without items")
	assert.True(t, none.OverItems())

	text := j.Spec.Steps[2].Loop
	assert.Equal(t, "a, b", text.Items)
	assert.Nil(t, text.ItemList)

	stored, err := json.Marshal(j)
	require.NoError(t, err)
	var back assets.Job
	require.NoError(t, json.Unmarshal(stored, &back))
	assert.Equal(t, j.Spec.Steps[0].FanOut.ItemList, back.Spec.Steps[0].FanOut.ItemList)
	assert.Equal(t, []any{}, back.Spec.Steps[1].Loop.ItemList)
	assert.True(t, back.Spec.Steps[1].Loop.OverItems())
	assert.Nil(t, back.Spec.Steps[2].Loop.ItemList)
}
