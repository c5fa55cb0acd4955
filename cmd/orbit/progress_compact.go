package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/orbitrun/orbit/events"
)

// Progress modes (--progress).
const (
	// progressAuto prints the first fullInstances iterations and items of
	// every loop and fan_out in full, and summarises the rest.
	progressAuto = "auto"
	// progressFull prints every step of every iteration and item.
	progressFull = "full"
	// progressCompact prints no step inside a loop or fan_out but its
	// failures, and summarises the iterations and items.
	progressCompact = "compact"
)

const (
	// fullInstances is how many iterations or items of each loop or
	// fan_out auto prints in full.
	fullInstances = 10
	// maxFailureLines bounds the failures inside one loop or fan_out that
	// are printed one by one; the summaries count the rest.
	maxFailureLines = 20
)

// progressMode is the value of --progress.
type progressMode string

func (m *progressMode) String() string { return string(*m) }
func (m *progressMode) Type() string   { return "full|compact|auto" }
func (m *progressMode) Set(s string) error {
	switch s {
	case progressAuto, progressFull, progressCompact:
		*m = progressMode(s)
		return nil
	}
	return fmt.Errorf("%q is not one of full, compact, auto", s)
}

// progressFlag adds --progress to a command that follows a run.
func (a *app) progressFlag(cmd *cobra.Command) {
	a.progress = progressAuto
	cmd.Flags().Var(&a.progress, "progress", fmt.Sprintf("full: a line for every step; compact: loops and fan_outs as counts, and their failures; auto: the first %d iterations and items of each in full, then counts", fullInstances))
}

// collection is a loop or fan_out of a followed run: how many of its
// iterations or items there are, and how each ended.
type collection struct {
	key    string
	noun   string // iterations or items
	total  int
	most   bool           // total is max_iterations: a break may end it sooner
	ended  map[int]string // state by iteration or item index
	tenths int            // the tenths of total reported so far
	quiet  bool           // steps inside it went unprinted
	failed int            // failures printed one by one
}

// summary says how the iterations or items ended: "1500/5000 items:
// 1498 success, 2 failed", or for a loop not over items "37 iterations
// (max_iterations 5000): 37 success".
func (c *collection) summary() string {
	counts := map[string]int{}
	for _, s := range c.ended {
		counts[s]++
	}
	states := make([]string, 0, len(counts))
	for s := range counts {
		states = append(states, s)
	}
	slices.Sort(states)
	parts := make([]string, len(states))
	for i, s := range states {
		parts[i] = fmt.Sprintf("%d %s", counts[s], s)
	}
	if c.most {
		return fmt.Sprintf("%d %s (max_iterations %d): %s", len(c.ended), c.noun, c.total, strings.Join(parts, ", "))
	}
	return fmt.Sprintf("%d/%d %s: %s", len(c.ended), c.total, c.noun, strings.Join(parts, ", "))
}

// collectionStarted notes a loop or fan_out whose step.started ev is.
func (p *progress) collectionStarted(ev events.Event, d *events.StepStartedData) {
	noun := "items"
	if d.ActivityType == events.TypeLoop {
		noun = "iterations"
	}
	c := &collection{key: ev.StepKey, noun: noun, ended: map[int]string{}}
	if in, ok := d.Input.(map[string]any); ok {
		if items, ok := in["items"].([]any); ok {
			c.total = len(items)
		} else if n, ok := in["max_iterations"].(float64); ok {
			c.total, c.most = int(n), true
		}
	}
	p.colls[ev.StepKey] = c
}

// inside is a loop or fan_out a step is in, and the step's iteration or
// item index in it.
type inside struct {
	c     *collection
	index int
}

// enclosing returns the loops and fan_outs key is inside, outermost
// first, with its iteration or item index in each.
func (p *progress) enclosing(key string) []inside {
	var out []inside
	for ckey, c := range p.colls {
		rest, ok := strings.CutPrefix(key, ckey)
		if !ok || rest == "" || (rest[0] != '/' && rest[0] != '@') {
			continue
		}
		_, rest, _ = strings.Cut(rest, "/") // past key/ or key@n/
		seg, _, _ := strings.Cut(rest, "/")
		if n, err := strconv.Atoi(seg); err == nil {
			out = append(out, inside{c, n})
		}
	}
	slices.SortFunc(out, func(a, b inside) int { return len(a.c.key) - len(b.c.key) })
	return out
}

// quiet reports whether a line about key is left out, and notes it in
// the collections it is inside.
func (p *progress) quiet(key string) bool {
	if p.mode == progressFull {
		return false
	}
	quiet := false
	for _, in := range p.enclosing(key) {
		c := in.c
		if p.mode == progressCompact || in.index > fullInstances {
			if !c.quiet && p.mode == progressAuto {
				p.line("...", c.key, "", fmt.Sprintf("%s past the %dth are counted, not listed (--progress full lists them)", c.noun, fullInstances))
			}
			c.quiet = true
			quiet = true
		}
	}
	return quiet
}

// failure reports whether a failed step inside quiet collections is still
// printed: the first maxFailureLines of each are.
func (p *progress) failure(key string) bool {
	show := true
	for _, in := range p.enclosing(key) {
		if in.c.failed >= maxFailureLines {
			show = false
		}
		in.c.failed++
	}
	return show
}

// ended counts an iteration or item that ended, and says how far its
// collection is at each tenth when its steps go unprinted.
func (p *progress) ended(c *collection, index int, state string) {
	c.ended[index] = state
	if !c.quiet || c.total == 0 {
		return
	}
	// The tenths before the last: the step's own end says the last.
	if tenths := len(c.ended) * 10 / c.total; tenths > c.tenths && tenths < 10 {
		c.tenths = tenths
		p.line("...", c.key, "", c.summary())
	}
}

// counted follows iterations and items as they end: loop.iteration for a
// loop, the worker's step.finished for a fan_out's item.
func (p *progress) counted(ev events.Event) {
	switch ev.Type {
	case events.LoopIteration:
		if c := p.colls[ev.StepKey]; c != nil {
			var d events.LoopIterationData
			if ev.Decode(&d) == nil {
				p.ended(c, d.Iteration, d.State)
			}
		}
	case events.StepFinished:
		parent, seg, ok := cutLast(ev.StepKey)
		if !ok {
			return
		}
		base, _, _ := strings.Cut(parent, "@")
		c := p.colls[base]
		n, err := strconv.Atoi(seg)
		if c == nil || c.noun != "items" || err != nil {
			return
		}
		var d events.StepFinishedData
		if ev.Decode(&d) == nil {
			p.ended(c, n, d.State)
		}
	}
}

// cutLast splits a step key at its last slash.
func cutLast(key string) (string, string, bool) {
	i := strings.LastIndexByte(key, '/')
	if i < 0 {
		return "", "", false
	}
	return key[:i], key[i+1:], true
}
