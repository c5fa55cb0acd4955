package assets

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// Defaults of activity fields.
const (
	defaultShellTimeoutSeconds = 300
	defaultOnDenial            = "terminate"
)

var (
	activityTypes = []string{TypeShell, TypeDeterministic, TypeAgentLoop, TypeGroundhog}
	sharedFields  = []string{"type", "description", "input_schema_json", "output_schema_json", "fsProfile"}
	agentFields   = []string{"instruction", "tools", "allowed_programs", "proc_allowed_programs", "on_denial", "model", "max_iterations", "max_tokens",
		"provider", "base_url", "wall_clock_timeout_seconds", "fixture"}

	// typeFields are the fields each activity type has besides sharedFields.
	typeFields = map[string][]string{
		TypeShell:         {"program", "args", "allowed_programs", "timeout_seconds", "expected_exit_codes", "sandbox"},
		TypeDeterministic: {"action", "config"},
		TypeAgentLoop:     append(append([]string(nil), agentFields...), "backend", "executor", "require_response_envelope", "require_completion_envelope"),
		TypeGroundhog:     append(append([]string(nil), agentFields...), "attempt_budget_default", "materialize", "budget", "require_completion_envelope", "backend", "executor"),
	}
)

// article returns "a" or "an" for an activity type name.
func article(typ string) string {
	if strings.HasPrefix(typ, "a") {
		return "an"
	}
	return "a"
}

// activitySpec decodes an activity spec (an Activity's spec or a step's
// inline spec) at path, resolving an agent spec against o. Strings that
// contain templates are added to sites. It returns nil only when the spec
// has no usable type, and also the backend of an agent_loop as written
// (auto when left out), which the resolved spec no longer shows.
func (d *decoder) activitySpec(n *yaml.Node, path string, sites *[]site, o *loadOptions) (*ActivitySpec, string) {
	m := d.mapping(n, path)
	if m == nil {
		return nil, ""
	}
	tn := m.get("type")
	if tn == nil {
		d.add(m.line("type"), child(path, "type"), "is required (one of shell, deterministic, agent_loop, groundhog)")
		return nil, ""
	}
	typ, ok := d.scalarString(tn, child(path, "type"))
	if !ok {
		return nil, ""
	}
	if !slices.Contains(activityTypes, typ) {
		reason := fmt.Sprintf("%q is not one of shell, deterministic, agent_loop, groundhog", typ)
		if s := suggest(typ, activityTypes); s != "" {
			reason += fmt.Sprintf(" (did you mean %q?)", s)
		}
		d.addAt(tn, child(path, "type"), reason)
		return nil, ""
	}
	allowed := append(append([]string(nil), sharedFields...), typeFields[typ]...)
	d.checkKeys(m, allowed, func(key string) string {
		if key == "executor_spec" {
			return "executor_spec cannot be written: it is filled in at load, from the executor named by executor: (or provider:)"
		}
		for _, other := range activityTypes {
			if slices.Contains(typeFields[other], key) {
				return fmt.Sprintf("%s is not a field of %s %s activity", key, article(typ), typ)
			}
		}
		return ""
	})
	spec := &ActivitySpec{
		Type:             typ,
		Description:      d.str(m, "description"),
		InputSchemaJSON:  d.schema(m, "input_schema_json"),
		OutputSchemaJSON: d.schema(m, "output_schema_json"),
		FSProfile:        d.fsProfile(m, o),
	}
	written := ""
	switch typ {
	case TypeShell:
		d.shellSpec(m, spec, sites)
	case TypeDeterministic:
		spec.Action, _ = d.requiredStr(m, "action")
		if cn := m.get("config"); cn != nil {
			if cn.Kind != yaml.MappingNode {
				d.addAt(cn, child(path, "config"), "must be a mapping, not "+kindName(cn))
			} else if v, ok := d.value(cn, child(path, "config"), sites); ok {
				spec.Config = v.(map[string]any)
			}
		}
	default:
		written = d.agentSpec(m, spec, sites, o)
	}
	return spec, written
}

func (d *decoder) shellSpec(m *mapping, spec *ActivitySpec, sites *[]site) {
	program, hasProgram := d.requiredStr(m, "program")
	spec.Program = program
	d.addSite(sites, m, "program", program)
	if n := m.get("args"); n != nil {
		spec.Args, _ = d.stringList(n, child(m.path, "args"))
		for i, a := range spec.Args {
			if strings.Contains(a, "{{") {
				*sites = append(*sites, site{path: index(child(m.path, "args"), i), line: n.Content[i].Line, text: a})
			}
		}
	}
	allowedOK := false
	if n := m.get("allowed_programs"); n == nil {
		d.add(m.line("allowed_programs"), child(m.path, "allowed_programs"), "is required: list the programs this activity may run")
	} else if list, ok := d.stringList(n, child(m.path, "allowed_programs")); ok {
		spec.AllowedPrograms = list
		switch {
		case len(list) == 0:
			d.addAt(n, child(m.path, "allowed_programs"), "must list at least one program")
		case slices.Contains(list, ""):
			d.addAt(n, child(m.path, "allowed_programs"), "must not contain an empty program")
		default:
			allowedOK = true
		}
	}
	// A templated program is only known at run time, where the executor
	// checks it against allowed_programs.
	if hasProgram && allowedOK && !strings.Contains(program, "{{") && !slices.Contains(spec.AllowedPrograms, program) {
		d.addAt(m.get("program"), child(m.path, "program"), fmt.Sprintf("%q is not in allowed_programs (%s)", program, strings.Join(spec.AllowedPrograms, ", ")))
	}
	spec.TimeoutSeconds = d.seconds(m, "timeout_seconds", 1, defaultShellTimeoutSeconds)
	if d.oneOf(m, "sandbox", SandboxNone, SandboxAgent) == SandboxAgent {
		spec.Sandbox = SandboxAgent
	}
	spec.ExpectedExitCodes = []int{0}
	if n := m.get("expected_exit_codes"); n != nil {
		codes, ok := d.intList(n, child(m.path, "expected_exit_codes"))
		if ok && len(codes) == 0 {
			d.addAt(n, child(m.path, "expected_exit_codes"), "must list at least one exit code")
		}
		for i, c := range codes {
			if c < 0 || c > 255 {
				d.addAt(n.Content[i], index(child(m.path, "expected_exit_codes"), i), "must be between 0 and 255")
			}
		}
		spec.ExpectedExitCodes = codes
	}
}

// addSite records the string field key of m as a template site when it
// contains a template.
func (d *decoder) addSite(sites *[]site, m *mapping, key, text string) {
	if strings.Contains(text, "{{") {
		*sites = append(*sites, site{path: child(m.path, key), line: m.line(key), text: text})
	}
}

// schema reads a JSON schema field: a string holding JSON, or a YAML mapping
// stored as compact JSON.
func (d *decoder) schema(m *mapping, key string) string {
	n := m.get(key)
	path := child(m.path, key)
	switch {
	case n == nil:
		return ""
	case n.Kind == yaml.MappingNode:
		v, ok := d.value(n, path, nil)
		if !ok {
			return ""
		}
		s, err := text(v)
		if err != nil {
			d.addAt(n, path, err.Error())
		}
		return s
	case n.Kind == yaml.ScalarNode:
		if !json.Valid([]byte(n.Value)) {
			d.addAt(n, path, "must be valid JSON")
		}
		return n.Value
	}
	d.addAt(n, path, "must be a JSON string or a mapping, not "+kindName(n))
	return ""
}

// specTexts returns the templatable strings of a decoded spec with their
// paths inside the spec, in a stable order: program, args, config (keys
// sorted), instruction.
func specTexts(spec *ActivitySpec) []site {
	var out []site
	add := func(path, text string) {
		if strings.Contains(text, "{{") {
			out = append(out, site{path: path, text: text})
		}
	}
	add("program", spec.Program)
	for i, a := range spec.Args {
		add(index("args", i), a)
	}
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch x := v.(type) {
		case string:
			add(path, x)
		case []any:
			for i, e := range x {
				walk(index(path, i), e)
			}
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(x)) {
				walk(child(path, k), x[k])
			}
		}
	}
	if spec.Config != nil {
		walk("config", spec.Config)
	}
	add("instruction", spec.Instruction)
	return out
}

// clone returns a copy of s that shares no slice or map with it.
func (s ActivitySpec) clone() ActivitySpec {
	c := s
	c.Args = slices.Clone(s.Args)
	c.AllowedPrograms = slices.Clone(s.AllowedPrograms)
	c.ExpectedExitCodes = slices.Clone(s.ExpectedExitCodes)
	c.Tools = slices.Clone(s.Tools)
	if s.ExecutorSpec != nil {
		es := s.ExecutorSpec.clone()
		c.ExecutorSpec = &es
	}
	if s.Config != nil {
		c.Config = cloneValue(s.Config).(map[string]any)
	}
	return c
}

// cloneValue deep-copies the maps and slices of a JSON-shaped value.
func cloneValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = cloneValue(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = cloneValue(e)
		}
		return out
	}
	return v
}
