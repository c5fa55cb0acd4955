package events_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
)

// tev is a compact event literal for trace tests: sequence, id, type, step
// key and parent id. The run id is the id's prefix before '/'.
func tev(seq uint64, id, typ, key, parent string) events.Event {
	run, _, _ := strings.Cut(id, "/")
	return events.Event{
		ID: id, Type: typ, RunID: run, StepKey: key, ParentID: parent, Seq: seq,
		Time: time.Date(2026, 1, 2, 3, 4, 5, int(seq), time.UTC),
	}
}

// shape renders a trace as "roots: a(b c) | orphans: x(y)", ids only.
func shape(t *events.Trace) string {
	var b strings.Builder
	var node func(n *events.TraceNode)
	node = func(n *events.TraceNode) {
		b.WriteString(n.Event.ID)
		if len(n.Children) == 0 {
			return
		}
		b.WriteByte('(')
		for i, c := range n.Children {
			if i > 0 {
				b.WriteByte(' ')
			}
			node(c)
		}
		b.WriteByte(')')
	}
	list := func(ns []*events.TraceNode) {
		for i, n := range ns {
			if i > 0 {
				b.WriteByte(' ')
			}
			node(n)
		}
	}
	b.WriteString("roots: ")
	list(t.Roots)
	b.WriteString(" | orphans: ")
	list(t.Orphans)
	return b.String()
}

// helloRun is a top-level run of one shell step, with the parent links the
// executor records.
func helloRun() []events.Event {
	return []events.Event{
		tev(1, "r/req", events.RunRequested, "", ""),
		tev(2, "r/start", events.RunStarted, "", "r/req"),
		tev(3, "r/greet", events.StepStarted, "greet", "r/start"),
		tev(4, "r/greet.act", events.ActivityStarted, "greet", "r/greet"),
		tev(5, "r/greet.exit", events.ShellExited, "greet", "r/greet"),
		tev(6, "r/greet.actdone", events.ActivityFinished, "greet", "r/greet"),
		tev(7, "r/greet.done", events.StepFinished, "greet", "r/greet"),
		tev(8, "r/fin", events.RunFinished, "", "r/start"),
	}
}

// structuralRun nests steps under a parallel, a fan-out and a loop step.
func structuralRun() []events.Event {
	return []events.Event{
		tev(1, "s/req", events.RunRequested, "", ""),
		tev(2, "s/start", events.RunStarted, "", "s/req"),
		tev(3, "s/par", events.StepStarted, "fanned", "s/start"),
		tev(4, "s/par.a", events.StepStarted, "fanned/a", "s/par"),
		tev(5, "s/par.b", events.StepStarted, "fanned/b", "s/par"),
		tev(6, "s/par.b.done", events.StepFinished, "fanned/b", "s/par.b"),
		tev(7, "s/par.a.done", events.StepFinished, "fanned/a", "s/par.a"),
		tev(8, "s/par.join", events.StepJoin, "fanned", "s/par"),
		tev(9, "s/par.done", events.StepFinished, "fanned", "s/par"),
		tev(10, "s/fan", events.StepStarted, "per_item", "s/start"),
		tev(11, "s/fan.i1", events.FanoutItem, "per_item/1", "s/fan"),
		tev(12, "s/fan.1", events.StepStarted, "per_item/1", "s/fan"),
		tev(13, "s/fan.1.done", events.StepFinished, "per_item/1", "s/fan.1"),
		tev(14, "s/fan.join", events.StepJoin, "per_item", "s/fan"),
		tev(15, "s/fan.done", events.StepFinished, "per_item", "s/fan"),
		tev(16, "s/loop", events.StepStarted, "review_fix", "s/start"),
		tev(17, "s/loop.1.review", events.StepStarted, "review_fix/1/review", "s/loop"),
		tev(18, "s/loop.1.retry", events.StepRetryScheduled, "review_fix/1/review", "s/loop.1.review"),
		tev(19, "s/loop.1.done", events.StepFinished, "review_fix/1/review", "s/loop.1.review"),
		tev(20, "s/loop.it1", events.LoopIteration, "review_fix", "s/loop"),
		tev(21, "s/loop.done", events.StepFinished, "review_fix", "s/loop"),
		tev(22, "s/fin", events.RunFinished, "", "s/start"),
	}
}

// parentAndChild is a run whose step "sub" started child run c, with the
// two runs' events interleaved in the log.
func parentAndChild() []events.Event {
	return []events.Event{
		tev(1, "p/req", events.RunRequested, "", ""),
		tev(2, "p/start", events.RunStarted, "", "p/req"),
		tev(3, "p/sub", events.StepStarted, "sub", "p/start"),
		tev(4, "c/req", events.RunRequested, "", "p/sub"),
		tev(5, "c/start", events.RunStarted, "", "c/req"),
		tev(6, "c/build", events.StepStarted, "build", "c/start"),
		tev(7, "p/cancel", events.RunCancelRequested, "", "p/req"),
		tev(8, "c/build.done", events.StepFinished, "build", "c/build"),
		tev(9, "c/fin", events.RunFinished, "", "c/start"),
		tev(10, "p/sub.done", events.StepFinished, "sub", "p/sub"),
		tev(11, "p/fin", events.RunFinished, "", "p/start"),
	}
}

func TestBuildTrace(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		evs  []events.Event
		want string
	}{
		{
			name: "empty",
			want: "roots:  | orphans: ",
		},
		{
			name: "simple run",
			evs:  helloRun(),
			want: "roots: r/req(r/start(r/greet(r/greet.act r/greet.exit r/greet.actdone r/greet.done) r/fin)) | orphans: ",
		},
		{
			name: "steps nest under parallel, fan-out and loop steps",
			evs:  structuralRun(),
			want: "roots: s/req(s/start(" +
				"s/par(s/par.a(s/par.a.done) s/par.b(s/par.b.done) s/par.join s/par.done) " +
				"s/fan(s/fan.i1 s/fan.1(s/fan.1.done) s/fan.join s/fan.done) " +
				"s/loop(s/loop.1.review(s/loop.1.retry s/loop.1.done) s/loop.it1 s/loop.done) " +
				"s/fin)) | orphans: ",
		},
		{
			name: "a child run hangs under the parent's step",
			evs:  parentAndChild(),
			want: "roots: p/req(p/start(p/sub(c/req(c/start(c/build(c/build.done) c/fin)) p/sub.done) p/fin) p/cancel) | orphans: ",
		},
		{
			name: "a child run read alone is an orphan with its tree intact",
			evs:  parentAndChild()[3:6],
			want: "roots:  | orphans: c/req(c/start(c/build))",
		},
		{
			name: "events whose cause was not read are orphans",
			evs: []events.Event{
				tev(1, "r/req", events.RunRequested, "", ""),
				tev(2, "r/start", events.RunStarted, "", "r/req"),
				tev(5, "r/b.done", events.StepFinished, "b", "r/b"),
				tev(7, "r/a.act", events.ActivityStarted, "a", "r/a"),
				tev(8, "r/a.done", events.StepFinished, "a", "r/a"),
			},
			want: "roots: r/req(r/start) | orphans: r/b.done r/a.act r/a.done",
		},
		{
			name: "several roots in log order",
			evs: []events.Event{
				tev(9, "b/req", events.RunRequested, "", ""),
				tev(3, "a/req", events.RunRequested, "", ""),
				tev(10, "b/start", events.RunStarted, "", "b/req"),
			},
			want: "roots: a/req b/req(b/start) | orphans: ",
		},
		{
			name: "a loop of parent links is cut at its earliest event",
			evs: []events.Event{
				tev(1, "r/req", events.RunRequested, "", ""),
				tev(4, "r/x", events.StepStarted, "x", "r/z"),
				tev(3, "r/y", events.StepStarted, "y", "r/x"),
				tev(5, "r/z", events.StepStarted, "z", "r/y"),
				tev(6, "r/tail", events.StepFinished, "x", "r/x"),
			},
			want: "roots: r/req | orphans: r/y(r/z(r/x(r/tail)))",
		},
		{
			name: "an event that is its own parent",
			evs: []events.Event{
				tev(1, "r/self", events.StepStarted, "s", "r/self"),
				tev(2, "r/under", events.StepFinished, "s", "r/self"),
			},
			want: "roots:  | orphans: r/self(r/under)",
		},
		{
			name: "a duplicate id keeps the copy with the lowest sequence",
			evs: []events.Event{
				tev(1, "r/req", events.RunRequested, "", ""),
				tev(4, "r/start", events.RunStarted, "", "r/missing"),
				tev(2, "r/start", events.RunStarted, "", "r/req"),
				tev(3, "r/step", events.StepStarted, "a", "r/start"),
			},
			want: "roots: r/req(r/start(r/step)) | orphans: ",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := events.BuildTrace(tt.evs)
			assert.Equal(t, tt.want, shape(got))
			assert.Equal(t, distinctIDs(tt.evs), countNodes(got), "every distinct event appears exactly once")
		})
	}
}

func TestBuildTraceKeepsEventsWithoutID(t *testing.T) {
	t.Parallel()
	tr := events.BuildTrace([]events.Event{
		tev(2, "", events.StepStarted, "a", ""),
		tev(1, "", events.StepStarted, "b", "r/nowhere"),
		tev(3, "", events.StepStarted, "c", ""),
	})
	require.Len(t, tr.Roots, 2)
	require.Len(t, tr.Orphans, 1)
	assert.Equal(t, "a", tr.Roots[0].Event.StepKey)
	assert.Equal(t, "c", tr.Roots[1].Event.StepKey)
	assert.Equal(t, "b", tr.Orphans[0].Event.StepKey)
}

func TestBuildTraceKeepsEventsWhole(t *testing.T) {
	t.Parallel()
	in := tev(7, "r/done", events.StepFinished, "greet", "")
	in.Job, in.TaskID, in.Data = "hello", "T-1", json.RawMessage(`{"attempt":1,"state":"success","duration_ms":3}`)
	tr := events.BuildTrace([]events.Event{in})
	require.Len(t, tr.Roots, 1)
	assert.Equal(t, in, tr.Roots[0].Event)

	out, err := json.Marshal(events.BuildTrace(nil))
	require.NoError(t, err)
	assert.JSONEq(t, `{"roots":[],"orphans":[]}`, string(out), "empty lists, never null")
}

// TestBuildTraceIgnoresInputOrder shuffles a mixed set of events (several
// runs, orphans, a loop and duplicate copies) and expects identical JSON.
func TestBuildTraceIgnoresInputOrder(t *testing.T) {
	t.Parallel()
	var all []events.Event
	all = append(all, helloRun()...)
	all = append(all, structuralRun()...)
	all = append(all, parentAndChild()...)
	for i := range all {
		all[i].Seq += uint64(i) * 100 // distinct runs, distinct sequences
	}
	all = append(all,
		tev(5000, "o/orphan", events.StepFinished, "x", "o/gone"),
		tev(5001, "o/loop1", events.StepStarted, "l", "o/loop2"),
		tev(5002, "o/loop2", events.StepStarted, "l", "o/loop1"),
		// Same id and sequence, different content: read twice, or forged.
		tev(6000, "d/dup", events.StepStarted, "first", ""),
		tev(6000, "d/dup", events.StepStarted, "second", ""),
		tev(0, "z/noseq", events.RunRequested, "", ""),
	)
	all = append(all, all[3], all[10]) // exact copies

	want, err := json.Marshal(events.BuildTrace(all))
	require.NoError(t, err)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	for range 50 {
		shuffled := append([]events.Event(nil), all...)
		rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		got, err := json.Marshal(events.BuildTrace(shuffled))
		require.NoError(t, err)
		require.Equal(t, string(want), string(got), "seed %d", seed)
	}
}

// TestBuildTraceRandomGraphs links events at random (to each other, to
// themselves, to missing ids, or to nothing) and checks that every distinct
// id comes out exactly once, in an order independent of the input's.
func TestBuildTraceRandomGraphs(t *testing.T) {
	t.Parallel()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	for round := range 200 {
		n := 1 + rng.IntN(40)
		evs := make([]events.Event, n)
		for i := range evs {
			parent := ""
			switch rng.IntN(4) {
			case 0:
			case 1:
				parent = fmt.Sprintf("r/missing%d", i)
			default:
				parent = fmt.Sprintf("r/%d", rng.IntN(n))
			}
			evs[i] = tev(uint64(rng.IntN(2*n)), fmt.Sprintf("r/%d", rng.IntN(n)), events.StepStarted, "", parent)
		}
		tr := events.BuildTrace(evs)
		require.Equal(t, distinctIDs(evs), countNodes(tr), "seed %d round %d", seed, round)
		for _, r := range tr.Roots {
			require.Empty(t, r.Event.ParentID, "seed %d round %d", seed, round)
		}

		want, err := json.Marshal(tr)
		require.NoError(t, err)
		rng.Shuffle(n, func(i, j int) { evs[i], evs[j] = evs[j], evs[i] })
		got, err := json.Marshal(events.BuildTrace(evs))
		require.NoError(t, err)
		require.Equal(t, string(want), string(got), "seed %d round %d", seed, round)
	}
}

func distinctIDs(evs []events.Event) int {
	ids := map[string]bool{}
	for _, ev := range evs {
		ids[ev.ID] = true
	}
	return len(ids)
}

// countNodes counts the nodes of a trace and fails on an id seen twice.
func countNodes(t *events.Trace) int {
	seen := map[string]bool{}
	var walk func(ns []*events.TraceNode)
	walk = func(ns []*events.TraceNode) {
		for _, n := range ns {
			if seen[n.Event.ID] {
				panic("id twice in trace: " + n.Event.ID)
			}
			seen[n.Event.ID] = true
			walk(n.Children)
		}
	}
	walk(t.Roots)
	walk(t.Orphans)
	return len(seen)
}
