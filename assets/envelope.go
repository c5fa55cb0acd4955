package assets

import (
	"fmt"
	"slices"
	"strconv"

	"gopkg.in/yaml.v3"
)

// SchemaVersion is the asset grammar this package reads.
const SchemaVersion = 2

var envelopeKeys = []string{"schemaVersion", "kind", "metadata", "spec"}

// envelope is the part of an asset file shared by every kind.
type envelope struct {
	name        string
	nameLine    int
	description string
	labels      map[string]string
	spec        *yaml.Node // nil when missing
}

// parseAsset reads the one document in data as an asset of kind: its
// envelope, and its spec as spec reads it from the spec node (which may be
// nil) into d. It returns both, or an *Error listing every problem d found
// in the file.
func parseAsset[S any](file string, data []byte, kind string, spec func(d *decoder, n *yaml.Node) S) (*envelope, S, error) {
	var none S
	d := newDecoder(file)
	root := d.parseDocument(data, false)
	if root == nil {
		return nil, none, d.err()
	}
	env := d.envelope(root, kind)
	if env == nil {
		return nil, none, d.err()
	}
	s := spec(d, env.spec)
	if err := d.err(); err != nil {
		return nil, none, err
	}
	return env, s, nil
}

// envelope checks the document's schemaVersion, kind (which must be want) and
// metadata. It returns nil when the document cannot be read as the wanted
// kind at all; otherwise the spec is there to decode, even when metadata had
// problems.
func (d *decoder) envelope(root *yaml.Node, want string) *envelope {
	if root.Kind != yaml.MappingNode {
		d.addAt(root, "", fmt.Sprintf("the document must be a mapping with schemaVersion, kind, metadata and spec, not %s", kindName(root)))
		return nil
	}
	m := d.mapping(root, "")
	if !d.schemaVersion(m) || !d.kind(m, want) {
		return nil
	}
	d.checkKeys(m, envelopeKeys, nil)
	env := &envelope{}
	if n := m.get("metadata"); n == nil {
		d.add(m.line("metadata"), "metadata", "is required")
	} else {
		d.metadata(n, env)
	}
	env.spec = m.get("spec")
	if env.spec == nil {
		d.add(m.line("spec"), "spec", "is required")
		return nil
	}
	return env
}

// schemaVersion reports whether the document is in the grammar this package
// reads. A document in another grammar is not checked further: its other
// problems would only be consequences of that one.
func (d *decoder) schemaVersion(m *mapping) bool {
	n := m.get("schemaVersion")
	if n == nil {
		d.add(m.line("schemaVersion"), "schemaVersion", fmt.Sprintf("is required; this Orbit reads schemaVersion %d", SchemaVersion))
		return false
	}
	v, err := strconv.Atoi(n.Value)
	switch {
	case n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" || err != nil:
		d.addAt(n, "schemaVersion", fmt.Sprintf("must be %d, not %s", SchemaVersion, kindName(n)))
	case v == 1:
		d.addAt(n, "", fmt.Sprintf("schemaVersion 1 is retired; this Orbit reads schemaVersion %d", SchemaVersion))
	case v != SchemaVersion:
		d.addAt(n, "", fmt.Sprintf("schemaVersion %d is not supported; this Orbit reads schemaVersion %d", v, SchemaVersion))
	default:
		return true
	}
	return false
}

// kind reports whether the document is of the wanted kind.
func (d *decoder) kind(m *mapping, want string) bool {
	kinds := []string{KindActivity, KindJob, KindExecutor}
	n := m.get("kind")
	if n == nil {
		d.add(m.line("kind"), "kind", "is required (Activity, Job or Executor)")
		return false
	}
	k, ok := d.scalarString(n, "kind")
	switch {
	case !ok:
	case !slices.Contains(kinds, k):
		reason := fmt.Sprintf("%q is not one of Activity, Job, Executor", k)
		if s := suggest(k, kinds); s != "" {
			reason += fmt.Sprintf(" (did you mean %q?)", s)
		}
		d.addAt(n, "kind", reason)
	case k != want:
		d.addAt(n, "", fmt.Sprintf("kind is %s, expected %s", k, want))
	default:
		return true
	}
	return false
}

func (d *decoder) metadata(n *yaml.Node, env *envelope) {
	m := d.mapping(n, "metadata")
	if m == nil {
		return
	}
	d.checkKeys(m, []string{"name", "description", "labels"}, nil)
	if name, ok := d.requiredStr(m, "name"); ok {
		if p := nameProblem(name, assetName, assetNameForm); p == "" {
			env.name = name
		} else {
			d.addAt(m.get("name"), "metadata.name", p)
		}
	}
	env.nameLine = m.line("name")
	env.description = d.str(m, "description")
	if ln := m.get("labels"); ln != nil {
		lm := d.mapping(ln, "metadata.labels")
		if lm == nil {
			return
		}
		env.labels = make(map[string]string, len(lm.keys))
		for _, k := range lm.keys {
			if v, ok := d.scalarString(lm.entries[k].val, child(lm.path, k)); ok {
				env.labels[k] = v
			}
		}
	}
}

// ParseActivity reads one Activity asset from data; file is used only to
// locate problems and as the Activity's Source. It returns the activity with
// every default applied, or an *Error (matching ErrInvalid) listing every
// problem found in the file. Templates are checked for syntax; which steps
// they may refer to depends on the job that uses the activity and is checked
// there.
//
// An agent spec is resolved as a catalog with default options would: backend
// auto is http, the executors are the seeded ones, and fsProfile names are
// not checked. A Catalog resolves with its own options instead.
func ParseActivity(file string, data []byte) (*Activity, error) {
	a, _, err := parseActivity(file, data, defaultLoadOptions())
	return a, err
}

// parseActivity is ParseActivity with the options agent specs resolve with,
// that also returns the line of metadata.name.
func parseActivity(file string, data []byte, o *loadOptions) (*Activity, int, error) {
	env, spec, err := parseAsset(file, data, KindActivity, func(d *decoder, n *yaml.Node) *ActivitySpec {
		var sites []site
		spec, _ := d.activitySpec(n, "spec", &sites, o)
		for _, s := range sites {
			if _, reason := s.parse(); reason != "" {
				d.add(s.line, s.path, reason)
			}
		}
		return spec
	})
	if err != nil {
		return nil, 0, err
	}
	return &Activity{
		Name:        env.name,
		Description: env.description,
		Labels:      env.labels,
		Source:      file,
		Layer:       LayerFile,
		Spec:        *spec,
	}, env.nameLine, nil
}

// ParseJob reads one Job asset from data; file is used only to locate
// problems and as the Job's Source. resolve looks up the activities named by
// target: activity:<name> and recovery_activity; a nil resolve, or one that
// returns an error matching ErrNotFound, makes every such name an unknown
// activity. Inline agent specs are resolved as ParseActivity resolves them
// (backend auto is http; a Catalog applies its own options instead).
//
// It returns the job with every default applied and every reference
// resolved, or an *Error (matching ErrInvalid) listing every problem found in
// the file, including templates that refer to steps that cannot have run.
func ParseJob(file string, data []byte, resolve func(name string) (*Activity, error)) (*Job, error) {
	j, _, err := parseJob(file, data, resolve, defaultLoadOptions())
	return j, err
}

// parseJob is ParseJob with the options agent specs resolve with, that also
// returns the line of metadata.name.
func parseJob(file string, data []byte, resolve func(string) (*Activity, error), o *loadOptions) (*Job, int, error) {
	env, spec, err := parseAsset(file, data, KindJob, func(d *decoder, n *yaml.Node) JobSpec {
		l := newJobLoader(d, resolve, o)
		spec := l.jobSpec(n, "spec")
		l.validate()
		return spec
	})
	if err != nil {
		return nil, 0, err
	}
	return &Job{
		Name:        env.name,
		Description: env.description,
		Labels:      env.labels,
		Source:      file,
		Layer:       LayerFile,
		Spec:        spec,
	}, env.nameLine, nil
}
