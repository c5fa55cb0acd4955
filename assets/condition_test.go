package assets_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/assets"
)

func TestConditionEval(t *testing.T) {
	t.Parallel()
	tests := []struct {
		cond string
		want bool
	}{
		{"true", true},
		{"false", false},
		{"  true  ", true},
		{"a == a", true},
		{"a == b", false},
		{"a != b", true},
		{"{{ input.name }} == world", true},
		{"{{ input.name }}==world", true},
		{"{{ input.count }} == 3", true},
		{"{{ input.ok }}", true},
		{"{{ steps.build.state }} == success && {{ steps.lint.state }} == failed", true},
		{"{{ steps.build.output.exit_code }} != 0", false},
		// && binds tighter than ||.
		{"true || false && false", true},
		{"false && false || true", true},
		{"(true || false) && false", false},
		{"false || (false || (true && true))", true},
		{"((true))", true},
		// Operands are compared trimmed, as text.
		{"hello world == hello world", true},
		{"x{{ iteration }}y == x2y", true},
		{`{{ input.list }} == ["a",2,{"deep":"x"}]`, true},
		{`'a && b' == "a && b"`, true},
		{`'{{ input.name }}' == world`, true},
		{`"" == ''`, true},
		{"'true'", true},
		{"'x' != 'y' && z == 'z'", true},
	}
	for _, tt := range tests {
		t.Run(tt.cond, func(t *testing.T) {
			t.Parallel()
			c, err := assets.ParseCondition(tt.cond)
			require.NoError(t, err)
			got, err := c.Eval(scope())
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

// TestConditionStructureCannotBeInjected renders values that contain
// operators, parentheses and quotes: they are compared as text and never
// change the expression that was parsed.
func TestConditionStructureCannotBeInjected(t *testing.T) {
	t.Parallel()
	sc := &assets.Scope{Input: map[string]any{
		"eq":    "x == x",
		"or":    "false || true",
		"and":   "true && false",
		"paren": "true) || (true",
		"quote": "' || '",
		"truth": "true",
	}}
	tests := []struct {
		cond string
		want bool
	}{
		{"{{ input.eq }} == x", false},
		{"{{ input.eq }} == x == x", false},
		{"{{ input.eq }} != x", true},
		{"{{ input.truth }} && {{ input.truth }}", true},
		{"{{ input.paren }} == 'true) || (true'", true},
		{"({{ input.paren }} == x)", false},
		{"{{ input.quote }} == x", false},
		{"{{ input.and }} == 'true && false'", true},
	}
	for _, tt := range tests {
		c, err := assets.ParseCondition(tt.cond)
		if tt.cond == "{{ input.eq }} == x == x" {
			require.ErrorIs(t, err, assets.ErrInvalid, "chained comparisons are a syntax error, whatever the values")
			continue
		}
		require.NoError(t, err, tt.cond)
		got, err := c.Eval(sc)
		require.NoError(t, err, tt.cond)
		assert.Equal(t, tt.want, got, tt.cond)
	}

	// A lone operand whose value holds an expression is not evaluated as one.
	for _, key := range []string{"or", "and", "eq", "paren"} {
		c, err := assets.ParseCondition("{{ input." + key + " }}")
		require.NoError(t, err)
		_, err = c.Eval(sc)
		require.ErrorIs(t, err, assets.ErrInvalid, key)
	}
}

func TestConditionEvalErrors(t *testing.T) {
	t.Parallel()
	c, err := assets.ParseCondition("{{ input.name }}")
	require.NoError(t, err)
	_, err = c.Eval(scope())
	require.ErrorIs(t, err, assets.ErrInvalid)
	assert.EqualError(t, err, `condition operand {{ input.name }} rendered "world", which is neither true nor false`)

	c, err = assets.ParseCondition("{{ input.nope }} == x")
	require.NoError(t, err)
	_, err = c.Eval(scope())
	require.ErrorIs(t, err, assets.ErrMissingValue)

	// && and || short-circuit: the missing value on the right is not reached.
	for _, cond := range []string{"false && {{ input.nope }} == x", "true || {{ input.nope }} == x"} {
		c, err = assets.ParseCondition(cond)
		require.NoError(t, err)
		_, err = c.Eval(scope())
		require.NoError(t, err, cond)
	}
}

func TestParseConditionErrors(t *testing.T) {
	t.Parallel()
	tests := []struct{ cond, want string }{
		{"", `condition "": empty condition`},
		{"   ", `condition "   ": empty condition`},
		{"a ==", `condition "a ==": expected an operand after ==`},
		{"== a", `condition "== a": unexpected "=="`},
		{"a == b == c", `condition "a == b == c": comparisons cannot be chained; join them with && or ||`},
		{"a && ", `condition "a && ": unexpected end of condition`},
		{"(a", `condition "(a": missing )`},
		{"a)", `condition "a)": unexpected ")"`},
		{"()", `condition "()": unexpected ")"`},
		{"(a) == b", `condition "(a) == b": a parenthesized expression cannot be compared with ==`},
		{"a = b", `condition "a = b": a single = is not an operator; compare with == or !=`},
		{"'abc == x", `condition "'abc == x": unterminated quoted string 'abc == x`},
		{"'a' b == c", `condition "'a' b == c": unexpected text after quoted string 'a'`},
		{"'it''s' == x", `condition "'it''s' == x": unexpected text after quoted string 'it'`},
		{"{{ input.x == y", `condition "{{ input.x == y": unterminated template "{{ input.x == y"`},
		{"{{ input.x == y }}", `condition "{{ input.x == y }}": {{ input.x == y }}: invalid path segment "x == y" (segments are names or array indexes)`},
		{"{{ nope }} == 1", `condition "{{ nope }} == 1": {{ nope }}: unknown root "nope" (expected input, steps, env, item, iteration or workspace_path)`},
		{"'{{ nope }}' == 1", `condition "'{{ nope }}' == 1": {{ nope }}: unknown root "nope" (expected input, steps, env, item, iteration or workspace_path)`},
		{"a b", ""}, // an operand may contain spaces: this parses
	}
	for _, tt := range tests {
		_, err := assets.ParseCondition(tt.cond)
		if tt.want == "" {
			require.NoError(t, err, tt.cond)
			continue
		}
		require.ErrorIs(t, err, assets.ErrInvalid, tt.cond)
		assert.EqualError(t, err, tt.want, tt.cond)
	}

	deep := ""
	for range 100 {
		deep += "("
	}
	_, err := assets.ParseCondition(deep + "true")
	assert.ErrorContains(t, err, "parentheses nested too deeply")
}

func TestConditionRefs(t *testing.T) {
	t.Parallel()
	c, err := assets.ParseCondition("({{ steps.a.state }} == success || '{{ input.x }}' != y) && {{ item.ok }}")
	require.NoError(t, err)
	var got []string
	for _, r := range c.Refs() {
		got = append(got, r.Raw)
	}
	assert.Equal(t, []string{"{{ steps.a.state }}", "{{ input.x }}", "{{ item.ok }}"}, got)
}
