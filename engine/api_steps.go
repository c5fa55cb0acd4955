package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/projector"
)

// EndpointRunSteps answers a StepsQuery with a StepsPage: a run and one
// page of its step tree, for a reader (the console) that must not move a
// loop's thousands of step instances on every look.
const EndpointRunSteps = "runs.steps"

// StepsPageMax is how many iterations or items a StepsPage lists at most,
// and by default.
const StepsPageMax = 50

// StepsQuery asks for a run with a page of its step tree: the run's top
// level when Under is empty, else the iterations or items of the loop or
// fan-out whose instances' keys begin with Under+"/<n>" (Under is a
// StepGroup's Prefix), from the Offset-th (counted from 0), at most Limit
// of them (default and most StepsPageMax). The answer reflects at least
// every event up to MinSeq.
type StepsQuery struct {
	RunID  string `json:"run_id"`
	Under  string `json:"under,omitempty"`
	Offset int    `json:"offset,omitempty"`
	Limit  int    `json:"limit,omitempty"`
	MinSeq uint64 `json:"min_seq,omitempty"`
}

// StepsPage is a run and the rows of one page of its step tree.
type StepsPage struct {
	// Run is the run, its Steps left out.
	Run projector.RunView `json:"run"`
	// Steps is how many step instances the run has in all.
	Steps int `json:"steps"`
	// Under, Offset and Limit are the query's, Limit with its default.
	Under  string `json:"under,omitempty"`
	Offset int    `json:"offset,omitempty"`
	Limit  int    `json:"limit"`
	// Instances is how many iterations or items Under has (0 for the top
	// level), and Kind what they are (see StepGroup).
	Instances int    `json:"instances,omitempty"`
	Kind      string `json:"kind,omitempty"`
	// Rows are the page's rows in the order of the tree.
	Rows []StepRow `json:"rows"`
}

// StepRow is a row of a step tree: a step instance, or the summary of a
// loop's iterations or a fan-out's items, listed by asking for its Prefix.
// Exactly one of Step and Group is set.
type StepRow struct {
	Step  *projector.StepView `json:"step,omitempty"`
	Group *StepGroup          `json:"group,omitempty"`
}

// StepGroup summarises the instances of a loop or fan-out.
type StepGroup struct {
	// Prefix begins every key of the group: the loop or fan-out step's
	// key, with the "@<attempt>" of a retry of it.
	Prefix string `json:"prefix"`
	// Kind is "iterations" for a loop, "items" for a fan-out, else
	// "instances".
	Kind string `json:"kind"`
	// Instances is how many iterations or items have a step, Steps how
	// many step instances they hold in all (nested ones too), States those
	// steps by state.
	Instances int            `json:"instances"`
	Steps     int            `json:"steps"`
	States    map[string]int `json:"states"`
}

// Shown inline rather than summarised: a group of at most inlineInstances
// iterations or items, while a page has no more than rowBudget step rows.
const (
	inlineInstances = 10
	rowBudget       = 200
)

func (e *Engine) apiRunSteps(ctx context.Context, req json.RawMessage) (any, error) {
	var q StepsQuery
	if err := decode(req, &q); err != nil {
		return nil, err
	}
	if q.Offset < 0 || q.Limit < 0 {
		return nil, fmt.Errorf("%w: offset %d, limit %d: want 0 or more", events.ErrInvalidRequest, q.Offset, q.Limit)
	}
	if err := e.proj.WaitFor(ctx, q.MinSeq); err != nil {
		return nil, err
	}
	v, err := e.proj.RunView(ctx, q.RunID)
	if err != nil {
		return nil, err
	}
	return PageSteps(v, q.Under, q.Offset, q.Limit), nil
}

// PageSteps is the page of v's step tree that a StepsQuery for under,
// offset and limit asks for.
//
// At each level the steps of that level are rows in the view's order, and
// the instances of each loop or fan-out one summary row, where its first
// step would be; a group of few instances is shown inline instead (its
// instances in order, each as a level of its own) while the page stays
// small. Listing a group lists a page of its instances the same way.
func PageSteps(v *projector.RunView, under string, offset, limit int) *StepsPage {
	if limit <= 0 || limit > StepsPageMax {
		limit = StepsPageMax
	}
	page := &StepsPage{Run: *v, Steps: len(v.Steps), Under: under, Offset: offset, Limit: limit}
	page.Run.Steps = nil
	t := stepTree{kinds: map[string]string{}}
	for i := range v.Steps {
		s := &v.Steps[i]
		t.kinds[s.Key] = s.ActivityType
		t.all = append(t.all, treeStep{step: s, segs: strings.Split(s.Key, "/")})
	}
	budget := rowBudget
	if under == "" {
		page.Rows = t.level(nil, t.all, &budget)
		return page
	}
	page.Kind = t.kind(under)
	g := t.group(under, t.all)
	page.Instances = len(g.order)
	for _, n := range g.order[min(offset, len(g.order)):min(offset+limit, len(g.order))] {
		page.Rows = append(page.Rows, t.level(g.prefix(n), g.instances[n], &budget)...)
	}
	return page
}

// treeStep is a step with its key split at "/".
type treeStep struct {
	step *projector.StepView
	segs []string
}

type stepTree struct {
	all []treeStep
	// kinds are the activity types by step key.
	kinds map[string]string
}

// kind names the instances of the group with prefix: a loop's or a
// fan-out's, whose step key is prefix without its "@<attempt>".
func (t *stepTree) kind(prefix string) string {
	key := prefix
	if i := strings.LastIndexByte(key, '@'); i > strings.LastIndexByte(key, '/') {
		key = key[:i]
	}
	switch t.kinds[key] {
	case "loop":
		return "iterations"
	case "fan_out":
		return "items"
	}
	return "instances"
}

// instanceGroup is the steps of one group by instance number.
type instanceGroup struct {
	segs      []string
	order     []string
	instances map[string][]treeStep
}

func (g *instanceGroup) prefix(n string) []string {
	return append(g.segs[:len(g.segs):len(g.segs)], n)
}

// group collects from steps those under prefix/<n>.
func (t *stepTree) group(prefix string, steps []treeStep) *instanceGroup {
	g := &instanceGroup{segs: strings.Split(prefix, "/"), instances: map[string][]treeStep{}}
	for _, s := range steps {
		if len(s.segs) > len(g.segs) && isInstance(s.segs[len(g.segs)]) && slices.Equal(s.segs[:len(g.segs)], g.segs) {
			g.add(s.segs[len(g.segs)], s)
		}
	}
	sortInstances(g.order)
	return g
}

func (g *instanceGroup) add(n string, s treeStep) {
	if _, ok := g.instances[n]; !ok {
		g.order = append(g.order, n)
	}
	g.instances[n] = append(g.instances[n], s)
}

// level lists the steps of one level of the tree, whose keys begin with
// scope: each step whose key goes on without an instance number is a row,
// and the steps of each loop or fan-out a group, shown inline or
// summarised. budget is what is left of the page's step rows.
func (t *stepTree) level(scope []string, steps []treeStep, budget *int) []StepRow {
	type slot struct {
		row   StepRow
		group *instanceGroup
	}
	var slots []slot
	groups := map[string]int{}
	for _, s := range steps {
		rel := s.segs[len(scope):]
		i := 0
		for i < len(rel) && !isInstance(rel[i]) {
			i++
		}
		if i == len(rel) {
			slots = append(slots, slot{row: StepRow{Step: s.step}})
			*budget--
			continue
		}
		segs := s.segs[:len(scope)+i]
		prefix := strings.Join(segs, "/")
		at, ok := groups[prefix]
		if !ok {
			at = len(slots)
			groups[prefix] = at
			slots = append(slots, slot{group: &instanceGroup{segs: segs, instances: map[string][]treeStep{}}})
		}
		slots[at].group.add(rel[i], s)
	}
	var rows []StepRow
	for _, sl := range slots {
		g := sl.group
		if g == nil {
			rows = append(rows, sl.row)
			continue
		}
		sortInstances(g.order)
		steps := 0
		for _, n := range g.order {
			steps += len(g.instances[n])
		}
		if len(g.order) <= inlineInstances && steps <= *budget {
			for _, n := range g.order {
				rows = append(rows, t.level(g.prefix(n), g.instances[n], budget)...)
			}
			continue
		}
		prefix := strings.Join(g.segs, "/")
		sum := &StepGroup{Prefix: prefix, Kind: t.kind(prefix), Instances: len(g.order), Steps: steps, States: map[string]int{}}
		for _, n := range g.order {
			for _, s := range g.instances[n] {
				sum.States[s.step.State]++
			}
		}
		rows = append(rows, StepRow{Group: sum})
	}
	return rows
}

// isInstance reports whether a key segment is an iteration or item number.
func isInstance(seg string) bool {
	if seg == "" || len(seg) > 19 {
		return false
	}
	for _, c := range seg {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// sortInstances sorts instance numbers numerically.
func sortInstances(ns []string) {
	slices.SortFunc(ns, func(a, b string) int {
		if len(a) != len(b) {
			return len(a) - len(b)
		}
		return strings.Compare(a, b)
	})
}
