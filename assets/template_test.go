package assets_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/assets"
)

// scope is a scope with a value of every kind under every root.
func scope() *assets.Scope {
	return &assets.Scope{
		Input: map[string]any{
			"name":   "world",
			"count":  float64(3),
			"ratio":  0.5,
			"ok":     true,
			"none":   nil,
			"list":   []any{"a", float64(2), map[string]any{"deep": "x"}},
			"obj":    map[string]any{"b": float64(1), "a": "<tag> & \"q\""},
			"empty":  map[string]any{},
			"1":      "numeric key",
			"dashed": map[string]any{"a-b": "dash"},
		},
		Steps: map[string]assets.StepResult{
			"build": {State: "success", Output: map[string]any{"exit_code": float64(0), "files": []any{"x.go"}}},
			"lint":  {State: "failed"},
		},
		Env: func(name string) (string, bool) {
			if name == "HOME" {
				return "/home/orbit", true
			}
			return "", false
		},
		Item:          map[string]any{"path": "a.txt"},
		HasItem:       true,
		Iteration:     2,
		WorkspacePath: "/work/space",
	}
}

func TestTemplateRender(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, text, want string
	}{
		{"literal", "no templates here", "no templates here"},
		{"lone braces", "a } b }} c {", "a } b }} c {"},
		{"string", "hello {{ input.name }}!", "hello world!"},
		{"no spaces", "{{input.name}}", "world"},
		{"many spaces", "{{    input.name\t}}", "world"},
		{"integer", "{{ input.count }}", "3"},
		{"fraction", "{{ input.ratio }}", "0.5"},
		{"bool", "{{ input.ok }}", "true"},
		{"null", "{{ input.none }}", "null"},
		{"array", "{{ input.list }}", `["a",2,{"deep":"x"}]`},
		{"object sorted, not HTML-escaped", "{{ input.obj }}", `{"a":"<tag> & \"q\"","b":1}`},
		{"empty object", "{{ input.empty }}", `{}`},
		{"index", "{{ input.list.1 }}", "2"},
		{"index then key", "{{ input.list.2.deep }}", "x"},
		{"numeric key", "{{ input.1 }}", "numeric key"},
		{"dashed key", "{{ input.dashed.a-b }}", "dash"},
		{"whole input", "{{ input }}", `{"1":"numeric key","count":3,"dashed":{"a-b":"dash"},"empty":{},"list":["a",2,{"deep":"x"}],"name":"world","none":null,"obj":{"a":"<tag> & \"q\"","b":1},"ok":true,"ratio":0.5}`},
		{"step output", "{{ steps.build.output.exit_code }}", "0"},
		{"step output array", "{{ steps.build.output.files.0 }}", "x.go"},
		{"step state", "{{ steps.lint.state }}", "failed"},
		{"step null output", "{{ steps.lint.output }}", "null"},
		{"env", "{{ env.HOME }}/bin", "/home/orbit/bin"},
		{"item", "{{ item.path }}", "a.txt"},
		{"whole item", "{{ item }}", `{"path":"a.txt"}`},
		{"iteration", "try {{ iteration }}", "try 2"},
		{"workspace", "{{ workspace_path }}/go.mod", "/work/space/go.mod"},
		{"several", "{{ input.name }}-{{ iteration }}-{{ steps.build.state }}", "world-2-success"},
		{"literal braces", `docker inspect -f '{{ "{{" }}.State.Status}}' {{ input.name }}`, `docker inspect -f '{{.State.Status}}' world`},
		{"quoted literal", `{{"a \"b\" \u00e9"}}`, `a "b" é`},
		{"quoted template is not rendered", `{{ "{{ input.name" }} }}`, `{{ input.name }}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tmpl, err := assets.ParseTemplate(tt.text)
			require.NoError(t, err)
			got, err := tmpl.Render(scope())
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestTemplateRenderGoValues(t *testing.T) {
	t.Parallel()
	// Values that did not come from JSON are walked and printed as JSON.
	sc := &assets.Scope{Input: map[string]any{"n": 7, "m": map[string]string{"k": "v"}, "s": []int{4, 5}}}
	for text, want := range map[string]string{
		"{{ input.n }}":   "7",
		"{{ input.m.k }}": "v",
		"{{ input.s.1 }}": "5",
		"{{ input.s }}":   "[4,5]",
	} {
		tmpl, err := assets.ParseTemplate(text)
		require.NoError(t, err)
		got, err := tmpl.Render(sc)
		require.NoError(t, err, text)
		assert.Equal(t, want, got, text)
	}
}

func TestTemplateMissingValue(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		text  string
		scope *assets.Scope
		want  string
	}{
		{"missing key", "{{ input.nope }}", scope(), `{{ input.nope }}: input has no key "nope"`},
		{"missing nested key", "x {{ input.obj.c }}", scope(), `{{ input.obj.c }}: input.obj has no key "c"`},
		{"index out of range", "{{ input.list.3 }}", scope(), `{{ input.list.3 }}: input.list has no index 3 (length 3)`},
		{"name on a list", "{{ input.list.first }}", scope(), `{{ input.list.first }}: input.list is a list, and "first" is not an index`},
		{"into a scalar", "{{ input.name.x }}", scope(), `{{ input.name.x }}: input.name is a string, not an object or list`},
		{"into null", "{{ input.none.x }}", scope(), `{{ input.none.x }}: input.none is null, not an object or list`},
		{"no input", "{{ input.a }}", &assets.Scope{}, `{{ input.a }}: input is null, not an object or list`},
		{"unknown step", "{{ steps.deploy.output }}", scope(), `{{ steps.deploy.output }}: step "deploy" has no result`},
		{"step output key", "{{ steps.build.output.nope }}", scope(), `{{ steps.build.output.nope }}: steps.build.output has no key "nope"`},
		{"unset env", "{{ env.NOPE }}", scope(), `{{ env.NOPE }}: environment variable NOPE is not set (neither where the run was requested nor in the engine's environment)`},
		{"no env func", "{{ env.HOME }}", &assets.Scope{}, `{{ env.HOME }}: environment variable HOME is not set (neither where the run was requested nor in the engine's environment)`},
		{"item outside fan-out", "{{ item }}", &assets.Scope{}, `{{ item }}: item is only set inside a fan_out worker or a loop over items`},
		{"iteration outside loop", "{{ iteration }}", &assets.Scope{}, `{{ iteration }}: iteration is only set inside a loop`},
		{"no workspace", "{{ workspace_path }}", &assets.Scope{}, `{{ workspace_path }}: workspace_path is not set`},
		{"nil scope", "{{ input }}", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tmpl, err := assets.ParseTemplate(tt.text)
			require.NoError(t, err)
			got, err := tmpl.Render(tt.scope)
			if tt.want == "" {
				require.NoError(t, err)
				assert.Equal(t, "null", got)
				return
			}
			require.ErrorIs(t, err, assets.ErrMissingValue)
			assert.EqualError(t, err, tt.want)
		})
	}
}

func TestParseTemplateErrors(t *testing.T) {
	t.Parallel()
	tests := []struct{ text, want string }{
		{"{{ input.a", `unterminated template "{{ input.a"`},
		{"ok {{ input.a }} then {{", `unterminated template "{{"`},
		{"{{ }}", `{{ }}: empty template`},
		{"{{}}", `{{}}: empty template`},
		{"{{ input..a }}", `{{ input..a }}: invalid path segment "" (segments are names or array indexes)`},
		{"{{ input.a b }}", `{{ input.a b }}: invalid path segment "a b" (segments are names or array indexes)`},
		{"{{ input.-1 }}", `{{ input.-1 }}: invalid path segment "-1" (segments are names or array indexes)`},
		{"{{ input. }}", `{{ input. }}: invalid path segment "" (segments are names or array indexes)`},
		{"{{ .Name }}", `{{ .Name }}: a path starts with its root, such as input (for literal braces, write {{ "{{" }})`},
		{`{{ "{{ }}`, `{{ "{{ }}: expected one Go string literal, such as {{ "{{" }}`},
		{`{{ "a" "b" }}`, `{{ "a" "b" }}: expected one Go string literal, such as {{ "{{" }}`},
		{`{{ "}}" }}`, `{{ "}}: expected one Go string literal, such as {{ "{{" }}`},
		{"{{ foo }}", `{{ foo }}: unknown root "foo" (expected input, steps, env, item, iteration or workspace_path)`},
		{"{{ step.a.output }}", `{{ step.a.output }}: unknown root "step" (did you mean "steps"?)`},
		{"{{ 0 }}", `{{ 0 }}: unknown root "0" (expected input, steps, env, item, iteration or workspace_path)`},
		{"{{ steps }}", `{{ steps }}: expected steps.<id>.output[.path] or steps.<id>.state`},
		{"{{ steps.a }}", `{{ steps.a }}: expected steps.<id>.output[.path] or steps.<id>.state`},
		{"{{ steps.a.result }}", `{{ steps.a.result }}: expected steps.<id>.output[.path] or steps.<id>.state`},
		{"{{ steps.a.state.x }}", `{{ steps.a.state.x }}: expected steps.<id>.output[.path] or steps.<id>.state`},
		{"{{ steps.1.output }}", `{{ steps.1.output }}: "1" is not a step id`},
		{"{{ env }}", `{{ env }}: expected env.NAME`},
		{"{{ env.A.B }}", `{{ env.A.B }}: expected env.NAME`},
		{"{{ iteration.x }}", `{{ iteration.x }}: iteration has no fields`},
		{"{{ workspace_path.x }}", `{{ workspace_path.x }}: workspace_path has no fields`},
		{"{{ " + strings.Repeat("a", 50), `unterminated template "{{ ` + strings.Repeat("a", 37) + `…"`},
		{"{{ " + strings.Repeat("é", 30), `unterminated template "{{ ` + strings.Repeat("é", 18) + `…"`},
	}
	for _, tt := range tests {
		_, err := assets.ParseTemplate(tt.text)
		require.ErrorIs(t, err, assets.ErrInvalid, tt.text)
		assert.EqualError(t, err, tt.want, tt.text)
	}
}

func TestTemplateRefs(t *testing.T) {
	t.Parallel()
	tmpl, err := assets.ParseTemplate("{{ input.a.0 }} and {{steps.b.output.c}} in {{ workspace_path }}")
	require.NoError(t, err)
	assert.Equal(t, []assets.Ref{
		{Root: assets.RootInput, Path: []string{"a", "0"}, Raw: "{{ input.a.0 }}"},
		{Root: assets.RootSteps, Path: []string{"b", "output", "c"}, Raw: "{{steps.b.output.c}}"},
		{Root: assets.RootWorkspacePath, Path: []string{}, Raw: "{{ workspace_path }}"},
	}, tmpl.Refs())

	plain, err := assets.ParseTemplate("plain")
	require.NoError(t, err)
	assert.Empty(t, plain.Refs())
}
