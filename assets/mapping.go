package assets

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// entry is one key of a YAML mapping with its value.
type entry struct {
	key, val *yaml.Node
}

// mapping is a YAML mapping read with its keys in document order. Merge keys
// (<<: *anchor) are expanded: explicit keys win over merged ones.
type mapping struct {
	path    string
	node    *yaml.Node
	keys    []string
	entries map[string]entry
}

// mapping reads n as a mapping with string keys. It reports a node that is not
// a mapping and duplicate keys, and returns nil only in the first case.
func (d *decoder) mapping(n *yaml.Node, path string) *mapping {
	n = resolve(n)
	if n.Kind != yaml.MappingNode {
		d.addAt(n, path, "must be a mapping, not "+kindName(n))
		return nil
	}
	m := &mapping{path: path, node: n, entries: map[string]entry{}}
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := resolve(n.Content[i]), n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
			merges = append(merges, v)
			continue
		}
		if k.Kind != yaml.ScalarNode {
			d.addAt(k, path, "keys must be strings, not "+kindName(k))
			continue
		}
		if first, dup := m.entries[k.Value]; dup {
			d.addAt(k, child(path, k.Value), fmt.Sprintf("duplicate key %q (first at line %d)", k.Value, first.key.Line))
			continue
		}
		m.set(k, v)
	}
	for _, src := range merges {
		d.merge(m, src)
	}
	return m
}

func (m *mapping) set(k, v *yaml.Node) {
	m.keys = append(m.keys, k.Value)
	m.entries[k.Value] = entry{key: k, val: v}
}

// merge adds the keys of a merge source (a mapping or a list of mappings)
// that m does not have yet.
func (d *decoder) merge(m *mapping, src *yaml.Node) {
	src = resolve(src)
	sources := []*yaml.Node{src}
	if src.Kind == yaml.SequenceNode {
		sources = src.Content
	}
	for _, s := range sources {
		s = resolve(s)
		if s.Kind != yaml.MappingNode {
			d.addAt(s, m.path, "a merge key (<<) must name a mapping, not "+kindName(s))
			continue
		}
		from := d.mapping(s, m.path)
		for _, k := range from.keys {
			if _, has := m.entries[k]; !has {
				e := from.entries[k]
				m.set(e.key, e.val)
			}
		}
	}
}

// get returns the value of key, or nil when the key is absent or null: an
// empty value means the same as leaving the key out.
func (m *mapping) get(key string) *yaml.Node {
	e, ok := m.entries[key]
	if !ok || isNull(resolve(e.val)) {
		return nil
	}
	return resolve(e.val)
}

// has reports whether key is present with a non-null value.
func (m *mapping) has(key string) bool { return m.get(key) != nil }

// line returns the line of key, or of the mapping when key is absent.
func (m *mapping) line(key string) int {
	if e, ok := m.entries[key]; ok {
		return e.key.Line
	}
	return m.node.Line
}

// checkKeys reports every key of m that is not in allowed. explain may give a
// specific reason for a key (one that belongs elsewhere); when it returns ""
// the key is reported as unknown, with a suggestion when one is close.
func (d *decoder) checkKeys(m *mapping, allowed []string, explain func(key string) string) {
	for _, k := range m.keys {
		if slices.Contains(allowed, k) {
			continue
		}
		reason := ""
		if explain != nil {
			reason = explain(k)
		}
		if reason == "" {
			reason = unknownKey(k, allowed)
		}
		d.add(m.entries[k].key.Line, child(m.path, k), reason)
	}
}

func unknownKey(key string, allowed []string) string {
	reason := fmt.Sprintf("unknown key %q", key)
	if s := suggest(key, allowed); s != "" {
		reason += fmt.Sprintf(" (did you mean %q?)", s)
	}
	return reason
}

// str reads an optional string field.
func (d *decoder) str(m *mapping, key string) string {
	n := m.get(key)
	if n == nil {
		return ""
	}
	s, _ := d.scalarString(n, child(m.path, key))
	return s
}

// requiredStr reads a string field that must be present and non-empty.
func (d *decoder) requiredStr(m *mapping, key string) (string, bool) {
	n := m.get(key)
	if n == nil {
		d.add(m.line(key), child(m.path, key), "is required")
		return "", false
	}
	s, ok := d.scalarString(n, child(m.path, key))
	if ok && strings.TrimSpace(s) == "" {
		d.addAt(n, child(m.path, key), "must not be empty")
		return "", false
	}
	return s, ok
}

// intAtLeast reads an optional integer field that must be ≥ low when
// present; an absent field gives def.
func (d *decoder) intAtLeast(m *mapping, key string, low, def int) int {
	n := m.get(key)
	if n == nil {
		return def
	}
	v, ok := d.scalarInt(n, child(m.path, key))
	if !ok {
		return def
	}
	if v < low {
		d.addAt(n, child(m.path, key), fmt.Sprintf("must be ≥ %d", low))
	}
	return v
}

// oneOf reads an optional string field restricted to choices; an absent
// field gives choices[0].
func (d *decoder) oneOf(m *mapping, key string, choices ...string) string {
	n := m.get(key)
	if n == nil {
		return choices[0]
	}
	s, ok := d.scalarString(n, child(m.path, key))
	if ok && !slices.Contains(choices, s) {
		d.addAt(n, child(m.path, key), fmt.Sprintf("%q is not one of %s", s, strings.Join(choices, ", ")))
	}
	return s
}

// value converts a YAML value into its JSON shape: nil, bool, float64,
// string, []any or map[string]any, the same values a JSON round trip of the
// stored job gives back. Strings that contain a template are recorded in
// sites when sites is not nil.
func (d *decoder) value(n *yaml.Node, path string, sites *[]site) (any, bool) {
	n = resolve(n)
	switch n.Kind {
	case yaml.MappingNode:
		m := d.mapping(n, path)
		if m == nil {
			return nil, false
		}
		out := make(map[string]any, len(m.keys))
		ok := true
		for _, k := range m.keys {
			v, good := d.value(m.entries[k].val, child(path, k), sites)
			ok = ok && good
			out[k] = v
		}
		return out, ok
	case yaml.SequenceNode:
		out := make([]any, len(n.Content))
		ok := true
		for i, c := range n.Content {
			v, good := d.value(c, index(path, i), sites)
			ok = ok && good
			out[i] = v
		}
		return out, ok
	}
	return d.scalarValue(n, path, sites)
}

func (d *decoder) scalarValue(n *yaml.Node, path string, sites *[]site) (any, bool) {
	switch n.ShortTag() {
	case "!!null":
		return nil, true
	case "!!bool":
		var b bool
		if n.Decode(&b) == nil {
			return b, true
		}
	case "!!int", "!!float":
		var f float64
		if n.Decode(&f) == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
			return f, true
		}
		d.addAt(n, path, quoteValue(n.Value)+" is not a number JSON can represent")
		return nil, false
	default:
		if sites != nil && strings.Contains(n.Value, "{{") {
			*sites = append(*sites, site{path: path, line: n.Line, text: n.Value})
		}
		return n.Value, true
	}
	return n.Value, true
}
