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
		// An operand is everything between operators: literal text may
		// hold =, : and spaces.
		{"x = y == x = y", true},
		{"{{ input.count }} == 3 && k: v != k:v", true},
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

// TestConditionOperandsHoldText compares a rendered value with literal text
// that holds =, : and spaces, as a review loop's break_when does.
func TestConditionOperandsHoldText(t *testing.T) {
	t.Parallel()
	c, err := assets.ParseCondition("{{ steps.reviewer.output.final_message }} == reviewed: blocking=0")
	require.NoError(t, err)
	for msg, want := range map[string]bool{
		"reviewed: blocking=0":     true,
		"  reviewed: blocking=0\n": true,
		"reviewed: blocking=2":     false,
		"reviewed":                 false,
	} {
		sc := &assets.Scope{Steps: map[string]assets.StepResult{
			"reviewer": {State: "success", Output: map[string]any{"final_message": msg}},
		}}
		got, err := c.Eval(sc)
		require.NoError(t, err, msg)
		assert.Equal(t, want, got, msg)
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
		{"true && ", `condition "true && ": unexpected end of condition`},
		{"(true", `condition "(true": missing )`},
		{"true)", `condition "true)": unexpected ")"`},
		{"()", `condition "()": unexpected ")"`},
		{"(true) == b", `condition "(true) == b": a parenthesized expression cannot be compared with ==`},
		{"a = b", `condition "a = b": a single = is not an operator; compare with == or !=`},
		{"'abc == x", `condition "'abc == x": unterminated quoted string 'abc == x`},
		{"'a' b == c", `condition "'a' b == c": unexpected text after quoted string 'a'`},
		{"'it''s' == x", `condition "'it''s' == x": unexpected text after quoted string 'it'`},
		{"{{ input.x == y", `condition "{{ input.x == y": unterminated template "{{ input.x == y"`},
		{"{{ input.x == y }}", `condition "{{ input.x == y }}": {{ input.x == y }}: invalid path segment "x == y" (segments are names or array indexes)`},
		{"{{ nope }} == 1", `condition "{{ nope }} == 1": {{ nope }}: unknown root "nope" (expected input, steps, env, item, iteration or workspace_path)`},
		{"'{{ nope }}' == 1", `condition "'{{ nope }}' == 1": {{ nope }}: unknown root "nope" (expected input, steps, env, item, iteration or workspace_path)`},
		{"a b == a b", ""}, // an operand may contain spaces: this parses
		// A lone operand is true, false or one template: anything else
		// would fail every run, so it fails the load.
		{"yes", `condition "yes": "yes" stands alone and is neither true nor false; compare it with == or !=`},
		{"'yes'", `condition "'yes'": "'yes'" stands alone and is neither true nor false; compare it with == or !=`},
		{"a b", `condition "a b": "a b" stands alone and is neither true nor false; compare it with == or !=`},
		{"!true", `condition "!true": "!true": ! is not an operator; compare with != or write the opposite condition`},
		{"!{{ input.ok }}", `condition "!{{ input.ok }}": "!{{ input.ok }}": ! is not an operator; compare with != or write the opposite condition`},
		{"{{ input.n }} > 0", `condition "{{ input.n }} > 0": "{{ input.n }} > 0" stands alone with text around its template: alone, an operand must be true, false or one {{ ... }}; compare it with == or !=`},
		{"true && {{ input.a }}{{ input.b }}", `condition "true && {{ input.a }}{{ input.b }}": "{{ input.a }}{{ input.b }}" stands alone with text around its template: alone, an operand must be true, false or one {{ ... }}; compare it with == or !=`},
		{"({{ input.x }} = 1)", `condition "({{ input.x }} = 1)": a single = is not an operator; compare with == or !=`},
		{"true || no", `condition "true || no": "no" stands alone and is neither true nor false; compare it with == or !=`},
		{"{{ input.ok }} && ' {{ input.ok }} ' || {{ \"true\" }}", ""},
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
