package retention

import (
	"context"
	"fmt"
	"slices"

	"github.com/orbitrun/orbit/events"
)

// chunk is what one log.removed record names at most: whole trees of
// runs (a tree larger than perRecord alone, across several), or tasks.
type chunk struct {
	trees [][]string
	tasks []string
}

// chunks packs sel into records of at most perRecord runs or tasks.
func chunks(sel Selection) []chunk {
	var out []chunk
	var cur chunk
	n := 0
	for _, t := range sel.trees {
		if n > 0 && n+len(t) > perRecord {
			out, cur, n = append(out, cur), chunk{}, 0
		}
		for len(t) > perRecord {
			out = append(out, chunk{trees: [][]string{t[:perRecord]}})
			t = t[perRecord:]
		}
		cur.trees = append(cur.trees, t)
		n += len(t)
	}
	if n > 0 {
		out = append(out, cur)
	}
	for tasks := sel.Tasks; len(tasks) > 0; {
		k := min(perRecord, len(tasks))
		out = append(out, chunk{tasks: tasks[:k]})
		tasks = tasks[k:]
	}
	return out
}

// movedSince is the runs and tasks with an event past through: made live
// again after the selection, which read the log through through.
type movedSince struct {
	through uint64
	seen    uint64 // the log is read through here
	runs    map[string]bool
	tasks   map[string]bool
	keptN   int
}

// read takes in the events appended since the last read.
func (m *movedSince) read(ctx context.Context, l *events.Log) error {
	from := max(m.through, m.seen) + 1
	evs, err := l.Read(ctx, events.FollowOptions{FromSeq: from, BlobRefs: true})
	if err != nil {
		return err
	}
	for _, ev := range evs {
		if ev.RunID != "" {
			m.runs[ev.RunID] = true
		}
		if ev.TaskID != "" {
			m.tasks[ev.TaskID] = true
		}
		m.seen = max(m.seen, ev.Seq)
	}
	return nil
}

// keep returns what of ch is still to go: each tree none of whose runs
// moved, each task that did not.
func (m *movedSince) keep(ch chunk) (runs, tasks []string) {
	for _, t := range ch.trees {
		if slices.ContainsFunc(t, func(id string) bool { return m.runs[id] }) {
			m.keptN += len(t)
			continue
		}
		runs = append(runs, t...)
	}
	for _, id := range ch.tasks {
		if m.tasks[id] {
			m.keptN++
			continue
		}
		tasks = append(tasks, id)
	}
	slices.Sort(runs)
	return runs, tasks
}

// kept says what stayed because it moved, if anything did.
func (m *movedSince) kept() string {
	if m.keptN == 0 {
		return ""
	}
	return fmt.Sprintf("%d runs or tasks made live again since the selection stay in the log (and in the archive, whose records do not name them)", m.keptN)
}

// removed adds what record d names to the report.
func (r *Report) removed(d events.LogRemovedData) {
	r.Runs = append(r.Runs, d.Runs...)
	r.Tasks = append(r.Tasks, d.Tasks...)
}
