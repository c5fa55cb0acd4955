package assets_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/assets"
)

func TestRenderValue(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   any
		want any
	}{
		{"string without template is kept exactly", " 42 ", " 42 "},
		{"JSON-looking string without template is kept", `{"a":1}`, `{"a":1}`},
		{"number through a template", "{{ input.count }}", float64(3)},
		{"bool through a template", "{{ input.ok }}", true},
		{"null through a template", "{{ input.none }}", nil},
		{"object passed through", "{{ input.obj }}", map[string]any{"a": "<tag> & \"q\"", "b": float64(1)}},
		{"array passed through", "{{ input.list }}", []any{"a", float64(2), map[string]any{"deep": "x"}}},
		{"text around a template stays text", "n={{ input.count }}", "n=3"},
		{"rendered text that is not JSON", "{{ input.name }}", "world"},
		{"rendered text that is JSON", "[{{ input.count }}, {{ iteration }}]", []any{float64(3), float64(2)}},
		{"quoted literals stay text", `{{ "{" }}"a":1}`, `{"a":1}`},
		{"a reference beside a literal converts", `{{ "[" }}{{ input.count }}]`, []any{float64(3)}},
		{"non-strings untouched", float64(7), float64(7)},
		{"nil untouched", nil, nil},
		{
			"nested maps and lists, keys not rendered",
			map[string]any{
				"{{ input.name }}": "{{ input.name }}",
				"list":             []any{"{{ input.count }}", "plain", true},
				"deep":             map[string]any{"who": "{{ item.path }}"},
			},
			map[string]any{
				"{{ input.name }}": "world",
				"list":             []any{float64(3), "plain", true},
				"deep":             map[string]any{"who": "a.txt"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := assets.RenderValue(tt.in, scope())
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestRenderValueDoesNotModifyItsArgument(t *testing.T) {
	t.Parallel()
	in := map[string]any{"a": "{{ input.name }}", "l": []any{"{{ input.count }}"}}
	_, err := assets.RenderValue(in, scope())
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"a": "{{ input.name }}", "l": []any{"{{ input.count }}"}}, in)
}

func TestRenderValueErrors(t *testing.T) {
	t.Parallel()
	_, err := assets.RenderValue(map[string]any{"b": []any{"ok", "{{ input.nope }}"}, "a": "{{ input.name }}"}, scope())
	require.ErrorIs(t, err, assets.ErrMissingValue)
	assert.EqualError(t, err, `b[1]: {{ input.nope }}: input has no key "nope"`)

	_, err = assets.RenderValue("{{ input.name", scope())
	require.ErrorIs(t, err, assets.ErrInvalid)

	// The first error in key order is reported, whatever the map order.
	for range 20 {
		_, err = assets.RenderValue(map[string]any{"z": "{{ input.z }}", "m": "{{ input.m }}", "q": "{{ input.q }}"}, scope())
		assert.EqualError(t, err, `m: {{ input.m }}: input has no key "m"`)
	}
}

func TestMergeInput(t *testing.T) {
	t.Parallel()
	defaults := map[string]any{"name": "world", "count": float64(1)}
	tests := []struct {
		name             string
		defaults, caller any
		want             any
	}{
		{"nil caller gives defaults", defaults, nil, defaults},
		{"objects merge, caller wins", defaults, map[string]any{"count": float64(2), "extra": true},
			map[string]any{"name": "world", "count": float64(2), "extra": true}},
		{"empty caller object keeps defaults", defaults, map[string]any{}, map[string]any{"name": "world", "count": float64(1)}},
		{"caller array replaces", defaults, []any{"x"}, []any{"x"}},
		{"caller string replaces", defaults, "hi", "hi"},
		{"caller object over non-object defaults", "hi", map[string]any{"a": "b"}, map[string]any{"a": "b"}},
		{"both nil", nil, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tt.want, assets.MergeInput(tt.defaults, tt.caller))
		})
	}
}

func TestMergeInputDoesNotModifyArguments(t *testing.T) {
	t.Parallel()
	defaults := map[string]any{"a": "1"}
	caller := map[string]any{"b": "2"}
	merged := assets.MergeInput(defaults, caller).(map[string]any)
	merged["c"] = "3"
	assert.Equal(t, map[string]any{"a": "1"}, defaults)
	assert.Equal(t, map[string]any{"b": "2"}, caller)
}
