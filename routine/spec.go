package routine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/orbitrun/orbit/assets"
)

// Missed-run policies: what a routine does about the ticks no engine was up
// for (or that passed while it was paused).
const (
	// CatchUpOnce fires one run, for the last missed tick.
	CatchUpOnce = "catch_up_once"
	// Skip fires nothing and records the missed ticks as skipped.
	Skip = "skip"
)

// Overlap policies: what a tick does while the routine's previous run is
// live.
const (
	// Forbid skips the tick and records it.
	Forbid = "forbid"
	// Allow fires it anyway.
	Allow = "allow"
)

// Dir is where a project's routines live, below its root.
const Dir = ".orbit/routines"

// Routine is one routine file, loaded and validated.
type Routine struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Source is the file it was loaded from.
	Source string `json:"source"`
	Cron   string `json:"cron"`
	// MissedRun is CatchUpOnce or Skip (the default).
	MissedRun string `json:"missed_run"`
	// Job is the name of the job of target: job:<name>.
	Job   string         `json:"job"`
	Input map[string]any `json:"input,omitempty"`
	// TimeoutMinutes (0: none) cancels a run still live this long after
	// its tick.
	TimeoutMinutes int `json:"timeout_minutes,omitempty"`
	// Retries and BackoffMinutes are policy.retries: a tick's run that
	// fails is run again up to Retries times, BackoffMinutes after the
	// failure is seen (see Scheduler.retry).
	Retries        int `json:"retries,omitempty"`
	BackoffMinutes int `json:"backoff_minutes,omitempty"`
	// Overlap is Forbid (the default) or Allow.
	Overlap string `json:"overlap"`

	schedule   *Schedule
	targetLine int // where spec.target is, for TargetProblem
}

// TargetProblem is a problem with the routine's target (its job missing or
// disabled, reason), placed at spec.target in its file.
func (r *Routine) TargetProblem(reason string) assets.Problem {
	return assets.Problem{File: r.Source, Line: r.targetLine, Path: "spec.target", Reason: reason}
}

// Schedule is the routine's parsed cron.
func (r *Routine) Schedule() *Schedule { return r.schedule }

var routineName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]*$`)

// maxNameBytes bounds a routine's name, which goes into keys and events.
const maxNameBytes = 128

// Parse reads one routine file. Every problem is reported with the file,
// the line and the YAML path, in one *assets.Error.
func Parse(file string, data []byte) (*Routine, error) {
	p := &parser{file: file}
	r := p.parse(data)
	if len(p.problems) > 0 {
		return nil, &assets.Error{Problems: p.problems}
	}
	return r, nil
}

type parser struct {
	file     string
	problems []assets.Problem
}

func (p *parser) add(n *yaml.Node, path, reason string) {
	line := 0
	if n != nil {
		line = n.Line
	}
	p.problems = append(p.problems, assets.Problem{File: p.file, Line: line, Path: path, Reason: reason})
}

func (p *parser) parse(data []byte) *Routine {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		p.add(nil, "", "not YAML: "+err.Error())
		return nil
	}
	var extra yaml.Node
	if dec.Decode(&extra) == nil {
		p.add(&extra, "", "one document per file: a second one starts here")
		return nil
	}
	if len(doc.Content) == 0 {
		p.add(&doc, "", "the file is empty; want schemaVersion, kind: Routine, metadata and spec")
		return nil
	}
	root := doc.Content[0]
	if hasAlias(root) {
		p.add(root, "", "YAML aliases and anchors are not allowed")
		return nil
	}
	top := p.mapping(root, "", []string{"schemaVersion", "kind", "metadata", "spec"})
	if top == nil {
		return nil
	}
	if v := top["schemaVersion"]; v == nil || v.Value != "2" || v.Kind != yaml.ScalarNode {
		p.add(orNode(v, root), "schemaVersion", "is required and must be 2")
	}
	if k := top["kind"]; k == nil || k.Value != "Routine" || k.Kind != yaml.ScalarNode {
		p.add(orNode(k, root), "kind", "is required and must be Routine")
	}
	r := &Routine{Source: p.file, MissedRun: Skip, Overlap: Forbid}
	if md := p.mapping(top["metadata"], "metadata", []string{"name", "description"}); md != nil {
		r.Name = p.str(md["name"], "metadata.name", true)
		if r.Name != "" && (len(r.Name) > maxNameBytes || !routineName.MatchString(r.Name)) {
			p.add(md["name"], "metadata.name", fmt.Sprintf("%s: want letters, digits, _ and - (starting with a letter or digit), at most %d bytes", assets.Quote(r.Name), maxNameBytes))
		}
		r.Description = p.str(md["description"], "metadata.description", false)
	} else if top["metadata"] == nil {
		p.add(root, "metadata", "is required")
	}
	spec := p.mapping(top["spec"], "spec", []string{"trigger", "target", "input", "policy"})
	if spec == nil {
		if top["spec"] == nil {
			p.add(root, "spec", "is required")
		}
		return r
	}
	p.trigger(r, spec, root)
	p.target(r, spec, top["spec"])
	if in := spec["input"]; in != nil {
		var v any
		if in.Kind != yaml.MappingNode {
			p.add(in, "spec.input", "must be a mapping: the run's input object")
		} else if err := in.Decode(&v); err != nil {
			p.add(in, "spec.input", err.Error())
		} else if m, err := jsonObject(v); err != nil {
			p.add(in, "spec.input", err.Error())
		} else {
			r.Input = m
		}
	}
	p.policy(r, spec)
	return r
}

func (p *parser) trigger(r *Routine, spec map[string]*yaml.Node, root *yaml.Node) {
	tr := p.mapping(spec["trigger"], "spec.trigger", []string{"cron", "missed_run"})
	if tr == nil {
		if spec["trigger"] == nil {
			p.add(root, "spec.trigger", "is required: {cron, missed_run}")
		}
		return
	}
	r.Cron = p.str(tr["cron"], "spec.trigger.cron", true)
	if r.Cron != "" {
		s, err := ParseCron(r.Cron)
		if err != nil {
			p.add(tr["cron"], "spec.trigger.cron", err.Error())
		} else {
			r.schedule = s
		}
	} else if tr["cron"] == nil {
		p.add(spec["trigger"], "spec.trigger.cron", "is required")
	}
	if n := tr["missed_run"]; n != nil {
		r.MissedRun = p.oneOf(n, "spec.trigger.missed_run", CatchUpOnce, Skip)
	}
}

func (p *parser) target(r *Routine, spec map[string]*yaml.Node, at *yaml.Node) {
	n := spec["target"]
	if n == nil {
		p.add(at, "spec.target", "is required: job:<name>")
		return
	}
	t := p.str(n, "spec.target", true)
	name, ok := strings.CutPrefix(t, "job:")
	if t != "" && (!ok || name == "") {
		p.add(n, "spec.target", fmt.Sprintf("%s: want job:<name>", assets.Quote(t)))
		return
	}
	r.Job, r.targetLine = name, n.Line
}

func (p *parser) policy(r *Routine, spec map[string]*yaml.Node) {
	pol := p.mapping(spec["policy"], "spec.policy", []string{"timeout_minutes", "retries", "overlap"})
	if pol == nil {
		return
	}
	r.TimeoutMinutes = p.count(pol["timeout_minutes"], "spec.policy.timeout_minutes", 1)
	if rt := p.mapping(pol["retries"], "spec.policy.retries", []string{"max", "backoff_minutes"}); rt != nil {
		r.Retries = p.count(rt["max"], "spec.policy.retries.max", 0)
		r.BackoffMinutes = p.count(rt["backoff_minutes"], "spec.policy.retries.backoff_minutes", 0)
	}
	if n := pol["overlap"]; n != nil {
		r.Overlap = p.oneOf(n, "spec.policy.overlap", Forbid, Allow)
	}
}

// mapping reads n as a mapping with only the keys allowed, by key; nil
// (after a problem, unless n is nil) when it is not one.
func (p *parser) mapping(n *yaml.Node, path string, allowed []string) map[string]*yaml.Node {
	if n == nil {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		p.add(n, path, "must be a mapping")
		return nil
	}
	m := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		kp := k.Value
		if path != "" {
			kp = path + "." + k.Value
		}
		switch {
		case k.Kind != yaml.ScalarNode:
			p.add(k, path, "keys must be plain strings")
		case !slices.Contains(allowed, k.Value):
			p.add(k, kp, fmt.Sprintf("unknown key; want one of %s", strings.Join(allowed, ", ")))
		case m[k.Value] != nil:
			p.add(k, kp, "given twice")
		default:
			m[k.Value] = v
		}
	}
	return m
}

func (p *parser) str(n *yaml.Node, path string, required bool) string {
	if n == nil {
		return ""
	}
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		if required || n.Tag != "!!null" {
			p.add(n, path, "must be a string")
		}
		return ""
	}
	if required && strings.TrimSpace(n.Value) == "" {
		p.add(n, path, "must not be empty")
	}
	return n.Value
}

func (p *parser) oneOf(n *yaml.Node, path string, values ...string) string {
	v := p.str(n, path, true)
	if !slices.Contains(values, v) {
		p.add(n, path, fmt.Sprintf("%s: want %s", assets.Quote(v), strings.Join(values, " or ")))
		return values[len(values)-1]
	}
	return v
}

// maxCount bounds the numbers of a policy (a year of minutes).
const maxCount = 525600

func (p *parser) count(n *yaml.Node, path string, low int) int {
	if n == nil {
		return 0
	}
	var v int
	if n.Kind != yaml.ScalarNode || n.Tag != "!!int" || n.Decode(&v) != nil || v < low || v > maxCount {
		p.add(n, path, fmt.Sprintf("must be a whole number from %d to %d", low, maxCount))
		return 0
	}
	return v
}

func orNode(n, def *yaml.Node) *yaml.Node {
	if n != nil {
		return n
	}
	return def
}

func hasAlias(n *yaml.Node) bool {
	if n.Kind == yaml.AliasNode || n.Anchor != "" {
		return true
	}
	for _, c := range n.Content {
		if hasAlias(c) {
			return true
		}
	}
	return false
}

// jsonObject converts a decoded YAML mapping to the JSON object a run's
// input is.
func jsonObject(v any) (map[string]any, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("not representable as JSON: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("not a JSON object: %v", err)
	}
	return m, nil
}

// Load reads every routine of the project at root (.orbit/routines/*.yaml
// and *.yml; dotfiles and editor backups are not read). A file that does
// not load is left out, and its problems are returned with the others in
// one *assets.Error, as is a name that two files define (both are left
// out). The routines are sorted by name.
func Load(root string) ([]*Routine, error) {
	dir := filepath.Join(root, Dir)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var (
		list     []*Routine
		problems []assets.Problem
		byName   = map[string]*Routine{}
		dup      = map[string]bool{}
	)
	for _, e := range entries {
		name := e.Name()
		ext := filepath.Ext(name)
		if e.IsDir() || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "#") || strings.HasSuffix(name, "~") || (ext != ".yaml" && ext != ".yml") {
			continue
		}
		path := filepath.Join(dir, name)
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		r, err := Parse(path, data)
		var bad *assets.Error
		if errors.As(err, &bad) {
			problems = append(problems, bad.Problems...)
			continue
		}
		if first := byName[r.Name]; first != nil {
			problems = append(problems, assets.Problem{File: path, Path: "metadata.name", Reason: fmt.Sprintf("%s is also defined in %s", assets.Quote(r.Name), first.Source)})
			dup[r.Name] = true
			continue
		}
		byName[r.Name] = r
		list = append(list, r)
	}
	list = slices.DeleteFunc(list, func(r *Routine) bool { return dup[r.Name] })
	slices.SortFunc(list, func(a, b *Routine) int { return strings.Compare(a.Name, b.Name) })
	if len(problems) > 0 {
		return list, &assets.Error{Problems: problems}
	}
	return list, nil
}
