package main_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

func TestRunTraceNestsEventsUnderTheirCauses(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	runID := runJob(t, p, "hello")

	tr := orbitJSON[events.Trace](t, p, "run", "trace", "--json", runID)
	assert.Empty(t, tr.Orphans)
	require.Len(t, tr.Roots, 1, "one root")
	root := tr.Roots[0]
	assert.Equal(t, events.RunRequested, root.Event.Type)
	assert.Equal(t, runID, root.Event.RunID)

	require.Len(t, root.Children, 1, "run.requested caused run.started only")
	started := root.Children[0]
	require.Equal(t, events.RunStarted, started.Event.Type)
	var steps []string
	for _, c := range started.Children {
		if c.Event.Type == events.StepFinished && c.Event.StepKey != "" {
			// greet and compose are echoes: the orchestrator decides them,
			// and each is one event (step protocol 4).
			steps = append(steps, c.Event.StepKey)
			assert.Empty(t, c.Children, c.Event.StepKey)
			continue
		}
		if c.Event.Type != events.StepStarted {
			continue
		}
		steps = append(steps, c.Event.StepKey)
		var under []string
		for _, g := range c.Children {
			assert.Equal(t, c.Event.StepKey, g.Event.StepKey, "a step's events hang under its own step.started")
			under = append(under, g.Event.Type)
		}
		// On an embedded store the shell step's first execution has no
		// activity.started (step protocol 5), and no step an
		// activity.finished (step protocol 3).
		assert.Equal(t, []string{events.ShellExited, events.StepFinished}, under, c.Event.StepKey)
		assert.Equal(t, events.StepFinished, under[len(under)-1], c.Event.StepKey)
	}
	assert.Equal(t, []string{"greet", "compose", "announce"}, steps)
	last := started.Children[len(started.Children)-1]
	assert.Equal(t, events.RunFinished, last.Event.Type)

	// Every event of the run is in the trace, once.
	assert.Equal(t, len(runEvents(t, p, runID)), countTrace(tr.Roots))

	// The text form, for the latest run by default.
	r := p.Orbit("run", "trace")
	require.Equal(t, 0, r.Code, r.String())
	lines := strings.Split(strings.TrimRight(r.Stdout, "\n"), "\n")
	require.Len(t, lines, countTrace(tr.Roots), r.Stdout)
	assert.Regexp(t, `^\s*1  run\.requested\s+`+runID+`  hello\b`, lines[0])
	assert.Regexp(t, `^\s*2  └─ run\.started$`, lines[1])
	assert.Regexp(t, `(?m)^\s*\d+     ├─ step\.finished\s+greet\s+deterministic activity:deterministic_reference  success \d+m?s$`, r.Stdout)
	assert.Regexp(t, `(?m)^\s*\d+     │  └─ step\.finished\s+announce\s+success \d+m?s$`, r.Stdout)
	assert.Regexp(t, `^\s*\d+     └─ run\.finished\s+success \d+m?s$`, lines[len(lines)-1])
	assert.NotContains(t, r.Stdout, "orphans:")

	r = p.Orbit("run", "trace", "no-such-run")
	assert.Equal(t, 2, r.Code, r.String())
}

func countTrace(ns []*events.TraceNode) int {
	n := len(ns)
	for _, c := range ns {
		n += countTrace(c.Children)
	}
	return n
}

// TestRunTraceFollowsDetachedChildren: a parent whose job.invoke steps do
// not wait may end before its children are requested; run show lists them
// and run trace holds their events all the same, each child under the step
// that started it.
func TestRunTraceFollowsDetachedChildren(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	p.WriteFile(".orbit/jobs/spawn.yaml", `schemaVersion: 2
kind: Job
metadata: {name: spawn}
spec:
  steps:
    - {id: one, spec: {type: deterministic, action: job.invoke, config: {job: hello, wait: false}}}
    - {id: two, spec: {type: deterministic, action: job.invoke, config: {job: hello, wait: false}}}
`)
	parent := runJob(t, p, "spawn")
	var children []string
	waitFor(t, "both children to finish", func() bool {
		children = runView(t, p, parent).Children
		if len(children) < 2 {
			return false
		}
		for _, c := range children {
			if !events.Terminal(runView(t, p, c).State) {
				return false
			}
		}
		return true
	})
	require.Len(t, children, 2)

	tr := orbitJSON[events.Trace](t, p, "run", "trace", "--json", parent)
	assert.Empty(t, tr.Orphans)
	want := len(runEvents(t, p, parent))
	for _, c := range children {
		want += len(runEvents(t, p, c))
	}
	assert.Equal(t, want, countTrace(tr.Roots), "every event of the parent and its children, once")
	under := map[string]string{}
	var walk func(ns []*events.TraceNode, step string)
	walk = func(ns []*events.TraceNode, step string) {
		for _, n := range ns {
			if n.Event.Type == events.RunRequested && n.Event.RunID != parent {
				under[n.Event.RunID] = step
			}
			next := step
			if n.Event.Type == events.StepStarted && n.Event.RunID == parent {
				next = n.Event.StepKey
			}
			walk(n.Children, next)
		}
	}
	walk(tr.Roots, "")
	var steps []string
	for _, c := range children {
		steps = append(steps, under[c])
	}
	assert.ElementsMatch(t, []string{"one", "two"}, steps, "the steps the children hang under")
}
