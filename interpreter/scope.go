package interpreter

import (
	"encoding/json"
	"strings"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
)

// scope is a pipeline context: the input the steps of one step list see,
// the results of the steps that ran before, the key prefix that makes step
// instance keys unique (e.g. "per_item/3/"), and the event that the steps'
// first events name as their parent.
type scope struct {
	input any
	// inputEnc, when not nil, holds input's members encoded: set for a
	// fan-out's items, whose inputs share everything but their item, so
	// that the members are encoded once for all items (see
	// encodedInput).
	//
	// IMPORTANT: it describes input exactly; setInput, the one way to
	// change input, clears it.
	inputEnc map[string]json.RawMessage
	// item, when not nil, says that input is a fan-out item's input (under
	// step protocol 4 on): the steps that take it as it is record and send
	// it by reference. Like inputEnc, setInput clears it.
	item      *itemRef
	root      string
	prefix    string
	parent    string
	results   map[string]assets.StepResult
	itemValue any
	hasItem   bool
	iteration int
}

func newScope(input any, root, parent string) *scope {
	return &scope{input: input, root: root, parent: parent, results: make(map[string]assets.StepResult)}
}

// key is the instance key of the step with the given id in this scope.
func (sc *scope) key(id string) string { return sc.prefix + id }

// record makes a step's result visible to the steps after it.
func (sc *scope) record(id string, res assets.StepResult) { sc.results[id] = res }

// fork returns a pipeline context of its own for a parallel branch or a
// fan-out item: it starts with the results visible here, and what it
// records stays in it.
func (sc *scope) fork(prefix, parent string) *scope {
	c := *sc
	c.prefix, c.parent = prefix, parent
	c.results = make(map[string]assets.StepResult, len(sc.results))
	for k, v := range sc.results {
		c.results[k] = v
	}
	return &c
}

// within returns the same pipeline context under another key prefix and
// parent, sharing results (the iterations of a loop).
func (sc *scope) within(prefix, parent string) *scope {
	c := *sc
	c.prefix, c.parent = prefix, parent
	return &c
}

// setInput replaces the scope's input (and forgets its encoding).
func (sc *scope) setInput(input any) {
	sc.input, sc.inputEnc, sc.item = input, nil, nil
}

// itemRef is a fan-out item's input by reference: the fan-out attempt's
// step.started (its id and stream sequence), which records the scope's
// input, and the item set on it.
type itemRef struct {
	seq   uint64
	id    string
	index int
	value any
}

// encodedInput returns the scope's input encoded, from inputEnc, or
// nil when it has no encoding. Encoding a map of encoded members writes
// what encoding the input would (keys sorted, each value as encoded).
func (sc *scope) encodedInput() json.RawMessage {
	if sc.inputEnc == nil {
		return nil
	}
	raw, err := json.Marshal(sc.inputEnc)
	if err != nil {
		return nil
	}
	return raw
}

// encodeMembers returns the members of an object input encoded, an
// empty map for an input that is not an object (with sets members of an
// object of their own on it), nil if one does not encode.
func encodeMembers(input any) map[string]json.RawMessage {
	m, ok := input.(map[string]any)
	if !ok {
		return map[string]json.RawMessage{}
	}
	out := make(map[string]json.RawMessage, len(m))
	for k, v := range m {
		raw, err := json.Marshal(v)
		if err != nil {
			return nil
		}
		out[k] = raw
	}
	return out
}

// withEncoded is with for encoded members: base with key set to v.
func withEncoded(base map[string]json.RawMessage, key string, v any) map[string]json.RawMessage {
	if base == nil {
		return nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	out := make(map[string]json.RawMessage, len(base)+1)
	for k, r := range base {
		out[k] = r
	}
	out[key] = raw
	return out
}

// with returns the input with extra keys set (item, iteration): merged over
// an object input, or an object of their own when the input is not one.
func with(input any, extra map[string]any) any {
	return assets.MergeInput(input, extra)
}

// workspace is the directory steps of this scope run in: workspace_path
// from the input, else the project root.
func (sc *scope) workspace(input any) string {
	if m, ok := input.(map[string]any); ok {
		if p, ok := m["workspace_path"].(string); ok && p != "" {
			return p
		}
	}
	return sc.root
}

// templates returns the template scope for rendering with the given input;
// {{ workspace_path }} is the workspace that input selects.
func (sc *scope) templates(input any, env func(string) (string, bool)) *assets.Scope {
	return &assets.Scope{
		Input:         input,
		Steps:         sc.results,
		Env:           env,
		Item:          sc.itemValue,
		HasItem:       sc.hasItem,
		Iteration:     sc.iteration,
		WorkspacePath: sc.workspace(input),
	}
}

// prepare renders everything a worker needs for one attempt of an activity
// step: the step input (the pipeline input with the rendered default_input
// merged over it) and the activity's own templated fields, rendered against
// that input.
//
// With byRef, a step whose input is its fan-out item's input as it is (see
// scope.item) gets the input by reference: the command carries InputRef
// and no Input (step.started records it the same way).
func (x *Interpreter) prepare(sc *scope, st *assets.Step, key string, n int, override any, byRef bool) (*StepCommand, error) {
	r, err := renderStep(sc, st, withSecretPlaceholders(x.env), override, byRef)
	if err != nil {
		return nil, err
	}
	spec := r.spec
	timeout := spec.TimeoutSeconds
	if st.TimeoutSeconds > 0 {
		timeout = st.TimeoutSeconds
	}
	if st.FSProfile != "" {
		spec.FSProfile = st.FSProfile
	}
	cmd := &StepCommand{
		RunID:        x.runID,
		Job:          x.job.Name,
		StepKey:      key,
		Attempt:      n,
		Activity:     spec,
		Input:        r.carried,
		Workspace:    sc.workspace(r.input),
		Timeout:      timeout,
		StartedID:    StepEventID(events.StepStarted, x.runID, key, n),
		Session:      st.Session,
		ActivityName: strings.TrimPrefix(st.Target, "activity:"),
		Budget:       x.budget,
		Traceparent:  events.StepTraceparent(x.root, x.traceparent, x.runID, key, n),
		Protocol:     x.cfg.Protocol,
		input:        r.input,
	}
	if r.item != nil {
		cmd.InputRef = &InputRef{Seq: r.item.seq, ID: r.item.id, Item: r.item.value}
	}
	return cmd, nil
}

// rendered is an activity step rendered in its scope: the activity with
// its templated fields filled in, its input, and what the command and
// step.started carry of that input: carried, or, when item is set, the
// reference item (and no input).
type rendered struct {
	spec    assets.ActivitySpec
	input   any
	carried any
	item    *itemRef
}

// renderStep renders an activity step in sc with env; a non-nil override
// is the step's input as is, instead of its rendered default_input merged
// over the scope's input. With byRef, a step that takes its fan-out item's
// input as it is carries it by reference. A template that cannot be
// rendered is an error of kind validation.
func renderStep(sc *scope, st *assets.Step, env func(string) (string, bool), override any, byRef bool) (rendered, error) {
	input := sc.input
	// What the command and step.started carry: the input, or, when the
	// step takes its scope's input as it is, a reference to it or its
	// encoding.
	var carried any = input
	var item *itemRef
	if override == nil && st.DefaultInput == nil {
		if byRef && sc.item != nil {
			carried, item = nil, sc.item
		} else if enc := sc.encodedInput(); enc != nil {
			carried = enc
		}
	}
	if override != nil {
		input, carried = override, override
	} else if st.DefaultInput != nil {
		r, err := assets.RenderValue(st.DefaultInput, sc.templates(sc.input, env))
		if err != nil {
			return rendered{}, Fail(events.KindValidation, false, "default_input: %v", err)
		}
		input = assets.MergeInput(sc.input, r)
		carried = input
	}
	spec := *st.Activity
	ts := sc.templates(input, env)
	switch spec.Type {
	case assets.TypeShell:
		program, err := renderText(spec.Program, ts)
		if err != nil {
			return rendered{}, Fail(events.KindValidation, false, "program: %v", err)
		}
		spec.Program = program
		args := make([]string, len(spec.Args))
		for i, a := range spec.Args {
			if args[i], err = renderText(a, ts); err != nil {
				return rendered{}, Fail(events.KindValidation, false, "args[%d]: %v", i, err)
			}
		}
		spec.Args = args
	case assets.TypeAgentLoop, assets.TypeGroundhog:
		instruction, err := renderText(spec.Instruction, ts)
		if err != nil {
			return rendered{}, Fail(events.KindValidation, false, "instruction: %v", err)
		}
		spec.Instruction = instruction
	case assets.TypeDeterministic:
		if spec.Config != nil {
			cfg, err := assets.RenderValue(spec.Config, ts)
			if err != nil {
				return rendered{}, Fail(events.KindValidation, false, "config: %v", err)
			}
			m, ok := cfg.(map[string]any)
			if !ok {
				return rendered{}, Fail(events.KindValidation, false, "config rendered to %T, want an object", cfg)
			}
			spec.Config = m
		}
	}
	return rendered{spec: spec, input: input, carried: carried, item: item}, nil
}

func renderText(s string, sc *assets.Scope) (string, error) {
	t, err := assets.ParseTemplate(s)
	if err != nil {
		return "", err
	}
	return t.Render(sc)
}
