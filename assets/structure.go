package assets

import (
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"
)

// Join modes.
const (
	JoinAll    = "all"
	JoinAny    = "any"
	JoinQuorum = "quorum"
)

// parallel decodes a parallel body: {join, branches}.
func (l *jobLoader) parallel(m *mapping, out *Step, sn *stepNode) {
	sn.body = bodyParallel
	pm := l.d.mapping(m.get("parallel"), child(m.path, "parallel"))
	if pm == nil {
		return
	}
	l.d.checkKeys(pm, []string{"join", "branches"}, nil)
	branches, kids := l.steps(pm, "branches", sn, listBranches)
	sn.children = kids
	count := len(branches)
	if count == 0 {
		count = -1 // the branches are wrong already; do not judge n against them
	}
	out.Parallel = &Parallel{Join: l.d.join(pm, count), Branches: branches}
}

// join reads the join of a parallel (branches is the number of branches) or
// of a fan_in (branches is -1: the number of items is known at run time).
func (d *decoder) join(parent *mapping, branches int) Join {
	j := Join{Mode: JoinAll}
	n := parent.get("join")
	if n == nil {
		return j
	}
	m := d.mapping(n, child(parent.path, "join"))
	if m == nil {
		return j
	}
	d.checkKeys(m, []string{"mode", "n"}, nil)
	j.Mode = d.oneOf(m, "mode", JoinAll, JoinAny, JoinQuorum)
	nn := m.get("n")
	npath := child(m.path, "n")
	switch {
	case j.Mode != JoinQuorum:
		if nn != nil {
			d.addAt(nn, npath, "is only valid with mode quorum")
		}
		return j
	case nn == nil:
		d.add(m.line("mode"), npath, "is required with mode quorum")
		return j
	}
	v, ok := d.scalarInt(nn, npath)
	if !ok {
		return j
	}
	j.N = v
	switch {
	case branches > 0 && (v < 1 || v > branches):
		d.addAt(nn, npath, fmt.Sprintf("must be between 1 and %d (the number of branches)", branches))
	case v < 1:
		d.addAt(nn, npath, "must be ≥ 1")
	}
	return j
}

// fanOut decodes a fan_out body and the fan_in that must come with it.
func (l *jobLoader) fanOut(m *mapping, out *Step, sn *stepNode) {
	d := l.d
	sn.body = bodyFanOut
	fm := d.mapping(m.get("fan_out"), child(m.path, "fan_out"))
	if fm != nil {
		d.checkKeys(fm, []string{"items", "max_workers", "worker"}, nil)
		fo := &FanOut{MaxWorkers: d.intAtLeast(fm, "max_workers", 1, defaultMaxWorkers)}
		if fm.has("items") {
			fo.Items, fo.ItemList = d.items(fm, sn)
		} else {
			d.add(fm.line("items"), child(fm.path, "items"), "is required")
		}
		if wn := fm.get("worker"); wn == nil {
			d.add(fm.line("worker"), child(fm.path, "worker"), "is required")
		} else {
			kid := l.step(wn, child(fm.path, "worker"), &fo.Worker, sn, listWorker, 0)
			sn.children = []*stepNode{kid}
			kid.siblings = sn.children
		}
		out.FanOut = fo
	}
	fn := m.get("fan_in")
	if fn == nil {
		d.add(m.line("fan_out"), child(m.path, "fan_out"), "needs a fan_in on the same step (fan_in: {join: ..., collect: ...})")
		return
	}
	fim := d.mapping(fn, child(m.path, "fan_in"))
	if fim == nil {
		return
	}
	d.checkKeys(fim, []string{"join", "collect"}, nil)
	out.FanIn = &FanIn{Join: d.join(fim, -1), Collect: d.str(fim, "collect")}
	if c := out.FanIn.Collect; c != "" {
		cpath := child(fim.path, "collect")
		if p := nameProblem(c, stepID, stepIDForm); p != "" {
			d.add(fim.line("collect"), cpath, p)
			return
		}
		sn.collect = c
		l.define(c, cpath, fim.line("collect"), sn)
	}
}

// loop decodes a loop body: {items?, max_iterations, break_when?, steps}.
func (l *jobLoader) loop(m *mapping, out *Step, sn *stepNode) {
	d := l.d
	sn.body = bodyLoop
	lm := d.mapping(m.get("loop"), child(m.path, "loop"))
	if lm == nil {
		return
	}
	d.checkKeys(lm, []string{"items", "max_iterations", "break_when", "steps"}, nil)
	lp := &Loop{BreakWhen: d.str(lm, "break_when")}
	if lm.has("items") {
		lp.Items, lp.ItemList = d.items(lm, sn)
		sn.loopItems = true
	}
	if lp.BreakWhen != "" {
		sn.after = append(sn.after, site{path: child(lm.path, "break_when"), line: lm.line("break_when"), text: lp.BreakWhen, cond: true})
	}
	if lm.has("max_iterations") {
		lp.MaxIterations = d.intAtLeast(lm, "max_iterations", 1, 0)
	} else {
		d.add(lm.line("max_iterations"), child(lm.path, "max_iterations"), "is required")
	}
	lp.Steps, sn.children = l.steps(lm, "steps", sn, listSeq)
	out.Loop = lp
}

// items reads the items of a fan_out or a loop (m holds them; the caller
// has checked that they are there): a YAML list, whose elements keep their
// JSON types and whose strings are templates, or a string, a template that
// renders to a list. Their templates become sites of sn. A mapping, number
// or bool is refused: it is not a list, and would run as one item.
func (d *decoder) items(m *mapping, sn *stepNode) (string, []any) {
	n := m.get("items")
	path := child(m.path, "items")
	switch {
	case n.Kind == yaml.SequenceNode:
		v, _ := d.value(n, path, &sn.sites)
		if list, ok := v.([]any); ok {
			return "", list
		}
		return "", nil
	case n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str":
		if strings.TrimSpace(n.Value) == "" {
			d.addAt(n, path, "must not be empty")
			return "", nil
		}
		sn.sites = append(sn.sites, site{path: path, line: n.Line, text: n.Value})
		return n.Value, nil
	}
	d.addAt(n, path, "must be a list, or a string that renders to one, not "+valueKind(n))
	return "", nil
}

// valueKind names the kind of a value that is not a list or a string.
func valueKind(n *yaml.Node) string {
	switch {
	case n.Kind == yaml.MappingNode:
		return "a mapping"
	case n.ShortTag() == "!!int" || n.ShortTag() == "!!float":
		return "a number (" + quoteValue(n.Value) + ")"
	case n.ShortTag() == "!!bool":
		return "a bool (" + quoteValue(n.Value) + ")"
	}
	return kindName(n)
}
