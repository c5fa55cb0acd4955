package assets

import (
	"maps"
	"slices"

	"gopkg.in/yaml.v3"
)

// The upstream system's agent envelopes and filesystem profiles, in the
// meanings Orbit gives them (docs/upstream.md, "Reference").

// CompletionRequired reports whether an agent step fails when its agent
// ends without its completion record: a final answer with stop_reason
// end_turn over HTTP, the CLI's result record on the cli backend, a
// terminal verb for Groundhog. It is true unless the activity says
// require_completion_envelope: false.
func (s *ActivitySpec) CompletionRequired() bool {
	return s.RequireCompletionEnvelope == nil || *s.RequireCompletionEnvelope
}

// envelopes reads require_response_envelope (agent_loop) and
// require_completion_envelope. A Groundhog attempt always ends with its
// terminal verb or is a failed attempt, so groundhog accepts only true.
func (d *decoder) envelopes(m *mapping, spec *ActivitySpec) {
	if spec.Type == TypeAgentLoop {
		spec.RequireResponseEnvelope = d.boolean(m, "require_response_envelope")
	}
	n := m.get("require_completion_envelope")
	if n == nil {
		return
	}
	b := d.boolean(m, "require_completion_envelope")
	if spec.Type == TypeGroundhog && !b {
		d.addAt(n, child(m.path, "require_completion_envelope"),
			"must be true on groundhog: an attempt that ends without its terminal verb is always a failed attempt")
	}
	spec.RequireCompletionEnvelope = &b
}

// boolean reads an optional bool field; absent is false.
func (d *decoder) boolean(m *mapping, key string) bool {
	n := m.get(key)
	if n == nil {
		return false
	}
	n = resolve(n)
	var b bool
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" || n.Decode(&b) != nil {
		d.addAt(n, child(m.path, key), "must be true or false, not "+kindName(n))
		return false
	}
	return b
}

// seededFSProfiles are the filesystem profiles every project has, with the
// upstream system's names and meanings. A profile of the same name in
// .orbit/config.yaml replaces the seeded one.
var seededFSProfiles = map[string]FSProfileConfig{
	// implementer reads and writes the whole workspace.
	"implementer": {Read: []string{"**"}, Write: []string{"**"}},
	// reviewer reads the whole workspace and writes nothing.
	"reviewer": {Read: []string{"**"}, Write: []string{}},
	// pure_compute has no filesystem at all: every fs tool call is denied.
	"pure_compute": {Read: []string{}, Write: []string{}},
	// docs_writer reads everything and writes documentation only.
	"docs_writer": {Read: []string{"**"}, Write: []string{"docs/**", "**/*.md", "**/*.rst", "**/*.txt"}},
}

// SeededFSProfileNames returns the names of the seeded filesystem
// profiles, sorted.
func SeededFSProfileNames() []string {
	return slices.Sorted(maps.Keys(seededFSProfiles))
}

// Profiles returns every filesystem profile of the project besides the
// built-in default (unless the config redefines it): the seeded ones,
// replaced by any of the same name in the config, and the config's own.
// The result is a fresh map the caller may keep.
func (c *Config) Profiles() map[string]FSProfileConfig {
	out := make(map[string]FSProfileConfig, len(seededFSProfiles)+len(c.FSProfiles))
	for name, p := range seededFSProfiles {
		out[name] = FSProfileConfig{Read: slices.Clone(p.Read), Write: slices.Clone(p.Write)}
	}
	for name, p := range c.FSProfiles {
		out[name] = FSProfileConfig{Read: slices.Clone(p.Read), Write: slices.Clone(p.Write)}
	}
	return out
}
