package assets

import (
	"fmt"
	"maps"
	"slices"
)

// bodyKind says what a step does.
type bodyKind int

const (
	bodyNone bodyKind = iota
	bodyActivity
	bodyParallel
	bodyFanOut
	bodyLoop
	bodyWait
)

// listKind says how the steps of a list run relative to each other.
type listKind int

const (
	listSeq      listKind = iota // one after another: job steps, loop steps
	listBranches                 // concurrently: parallel branches
	listWorker                   // the single worker step of a fan_out
)

// stepNode is a step in the tree that templates are checked against.
type stepNode struct {
	id       string
	path     string
	parent   *stepNode // the structural step this one is inside; nil at the top
	list     listKind
	index    int         // position in siblings
	siblings []*stepNode // the list this step is in, itself included
	body     bodyKind
	children []*stepNode // branches, loop steps, or the fan_out worker

	sites []site // templates evaluated before the step runs
	after []site // loop break_when: evaluated after each iteration

	loopItems    bool   // a loop over items
	collect      string // fan_in collect name
	activityType string
	backend      string // the agent_loop's resolved backend
	backendAuto  bool   // an inline agent_loop's backend was auto
	output       string // the output of the agent_loop's executor on the cli backend
	session      string
	sessionLine  int
}

// site is a templated string or a condition, with where it was written.
type site struct {
	path  string
	line  int
	label string // for a targeted activity: which of its fields holds the text
	text  string
	cond  bool
}

// parse returns the references of the site, or the reason it does not parse.
func (s site) parse() ([]Ref, string) {
	if s.cond {
		c, reason := parseCondition(s.text)
		if reason != "" {
			return nil, reason
		}
		return c.Refs(), ""
	}
	t, reason := parseTemplate(s.text)
	if reason != "" {
		return nil, reason
	}
	return t.Refs(), ""
}

// validate checks every template and condition of the job against the step
// tree, and the session rules. It runs after decoding, so that a reference
// to a step defined later in the file is recognised as such.
func (l *jobLoader) validate() {
	for _, sn := range l.all {
		for _, s := range sn.sites {
			l.checkSite(s, sn, false)
		}
		for _, s := range sn.after {
			l.checkSite(s, sn, true)
		}
		l.checkSession(sn)
	}
}

// checkSite reports a site that does not parse, or its references that
// cannot be satisfied at its place in the job. after is true for a loop's
// break_when, which sees the loop's own steps.
func (l *jobLoader) checkSite(s site, sn *stepNode, after bool) {
	report := func(reason string) {
		if s.label != "" {
			reason = s.label + ": " + reason
		}
		l.d.add(s.line, s.path, reason)
	}
	refs, reason := s.parse()
	if reason != "" {
		report(reason)
		return
	}
	var visible map[string]bool
	seen := map[string]bool{}
	for _, r := range refs {
		reason := ""
		switch r.Root {
		case RootItem:
			if !inside(sn, after, func(a *stepNode) bool { return a.body == bodyFanOut || a.body == bodyLoop && a.loopItems }) {
				reason = "item is only available inside a fan_out worker or a loop over items"
			}
		case RootIteration:
			if !inside(sn, after, func(a *stepNode) bool { return a.body == bodyLoop }) {
				reason = "iteration is only available inside a loop"
			}
		case RootSteps:
			if visible == nil {
				visible = visibleFrom(sn, after)
			}
			reason = l.stepRefProblem(r.Path[0], visible)
		}
		// One problem per cause: steps.x.output.a and steps.x.output.b
		// referring to an unknown x are the same mistake.
		if reason != "" && !seen[reason] {
			seen[reason] = true
			report(r.Raw + ": " + reason)
		}
	}
}

// inside reports whether a site of sn runs inside a step matching is: for
// after sites, sn itself counts.
func inside(sn *stepNode, after bool, is func(*stepNode) bool) bool {
	a := sn.parent
	if after {
		a = sn
	}
	for ; a != nil; a = a.parent {
		if is(a) {
			return true
		}
	}
	return false
}

// visibleFrom returns the names a site of sn may refer to as steps.<name>:
// the steps before sn in its own list and in every enclosing sequential
// list, each with the names directly inside it when it is a parallel or a
// loop (its branches, its body steps) and its collect name when it is a
// fan_out. A break_when (after) also sees the loop's own steps.
func visibleFrom(sn *stepNode, after bool) map[string]bool {
	vis := map[string]bool{}
	name := func(p *stepNode) {
		vis[p.id] = true
		if p.collect != "" {
			vis[p.collect] = true
		}
	}
	done := func(p *stepNode) {
		name(p)
		if p.body == bodyParallel || p.body == bodyLoop {
			for _, c := range p.children {
				name(c)
			}
		}
	}
	if after {
		for _, c := range sn.children {
			done(c)
		}
	}
	for c := sn; c != nil; c = c.parent {
		if c.list == listSeq {
			for _, s := range c.siblings[:c.index] {
				done(s)
			}
		}
	}
	delete(vis, "")
	return vis
}

// stepRefProblem says why steps.<id> is not available, or "" when it is.
func (l *jobLoader) stepRefProblem(id string, visible map[string]bool) string {
	if visible[id] {
		return ""
	}
	target, ok := l.byID[id]
	if !ok {
		reason := fmt.Sprintf("unknown step %q", id)
		if s := suggest(id, slices.Sorted(maps.Keys(l.byID))); s != "" {
			reason += fmt.Sprintf(" (did you mean %q?)", s)
		}
		return reason
	}
	for a := target.parent; a != nil; a = a.parent {
		if visible[a.id] {
			return fmt.Sprintf("step %q is inside step %q and cannot be referenced from here", id, a.id)
		}
	}
	return fmt.Sprintf("step %q has not run yet at this point", id)
}

// checkSession enforces where a step may bind a session: never inside a
// fan_out worker (workers run concurrently), and not inside a loop when the
// step's agent_loop runs on the cli backend (DESIGN §6), as resolved when
// its spec was loaded, unless its executor is one whose session Orbit
// continues (claude_code, codex); other CLI agents start afresh each step.
func (l *jobLoader) checkSession(sn *stepNode) {
	if sn.session == "" {
		return
	}
	path := child(sn.path, "session")
	for a := sn.parent; a != nil; a = a.parent {
		if a.body == bodyFanOut {
			l.d.add(sn.sessionLine, path, "cannot be bound inside a fan_out worker: workers run concurrently")
			return
		}
	}
	if sn.activityType != TypeAgentLoop || sn.backend != BackendCLI || sn.output == OutputClaudeCode || sn.output == OutputCodex {
		return
	}
	for a := sn.parent; a != nil; a = a.parent {
		if a.body == bodyLoop {
			reason := "cannot be bound inside a loop when the agent_loop runs on the cli backend"
			if sn.backendAuto {
				reason += " (backend auto resolves to cli)"
			}
			reason += " with an executor other than claude_code or codex: it starts a fresh process each step"
			if sn.output != "" {
				reason += fmt.Sprintf(" (output %s)", sn.output)
			}
			l.d.add(sn.sessionLine, path, reason)
			return
		}
	}
}
