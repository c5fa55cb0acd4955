package assets

import (
	"errors"
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"
)

// Defaults of job and step fields.
const (
	defaultMaxActiveRuns    = 1
	defaultInitialBackoffMS = 1000
	defaultBackoffCapMS     = 60000
	defaultMaxWorkers       = 4
	targetPrefix            = "activity:"
)

var (
	jobKeys  = []string{"state", "kind", "default_input", "max_active_runs", "recovery_activity", "failure_activity", "budget", "steps"}
	stepKeys = []string{"id", "when", "retry", "recovery_activity", "spec", "target", "parallel", "fan_out", "fan_in", "loop", "wait",
		"default_input", "timeout_seconds", "session", "fsProfile"}
	bodyKeys = []string{"spec", "target", "parallel", "fan_out", "loop", "wait"}
	// activityStepKeys are the step keys that only make sense on a step that
	// runs an activity.
	activityStepKeys = []string{"default_input", "timeout_seconds", "session", "fsProfile"}
	retryKeys        = []string{"max_attempts", "initial_backoff_ms", "backoff_cap_ms", "backoff_strategy"}
)

// jobLoader decodes a job spec and builds the step tree that validate checks
// templates and sessions against.
type jobLoader struct {
	d       *decoder
	resolve func(string) (*Activity, error)
	opts    *loadOptions // what agent specs resolve with

	byID    map[string]*stepNode // step ids and fan_in collect names
	defPath map[string]string    // where each name in byID was first defined
	all     []*stepNode          // every step, in document order
}

func newJobLoader(d *decoder, resolve func(string) (*Activity, error), o *loadOptions) *jobLoader {
	return &jobLoader{d: d, resolve: resolve, opts: o, byID: map[string]*stepNode{}, defPath: map[string]string{}}
}

// jobActive is accepted for state as JobEnabled: the upstream system's word
// is enabled, and Orbit's own files said active.
const jobActive = "active"

func (l *jobLoader) jobSpec(n *yaml.Node, path string) JobSpec {
	d := l.d
	m := d.mapping(n, path)
	if m == nil {
		return JobSpec{}
	}
	d.checkKeys(m, jobKeys, nil)
	spec := JobSpec{
		State:            d.oneOf(m, "state", JobEnabled, JobDisabled, jobActive),
		Kind:             d.oneOf(m, "kind", "workflow", "subroutine"),
		MaxActiveRuns:    d.intAtLeast(m, "max_active_runs", 1, defaultMaxActiveRuns),
		RecoveryActivity: l.activityRef(m, "recovery_activity"),
		FailureActivity:  l.activityRef(m, "failure_activity"),
		Budget:           d.budget(m, "budget"),
	}
	if spec.State == jobActive {
		spec.State = JobEnabled
	}
	if n := m.get("default_input"); n != nil {
		spec.DefaultInput, _ = d.value(n, child(path, "default_input"), nil)
	}
	spec.Steps, _ = l.steps(m, "steps", nil, listSeq)
	l.failureKeyFree(m, &spec)
	return spec
}

// failureActivityKey is the step key a job's failure_activity runs as,
// which a top-level step of the same id would also have.
const failureActivityKey = "failure_activity"

// failureKeyFree reports a top-level step whose id is the step key of the
// job's failure_activity: the two would share a history.
func (l *jobLoader) failureKeyFree(m *mapping, spec *JobSpec) {
	if spec.FailureActivity == nil {
		return
	}
	for i, st := range spec.Steps {
		if st.ID == failureActivityKey {
			l.d.add(m.line("failure_activity"), child(m.path, "failure_activity"),
				fmt.Sprintf("runs as the step key %q, which %s also has: rename that step", failureActivityKey, index(child(m.path, "steps"), i)))
		}
	}
}

// steps decodes the list of steps under key of m.
func (l *jobLoader) steps(m *mapping, key string, parent *stepNode, list listKind) ([]Step, []*stepNode) {
	d := l.d
	path := child(m.path, key)
	n := m.get(key)
	switch {
	case n == nil:
		d.add(m.line(key), path, "is required")
		return nil, nil
	case n.Kind != yaml.SequenceNode:
		d.addAt(n, path, "must be a list of steps, not "+kindName(n))
		return nil, nil
	case len(n.Content) == 0:
		d.addAt(n, path, "must have at least one step")
		return nil, nil
	}
	steps := make([]Step, len(n.Content))
	nodes := make([]*stepNode, len(n.Content))
	for i, c := range n.Content {
		nodes[i] = l.step(c, index(path, i), &steps[i], parent, list, i)
	}
	for _, sn := range nodes {
		sn.siblings = nodes
	}
	return steps, nodes
}

// step decodes one step into out and returns its node in the step tree.
func (l *jobLoader) step(n *yaml.Node, path string, out *Step, parent *stepNode, list listKind, i int) *stepNode {
	d := l.d
	sn := &stepNode{path: path, parent: parent, list: list, index: i}
	l.all = append(l.all, sn)
	m := d.mapping(n, path)
	if m == nil {
		return sn
	}
	d.checkKeys(m, stepKeys, nil)
	l.stepID(m, sn)
	out.ID = sn.id
	if out.When = d.str(m, "when"); out.When != "" {
		sn.sites = append(sn.sites, site{path: child(path, "when"), line: m.line("when"), text: out.When, cond: true})
	}
	out.Retry = d.retry(m)
	out.RecoveryActivity = l.activityRef(m, "recovery_activity")

	var bodies []string
	for _, k := range bodyKeys {
		if m.has(k) {
			bodies = append(bodies, k)
		}
	}
	if _, ok := m.entries["fan_in"]; ok && !m.has("fan_out") {
		d.add(m.line("fan_in"), child(path, "fan_in"), "needs a fan_out on the same step")
		if len(bodies) == 0 {
			return sn
		}
	}
	switch len(bodies) {
	case 0:
		d.addAt(m.node, path, "has no body: expected one of spec, target, parallel, fan_out, loop, wait")
	case 1:
		l.body(m, bodies[0], out, sn)
	default:
		d.addAt(m.node, path, fmt.Sprintf("has %d bodies (%s): expected exactly one of spec, target, parallel, fan_out, loop, wait",
			len(bodies), strings.Join(bodies, ", ")))
	}
	return sn
}

func (l *jobLoader) stepID(m *mapping, sn *stepNode) {
	id, ok := l.d.requiredStr(m, "id")
	if !ok {
		return
	}
	sn.id = id
	if p := nameProblem(id, stepID, stepIDForm); p != "" {
		l.d.addAt(m.get("id"), child(m.path, "id"), p)
	}
	l.define(id, child(m.path, "id"), m.line("id"), sn)
}

// define records a name that templates may refer to as steps.<name>, which
// must be unique across the whole job.
func (l *jobLoader) define(name, path string, line int, sn *stepNode) {
	if _, dup := l.byID[name]; dup {
		l.d.add(line, path, fmt.Sprintf("duplicate step id %q (also at %s)", name, l.defPath[name]))
		return
	}
	l.byID[name] = sn
	l.defPath[name] = path
}

// body decodes the one body of a step, named by key.
func (l *jobLoader) body(m *mapping, key string, out *Step, sn *stepNode) {
	if key == "spec" || key == "target" {
		l.activityBody(m, out, sn)
		return
	}
	for _, k := range activityStepKeys {
		if _, ok := m.entries[k]; ok {
			l.d.add(m.line(k), child(m.path, k), fmt.Sprintf("is only allowed on a step with a spec or target body, not on a %s step", key))
		}
	}
	switch key {
	case "parallel":
		l.parallel(m, out, sn)
	case "fan_out":
		l.fanOut(m, out, sn)
	case "wait":
		l.wait(m, out, sn)
	default:
		l.loop(m, out, sn)
	}
}

// activityBody decodes an inline spec or a target, with the settings of an
// activity body.
func (l *jobLoader) activityBody(m *mapping, out *Step, sn *stepNode) {
	d := l.d
	sn.body = bodyActivity
	if n := m.get("spec"); n != nil {
		var written string
		out.Activity, written = d.activitySpec(n, child(m.path, "spec"), &sn.sites, l.opts)
		sn.backendAuto = written == backendAuto
	} else {
		out.Activity = l.target(m, out, sn)
	}
	if out.Activity != nil {
		sn.activityType, sn.backend = out.Activity.Type, out.Activity.Backend
		if es := out.Activity.ExecutorSpec; es != nil {
			sn.output = es.Output
		}
	}
	if n := m.get("default_input"); n != nil {
		out.DefaultInput, _ = d.value(n, child(m.path, "default_input"), &sn.sites)
	}
	out.TimeoutSeconds = d.seconds(m, "timeout_seconds", 1, 0)
	out.FSProfile = d.fsProfile(m, l.opts)
	if out.Session = d.str(m, "session"); out.Session != "" {
		sn.session, sn.sessionLine = out.Session, m.line("session")
	}
}

// target resolves target: activity:<name> to a copy of the activity's spec.
// The templates of the activity are checked against this step's position in
// the job and reported at the target.
func (l *jobLoader) target(m *mapping, out *Step, sn *stepNode) *ActivitySpec {
	path := child(m.path, "target")
	n := m.get("target")
	t, ok := l.d.scalarString(n, path)
	if !ok {
		return nil
	}
	out.Target = t
	name, found := strings.CutPrefix(t, targetPrefix)
	switch {
	case len(name) > MaxNameBytes:
		l.d.addAt(n, path, lengthProblem(name))
		return nil
	case !found || !assetName.MatchString(name):
		l.d.addAt(n, path, fmt.Sprintf("%q must be activity:<name>", t))
		return nil
	}
	a, reason := l.lookup(name)
	if reason != "" {
		l.d.addAt(n, path, reason)
		return nil
	}
	spec := a.Spec.clone()
	for _, s := range specTexts(&spec) {
		sn.sites = append(sn.sites, site{path: path, line: n.Line, label: fmt.Sprintf("activity %q %s", name, s.path), text: s.text})
	}
	return &spec
}

// activityRef reads a recovery_activity or failure_activity: an activity
// name, with or without the activity: prefix.
func (l *jobLoader) activityRef(m *mapping, key string) *ActivityRef {
	path := child(m.path, key)
	n := m.get(key)
	if n == nil {
		return nil
	}
	s, ok := l.d.scalarString(n, path)
	if !ok {
		return nil
	}
	name := strings.TrimPrefix(s, targetPrefix)
	if len(name) > MaxNameBytes {
		l.d.addAt(n, path, lengthProblem(name))
		return nil
	}
	if !assetName.MatchString(name) {
		l.d.addAt(n, path, fmt.Sprintf("%q is not an activity name", s))
		return nil
	}
	a, reason := l.lookup(name)
	if reason != "" {
		l.d.addAt(n, path, reason)
		return nil
	}
	return &ActivityRef{Name: name, Spec: a.Spec.clone()}
}

// lookup resolves an activity name, or says why it cannot.
func (l *jobLoader) lookup(name string) (*Activity, string) {
	if l.resolve != nil {
		a, err := l.resolve(name)
		switch {
		case err == nil && a != nil:
			return a, ""
		case err != nil && !errors.Is(err, ErrNotFound):
			return nil, fmt.Sprintf("activity %q: %v", name, err)
		}
	}
	return nil, fmt.Sprintf("unknown activity %q", name)
}

// retry reads a step's retry policy, applying its defaults.
func (d *decoder) retry(m *mapping) *Retry {
	n := m.get("retry")
	if n == nil {
		return nil
	}
	rm := d.mapping(n, child(m.path, "retry"))
	if rm == nil {
		return nil
	}
	d.checkKeys(rm, retryKeys, nil)
	r := &Retry{}
	if rm.has("max_attempts") {
		r.MaxAttempts = d.intAtLeast(rm, "max_attempts", 1, 0)
	} else {
		d.add(rm.line("max_attempts"), child(rm.path, "max_attempts"), "is required")
	}
	r.InitialBackoffMS = d.millis(rm, "initial_backoff_ms", 0, defaultInitialBackoffMS)
	r.BackoffCapMS = d.millis(rm, "backoff_cap_ms", 0, defaultBackoffCapMS)
	if r.InitialBackoffMS >= 0 && r.BackoffCapMS < r.InitialBackoffMS {
		if rm.has("backoff_cap_ms") {
			d.addAt(rm.get("backoff_cap_ms"), child(rm.path, "backoff_cap_ms"), fmt.Sprintf("must be ≥ initial_backoff_ms (%d)", r.InitialBackoffMS))
		} else {
			d.addAt(rm.get("initial_backoff_ms"), child(rm.path, "initial_backoff_ms"), fmt.Sprintf("must be ≤ backoff_cap_ms (%d by default)", defaultBackoffCapMS))
		}
	}
	r.BackoffStrategy = d.oneOf(rm, "backoff_strategy", "exponential", "linear")
	return r
}
