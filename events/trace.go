package events

import (
	"bytes"
	"cmp"
	"encoding/json"
	"slices"
)

// TraceNode is one event of a Trace and the events it caused, in log order.
type TraceNode struct {
	Event    Event        `json:"event"`
	Children []*TraceNode `json:"children,omitempty"`
}

// Trace is the causal tree of a set of events, built from their parent_id
// links (DESIGN §2): every event hangs under the event that caused it.
//
// IMPORTANT: each distinct event id appears exactly once in a Trace, either
// as a root, as an orphan, or below one of them. Nothing is dropped except
// later copies of an id.
type Trace struct {
	// Roots are the events with no parent_id, such as a top-level run's
	// run.requested.
	Roots []*TraceNode `json:"roots"`
	// Orphans are the events whose parent_id is not among the events (the
	// cause was not read, or never recorded), and the event that closes a
	// loop of parent_id links (see BuildTrace).
	Orphans []*TraceNode `json:"orphans"`
}

// BuildTrace builds the causal tree of evs. It does no I/O and never fails:
// any set of events, in any order, gives a tree.
//
// Roots, orphans and the children of every node are ordered by stream
// sequence, then id, so the same set of events gives the same Trace (and the
// same JSON) whatever the order of evs. Events of several runs may be mixed:
// a child run's run.requested hangs under the parent run's step.started that
// its parent_id names.
//
// Malformed input is tolerated:
//   - an id seen more than once is kept once, the copy with the lowest
//     sequence (identical sequences are decided by content, so the choice
//     does not depend on the order of evs);
//   - events without an id are kept, but nothing can hang under them;
//   - parent_id links that loop (a → b → a, or an event that is its own
//     parent) are cut at the earliest event of the loop, which becomes an
//     orphan, so every event is still reachable and nothing recurses forever.
func BuildTrace(evs []Event) *Trace {
	order := sortedEvents(evs)

	// Keep the first copy of each id; index the kept nodes by id.
	nodes := make([]*TraceNode, 0, len(order))
	byID := make(map[string]int, len(order))
	for _, ev := range order {
		if ev.ID != "" {
			if _, dup := byID[ev.ID]; dup {
				continue
			}
			byID[ev.ID] = len(nodes)
		}
		nodes = append(nodes, &TraceNode{Event: ev})
	}

	// parent[i] is the index of node i's parent, or -1 when it has none
	// among the nodes (a root or an orphan).
	parent := make([]int, len(nodes))
	for i, n := range nodes {
		parent[i] = -1
		if p, ok := byID[n.Event.ParentID]; ok && n.Event.ParentID != "" {
			parent[i] = p
		}
	}
	cut := loopCuts(parent)

	t := &Trace{Roots: []*TraceNode{}, Orphans: []*TraceNode{}}
	// Nodes are in trace order, so appending keeps every list ordered.
	for i, n := range nodes {
		switch {
		case n.Event.ParentID == "":
			t.Roots = append(t.Roots, n)
		case parent[i] < 0 || cut[i]:
			t.Orphans = append(t.Orphans, n)
		default:
			p := nodes[parent[i]]
			p.Children = append(p.Children, n)
		}
	}
	return t
}

// sortedEvents returns a copy of evs in trace order: by sequence, then id,
// then encoded content, which makes the order total for any input.
func sortedEvents(evs []Event) []Event {
	type keyed struct {
		ev  Event
		enc []byte // encoded lazily, only to break a tie of (Seq, ID)
	}
	ks := make([]*keyed, len(evs))
	for i, ev := range evs {
		ks[i] = &keyed{ev: ev}
	}
	encoded := func(k *keyed) []byte {
		if k.enc == nil {
			b, err := json.Marshal(k.ev)
			if err != nil {
				b = []byte{}
			}
			k.enc = b
		}
		return k.enc
	}
	slices.SortFunc(ks, func(a, b *keyed) int {
		if c := cmp.Compare(a.ev.Seq, b.ev.Seq); c != 0 {
			return c
		}
		if c := cmp.Compare(a.ev.ID, b.ev.ID); c != 0 {
			return c
		}
		return bytes.Compare(encoded(a), encoded(b))
	})
	out := make([]Event, len(ks))
	for i, k := range ks {
		out[i] = k.ev
	}
	return out
}

// loopCuts finds the loops of the parent relation (each node has at most one
// parent, so every loop is a simple cycle) and marks, in each, the node that
// comes first in trace order. Cutting the marked nodes' links leaves a
// forest. It runs in linear time and never recurses.
func loopCuts(parent []int) []bool {
	const (
		unseen = iota
		onPath
		done
	)
	state := make([]uint8, len(parent))
	cut := make([]bool, len(parent))
	var path []int
	for start := range parent {
		path = path[:0]
		for cur := start; cur >= 0; cur = parent[cur] {
			if state[cur] == done {
				break
			}
			if state[cur] == onPath {
				// The path from cur's first visit to here is a loop.
				first := slices.Index(path, cur)
				cut[slices.Min(path[first:])] = true
				break
			}
			state[cur] = onPath
			path = append(path, cur)
		}
		for _, i := range path {
			state[i] = done
		}
	}
	return cut
}
