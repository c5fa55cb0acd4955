package assets

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Scope holds the values templates are rendered against. The zero value (or a
// nil *Scope) is an empty scope in which every reference is missing.
//
// Values are expected in the shape encoding/json decodes into: nil, bool,
// float64, string, []any and map[string]any. Numbers are float64, so an
// integer such as 3 renders as 3 and values stay the same after a JSON round
// trip through the log. Other Go values are converted through encoding/json
// when a path walks into them.
type Scope struct {
	Input any
	Steps map[string]StepResult
	// Env looks up {{ env.NAME }}; nil means no variable is set.
	Env     func(name string) (string, bool)
	Item    any
	HasItem bool // Item is set: inside a fan-out worker or a loop over items
	// Iteration is the 1-based iteration of the innermost loop; 0 means the
	// template is not rendered inside a loop.
	Iteration     int
	WorkspacePath string
}

// StepResult is what a finished step exposes to templates as
// steps.<id>.state and steps.<id>.output.
type StepResult struct {
	State  string
	Output any
}

// lookup returns the value a reference names.
func (sc *Scope) lookup(r Ref) (any, error) {
	if sc == nil {
		sc = &Scope{}
	}
	missing := func(format string, args ...any) error {
		return &missingError{token: r.Raw, reason: fmt.Sprintf(format, args...)}
	}
	switch r.Root {
	case RootInput:
		return walk(sc.Input, RootInput, r.Path, r.Raw)
	case RootSteps:
		id := r.Path[0]
		res, ok := sc.Steps[id]
		if !ok {
			return nil, missing("step %q has no result", id)
		}
		if r.Path[1] == "state" {
			return res.State, nil
		}
		return walk(res.Output, "steps."+id+".output", r.Path[2:], r.Raw)
	case RootEnv:
		if sc.Env != nil {
			if v, ok := sc.Env(r.Path[0]); ok {
				return v, nil
			}
		}
		return nil, missing("environment variable %s is not set (neither where the run was requested nor in the engine's environment)", r.Path[0])
	case RootItem:
		if !sc.HasItem {
			return nil, missing("item is only set inside a fan_out worker or a loop over items")
		}
		return walk(sc.Item, RootItem, r.Path, r.Raw)
	case RootIteration:
		if sc.Iteration == 0 {
			return nil, missing("iteration is only set inside a loop")
		}
		return sc.Iteration, nil
	case RootWorkspacePath:
		if sc.WorkspacePath == "" {
			return nil, missing("workspace_path is not set")
		}
		return sc.WorkspacePath, nil
	}
	// ParseTemplate admits no other root.
	panic("assets: unknown template root " + r.Root)
}

// walk follows path into v; name is the dotted path of v for messages.
func walk(v any, name string, path []string, raw string) (any, error) {
	for _, seg := range path {
		missing := func(format string, args ...any) error {
			return &missingError{token: raw, reason: name + " " + fmt.Sprintf(format, args...)}
		}
		switch x := jsonShape(v).(type) {
		case map[string]any:
			next, ok := x[seg]
			if !ok {
				return nil, missing("has no key %q", seg)
			}
			v = next
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil {
				return nil, missing("is a list, and %q is not an index", seg)
			}
			if i >= len(x) {
				return nil, missing("has no index %d (length %d)", i, len(x))
			}
			v = x[i]
		default:
			return nil, missing("is %s, not an object or list", describe(x))
		}
		name += "." + seg
	}
	return v, nil
}

// jsonShape returns v in the shape encoding/json decodes into, converting
// other Go values (int, map[string]string, structs) through JSON.
func jsonShape(v any) any {
	switch v.(type) {
	case nil, bool, float64, string, []any, map[string]any:
		return v
	}
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out any
	if json.Unmarshal(b, &out) != nil {
		return v
	}
	return out
}

func describe(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case float64:
		return "a number"
	default:
		return fmt.Sprintf("%T", x)
	}
}

// text renders a value into template text: strings as they are; numbers and
// booleans as JSON; objects and arrays as compact JSON with sorted keys and
// no HTML escaping; null as null.
func text(v any) (string, error) {
	if s, ok := v.(string); ok {
		return s, nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return strings.TrimSuffix(buf.String(), "\n"), nil
}

// RenderValue renders every string inside v (recursively through
// map[string]any and []any; map keys are not rendered) and returns a new
// value; v is not modified.
//
// A string without a template is returned exactly as it is, and one whose
// templates are all quoted literals as the text they render to. A string
// with at least one reference whose rendered text parses as JSON becomes
// that JSON value, with numbers as float64: "{{ input.count }}" with count 3 becomes
// 3.0, and "{{ input }}" passes a whole object through. Errors name the key
// path of the string inside v; missing values match ErrMissingValue and
// syntax errors match ErrInvalid.
func RenderValue(v any, sc *Scope) (any, error) {
	return renderValue(v, sc, "")
}

func renderValue(v any, sc *Scope, path string) (any, error) {
	wrap := func(err error) error {
		if err == nil || path == "" {
			return err
		}
		return fmt.Errorf("%s: %w", path, err)
	}
	switch x := v.(type) {
	case string:
		out, err := renderString(x, sc)
		return out, wrap(err)
	case map[string]any:
		out := make(map[string]any, len(x))
		// Sorted, so that the error reported first does not depend on map order.
		for _, k := range slices.Sorted(maps.Keys(x)) {
			r, err := renderValue(x[k], sc, child(path, k))
			if err != nil {
				return nil, err
			}
			out[k] = r
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			r, err := renderValue(e, sc, index(path, i))
			if err != nil {
				return nil, err
			}
			out[i] = r
		}
		return out, nil
	}
	return v, nil
}

func renderString(s string, sc *Scope) (any, error) {
	if !strings.Contains(s, "{{") {
		return s, nil
	}
	t, err := ParseTemplate(s)
	if err != nil {
		return nil, err
	}
	rendered, err := t.Render(sc)
	if err != nil || !t.hasRefs() {
		return rendered, err
	}
	var out any
	if json.Unmarshal([]byte(rendered), &out) == nil {
		return out, nil
	}
	return rendered, nil
}

// MergeInput returns the input a job runs with (DESIGN §6): a nil caller
// input gives defaults; when both are objects (map[string]any) the result is
// a new object with the keys of defaults overridden by those of caller (a
// shallow merge); any other caller input replaces defaults. Neither argument
// is modified.
func MergeInput(defaults, caller any) any {
	if caller == nil {
		return defaults
	}
	d, dok := defaults.(map[string]any)
	c, cok := caller.(map[string]any)
	if !dok || !cok {
		return caller
	}
	out := make(map[string]any, len(d)+len(c))
	for k, v := range d {
		out[k] = v
	}
	for k, v := range c {
		out[k] = v
	}
	return out
}
