package main

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/projector"
)

func (a *app) runTraceCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "trace [run_id]",
		Short: "Print a run's events, and its child runs', as a tree of causes (default: the latest run)",
		Long: `Print the events of a run and of the runs it started, each under the event
that caused it (its parent_id). Events whose cause is not among them are
listed under "orphans:".`,
		Args: cobra.MaximumNArgs(1),
		RunE: a.withEngine(func(ctx context.Context, l *events.Log, args []string) error {
			evs, err := traceEvents(ctx, l, optional(args))
			if err != nil {
				return err
			}
			tr := events.BuildTrace(evs)
			if a.json {
				return a.printJSON(tr)
			}
			a.printf("%s", renderTrace(tr))
			if len(evs) == 0 {
				return nil
			}
			view, err := getRun(ctx, l, evs[0].RunID)
			if err != nil {
				return err
			}
			a.printf("%s", lineage(view))
			return nil
		}),
	}
}

// traceEvents reads the events of a run (the latest when id is empty) and,
// transitively, of the child runs its run view lists (a detached child
// requested after its parent ended among them; a run a job.wait step
// waited for is not a child).
func traceEvents(ctx context.Context, l *events.Log, id string) ([]events.Event, error) {
	view, err := getRun(ctx, l, id)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{view.ID: true}
	queue := []*projector.RunView{view}
	var all []events.Event
	for len(queue) > 0 {
		v := queue[0]
		queue = queue[1:]
		evs, err := l.Read(ctx, events.FollowOptions{Filters: []string{events.RunFilter(v.ID)}, BlobRefs: true})
		if err != nil {
			return nil, &exitError{code: exitUnavailable, err: err}
		}
		all = append(all, evs...)
		for _, c := range v.Children {
			if seen[c] {
				continue
			}
			cv, err := getRun(ctx, l, c)
			if err != nil {
				return nil, err
			}
			seen[c] = true
			queue = append(queue, cv)
		}
	}
	return all, nil
}

// traceLine is one event of the text form of a trace.
type traceLine struct {
	seq, tree, key, summary string
	// wideKey marks a key (a run id) that may overflow its column rather
	// than widen it for every line.
	wideKey bool
}

// renderTrace formats a trace as an indented tree, one event per line:
// sequence, type, step key (the run id at a run.requested) and a summary.
//
//	1  run.requested               01M800P06AJFECR51MEAX8293Z  hello
//	2  └─ run.started
//	3     ├─ step.started          greet     deterministic
//	4     │  └─ step.finished      greet     success 0ms
//	5     ├─ step.started          say       shell
//	6     │  ├─ activity.started   say       shell
//	7     │  ├─ shell.exited       say       exit 0
//	8     │  └─ step.finished      say       success 4ms
//	9     └─ run.finished                    success 16ms
//
// Then, if there are any, the orphans under a heading of their own, each
// with the parent id it names.
func renderTrace(tr *events.Trace) string {
	var roots, orphans []traceLine
	for _, n := range tr.Roots {
		roots = traceLines(roots, n, "", "", "")
	}
	ids := traceIDs(tr)
	for _, n := range tr.Orphans {
		note := "(parent " + n.Event.ParentID + " not found)"
		if ids[n.Event.ParentID] {
			note = "(parent " + n.Event.ParentID + " is its descendant)"
		}
		orphans = traceLines(orphans, n, "", "", note)
	}

	// Columns are aligned across both sections.
	var seqW, treeW, keyW int
	for _, ln := range append(append([]traceLine(nil), roots...), orphans...) {
		seqW = max(seqW, utf8.RuneCountInString(ln.seq))
		treeW = max(treeW, utf8.RuneCountInString(ln.tree))
		if !ln.wideKey {
			keyW = max(keyW, utf8.RuneCountInString(ln.key))
		}
	}
	var b strings.Builder
	write := func(lines []traceLine) {
		for _, ln := range lines {
			s := pad(ln.seq, seqW, true) + "  " + pad(ln.tree, treeW, false) + "  " + pad(ln.key, keyW, false) + "  " + ln.summary
			b.WriteString(strings.TrimRight(s, " "))
			b.WriteByte('\n')
		}
	}
	write(roots)
	if len(orphans) > 0 {
		if len(roots) > 0 {
			b.WriteByte('\n')
		}
		b.WriteString("orphans:\n")
		write(orphans)
	}
	return b.String()
}

// traceIDs returns the ids of every event in a trace.
func traceIDs(tr *events.Trace) map[string]bool {
	ids := map[string]bool{}
	stack := append(append([]*events.TraceNode(nil), tr.Roots...), tr.Orphans...)
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		ids[n.Event.ID] = true
		stack = append(stack, n.Children...)
	}
	return ids
}

// traceLines appends the lines of n and its descendants. lead is drawn
// before n's type, indent before its children's branches; note is added to
// n's summary only.
func traceLines(out []traceLine, n *events.TraceNode, lead, indent, note string) []traceLine {
	ev := n.Event
	seq := "-"
	if ev.Seq > 0 {
		seq = fmt.Sprint(ev.Seq)
	}
	key, wide := ev.StepKey, false
	if ev.Type == events.RunRequested {
		key, wide = ev.RunID, true
	}
	summary := traceSummary(ev)
	if note != "" {
		summary = strings.TrimSpace(summary + "  " + note)
	}
	out = append(out, traceLine{seq: seq, tree: lead + ev.Type, key: key, summary: summary, wideKey: wide})
	for i, c := range n.Children {
		if i == len(n.Children)-1 {
			out = traceLines(out, c, indent+"└─ ", indent+"   ", "")
		} else {
			out = traceLines(out, c, indent+"├─ ", indent+"│  ", "")
		}
	}
	return out
}

// traceSummary is the one-line gist of an event's data: a state, a
// duration, an error, what started.
func traceSummary(ev events.Event) string {
	var parts []string
	add := func(s ...string) {
		for _, p := range s {
			if p != "" {
				parts = append(parts, p)
			}
		}
	}
	// addBy names who asked, when the event says.
	addBy := func(requester string, signer *events.Signer) {
		if requester != "" || signer != nil {
			add("by " + signedBy(requester, signer, "  "))
		}
	}
	attempt := func(n int) string {
		if n > 1 {
			return fmt.Sprintf("attempt %d", n)
		}
		return ""
	}
	switch ev.Type {
	case events.RunRequested:
		var d events.RunRequestedData
		_ = ev.Decode(&d)
		add(cmp.Or(d.JobName, ev.Job))
		addBy(d.Requester, d.Signer)
		if d.RetryOf != "" {
			add(strings.TrimSpace("retry of " + d.RetryOf + " " + fromStep(d.From)))
		}
	case events.RunQueued:
		var d events.RunQueuedData
		_ = ev.Decode(&d)
		add("behind " + strings.Join(d.Active, ", "))
	case events.RunResumed:
		var d events.RunResumedData
		_ = ev.Decode(&d)
		add(resumedBy(d))
	case events.RunCancelRequested:
		var d events.RunCancelRequestedData
		_ = ev.Decode(&d)
		addBy(d.Requester, d.Signer)
		add(d.Reason)
	case events.RunBudgetExhausted:
		var d events.RunBudgetExhaustedData
		_ = ev.Decode(&d)
		add("before "+d.Before, fmt.Sprintf("%d tokens", d.Tokens))
	case events.RunBudgetRaised:
		var d events.RunBudgetRaisedData
		_ = ev.Decode(&d)
		add(budgetRaise(d))
	case events.RunFinished:
		var d events.RunFinishedData
		_ = ev.Decode(&d)
		add(took(d.State, d.DurationMS), errorGist(d.Error))
	case events.StepStarted:
		var d events.StepStartedData
		_ = ev.Decode(&d)
		add(strings.TrimSpace(d.ActivityType+" "+d.Target), attempt(d.Attempt))
		if d.ChildRunID != "" {
			add("child " + d.ChildRunID)
		}
		if d.Wait != nil {
			add("signal " + d.Wait.Signal)
		}
	case events.RunSignalled:
		var d events.RunSignalledData
		_ = ev.Decode(&d)
		add("signal " + d.Signal)
		addBy(d.Requester, d.Signer)
	case events.StepSkipped:
		var d events.StepSkippedData
		_ = ev.Decode(&d)
		add("when " + d.Condition)
		if d.ReusedFrom != "" {
			add("reused from " + d.ReusedFrom)
		}
	case events.StepRetryScheduled:
		var d events.StepRetryScheduledData
		_ = ev.Decode(&d)
		add(fmt.Sprintf("attempt %d in %s", d.Attempt, duration(d.DelayMS)), errorGist(&d.Cause))
	case events.StepFinished:
		var d events.StepFinishedData
		_ = ev.Decode(&d)
		if d.Started != nil {
			// A decided step's one event: what its step.started would say.
			add(strings.TrimSpace(d.Started.ActivityType + " " + d.Started.Target))
		}
		add(took(d.State, d.DurationMS), attempt(d.Attempt), errorGist(d.Error))
		if d.ReusedFrom != "" {
			add("reused from " + d.ReusedFrom)
		}
	case events.StepJoin:
		var d events.StepJoinData
		_ = ev.Decode(&d)
		add(d.State, fmt.Sprintf("%s %d/%d", d.Mode, d.Succeeded, len(d.Members)), errorGist(d.Error))
	case events.LoopIteration:
		var d events.LoopIterationData
		_ = ev.Decode(&d)
		add(fmt.Sprintf("iteration %d", d.Iteration), d.State)
		if d.Break {
			add("break")
		}
	case events.FanoutItem:
		var d events.FanoutItemData
		_ = ev.Decode(&d)
		add(fmt.Sprintf("item %d", d.Index))
	case events.ActivityStarted:
		var d events.ActivityStartedData
		_ = ev.Decode(&d)
		add(d.ActivityType, attempt(d.Attempt))
		if d.Redelivered {
			add(fmt.Sprintf("redelivered (delivery %d)", d.Delivery))
		}
	case events.ActivityFinished:
		var d events.ActivityFinishedData
		_ = ev.Decode(&d)
		add(took(d.State, d.DurationMS), errorGist(d.Error))
	case events.ShellExited:
		var d events.ShellExitedData
		_ = ev.Decode(&d)
		add(fmt.Sprintf("exit %d", d.ExitCode), d.Signal)
		if d.TimedOut {
			add("timed out")
		}
	}
	return strings.Join(parts, "  ")
}

// took is a final state and how long it took to reach it: "success 3ms".
func took(state string, ms int64) string {
	return strings.TrimSpace(state + " " + duration(ms))
}

// errorGist is an error's first line, cut to a width that keeps the tree
// readable.
func errorGist(e *events.ErrorInfo) string {
	if e == nil || e.Message == "" {
		return ""
	}
	const width = 80
	msg := firstLine(e.Message)
	if utf8.RuneCountInString(msg) > width {
		msg = string([]rune(msg)[:width-1]) + "…"
	}
	return msg
}

// pad pads s with spaces to width runes, on the left when right is set.
func pad(s string, width int, right bool) string {
	n := width - utf8.RuneCountInString(s)
	if n <= 0 {
		return s
	}
	if right {
		return strings.Repeat(" ", n) + s
	}
	return s + strings.Repeat(" ", n)
}
