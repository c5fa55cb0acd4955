package main

import (
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/executor"
)

// printJSON writes v as indented JSON on stdout. An empty list is `[]`,
// never `null`, so that scripts can iterate over what they get.
func (a *app) printJSON(v any) error {
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Slice && rv.IsNil() {
		v = []any{}
	}
	enc := json.NewEncoder(a.stdout)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// table writes aligned columns, kubectl style.
type table struct{ tw *tabwriter.Writer }

func newTable(w io.Writer, headers ...string) *table {
	t := &table{tw: tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)}
	t.row(headers...)
	return t
}

func (t *table) row(cells ...string) { fmt.Fprintln(t.tw, strings.Join(cells, "\t")) }

func (t *table) flush() error { return t.tw.Flush() }

// clipMax bounds how much of a value a message repeats.
const clipMax = 128

// clip is s for a message: whole when short, else its first clipMax bytes
// and how long it was, so that a mistaken 100 KB argument does not come
// back whole.
func clip(s string) string { return clipTo(s, clipMax) }

// clipTo cuts s past n bytes, at a character boundary, saying how long it
// was.
func clipTo(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return fmt.Sprintf("%s… (%d bytes)", s[:n], len(s))
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}

// duration formats a duration in milliseconds for people.
func duration(ms int64) string {
	d := time.Duration(ms) * time.Millisecond
	switch {
	case d < time.Second:
		return fmt.Sprintf("%dms", ms)
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
	return d.Round(time.Second).String()
}

func timestamp(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04:05")
}

// progress prints a run's events as they arrive, one line per step start
// and end, like a build log.
type progress struct {
	w     io.Writer
	runID string
	job   string
	// children are the child runs the run's steps wait for now, by step
	// key; reported the child gates already printed.
	children map[string]string
	reported map[string]bool
	// mode is --progress; colls are the run's loops and fan_outs by key.
	mode  progressMode
	colls map[string]*collection
}

func newProgress(w io.Writer, runID, job string, mode progressMode) *progress {
	if mode == "" {
		mode = progressAuto
	}
	return &progress{w: w, runID: runID, job: job, children: map[string]string{}, reported: map[string]bool{},
		mode: mode, colls: map[string]*collection{}}
}

// childGates prints, once each, the gates of child runs the run waits
// for, and where to send their signals.
func (p *progress) childGates(gates []executor.Gate) {
	for _, g := range gates {
		id := fmt.Sprintf("%s\x00%s\x00%d", g.RunID, g.StepKey, g.Attempt)
		if g.RunID == "" || p.reported[id] {
			continue
		}
		p.reported[id] = true
		p.line("waiting", g.Via, "", fmt.Sprintf("in run %s, step %s, for signal %s (orbit run signal %s %s)", g.RunID, g.StepKey, g.Signal, g.RunID, g.Signal))
	}
}

func (p *progress) event(ev events.Event) {
	if ev.RunID != p.runID {
		return // a task's event from another of its runs
	}
	if p.groundhog(ev) {
		return
	}
	switch ev.Type {
	case events.RunQueued:
		var d events.RunQueuedData
		_ = ev.Decode(&d)
		fmt.Fprintf(p.w, "run %s (%s) queued behind %s\n", p.runID, p.job, strings.Join(d.Active, ", "))
	case events.RunStarted:
		fmt.Fprintf(p.w, "run %s (%s) started\n", p.runID, p.job)
	case events.RunResumed:
		var d events.RunResumedData
		_ = ev.Decode(&d)
		fmt.Fprintf(p.w, "run %s %s\n", p.runID, resumedBy(d))
	case events.StepStarted:
		var d events.StepStartedData
		_ = ev.Decode(&d)
		if d.ActivityType == events.TypeLoop || d.ActivityType == events.TypeFanOut {
			p.collectionStarted(ev, &d)
		}
		if p.quiet(ev.StepKey) {
			return
		}
		suffix := ""
		if d.Attempt > 1 {
			suffix = fmt.Sprintf("  (attempt %d)", d.Attempt)
		}
		if d.Wait != nil {
			p.line("waiting", ev.StepKey, "", fmt.Sprintf("for signal %s (orbit run signal %s %s)%s", d.Wait.Signal, p.runID, d.Wait.Signal, suffix))
			return
		}
		if d.ChildRunID != "" {
			p.children[ev.StepKey] = d.ChildRunID
			suffix = strings.TrimRight("child run "+d.ChildRunID+suffix, " ")
		}
		p.line("started", ev.StepKey, "", suffix)
	case events.StepSkipped:
		if !p.quiet(ev.StepKey) {
			p.line("skipped", ev.StepKey, "", "")
		}
	case events.LoopIteration:
		p.counted(ev)
	case events.StepRetryScheduled:
		if p.quiet(ev.StepKey) {
			return
		}
		var d events.StepRetryScheduledData
		_ = ev.Decode(&d)
		p.line("retrying", ev.StepKey, "", fmt.Sprintf("attempt %d in %s: %s", d.Attempt, duration(d.DelayMS), firstLine(d.Cause.Message)))
	case events.StepFinished:
		var d events.StepFinishedData
		_ = ev.Decode(&d)
		delete(p.children, ev.StepKey)
		p.counted(ev)
		if p.quiet(ev.StepKey) && (d.State == events.StateSuccess || d.State == events.StateSkipped || !p.failure(ev.StepKey)) {
			return
		}
		msg := ""
		if d.Error != nil {
			msg = firstLine(d.Error.Message)
		}
		if d.ReusedFrom != "" {
			msg = "reused from " + d.ReusedFrom
		}
		if c := p.colls[ev.StepKey]; c != nil && c.quiet {
			msg = strings.TrimSpace(c.summary() + "; " + msg)
			msg = strings.TrimSuffix(msg, ";")
		}
		p.line(d.State, ev.StepKey, duration(d.DurationMS), msg)
	case events.RunFinished:
		var d events.RunFinishedData
		_ = ev.Decode(&d)
		line := fmt.Sprintf("run %s (%s) %s in %s", p.runID, p.job, d.State, duration(d.DurationMS))
		if d.Error != nil {
			where := ""
			if d.Error.StepKey != "" {
				where = d.Error.StepKey + ": "
			}
			line += ": " + where + firstLine(d.Error.Message)
		}
		fmt.Fprintln(p.w, line)
	}
}

// resumedBy says who resumed a run and why: "resumed after budget raise
// 1 by engine E, which ran it before".
func resumedBy(d events.RunResumedData) string {
	s := "resumed"
	if d.Raise > 0 {
		s += fmt.Sprintf(" after budget raise %d", d.Raise)
	}
	s += " by engine " + d.Engine
	switch d.Previous {
	case "":
	case d.Engine:
		s += ", which ran it before"
	default:
		s += " (engine " + d.Previous + " ran it before)"
	}
	return s
}

// groundhog prints a line per Groundhog attempt and what became of it,
// and reports whether ev was one of those events.
func (p *progress) groundhog(ev events.Event) bool {
	key := func(a events.Attempt) string { return fmt.Sprintf("%s #%d", a.Checkpoint, a.Attempt) }
	switch ev.Type {
	case events.GroundhogRunWaiting:
		var d events.GroundhogRunWaitingData
		_ = ev.Decode(&d)
		p.line("waiting", "workspace "+d.Workspace, "", d.HeldBy)
	case events.GroundhogAttempt:
		var d events.GroundhogAttemptData
		_ = ev.Decode(&d)
		p.line("attempt", key(d.Attempt), "", "on "+d.ScratchBranch)
	case events.GroundhogVerification:
		var d events.GroundhogVerificationData
		_ = ev.Decode(&d)
		verdict := "passed"
		if !d.Passed {
			verdict = "failed"
		}
		p.line("verified", key(d.Attempt), "", fmt.Sprintf("%s (%d criteria)", verdict, len(d.Results)))
	case events.GroundhogCommitted:
		var d events.GroundhogCommittedData
		_ = ev.Decode(&d)
		switch {
		case d.NoChange:
			// d.SHA is the snapshot's commit, which is not the attempt's.
			p.line("succeeded", key(d.Attempt), "", "no changes, no commit: "+firstLine(d.Summary))
		case d.HeldRef != "":
			p.line("held", key(d.Attempt), "", fmt.Sprintf("%s %s (on %s, for approval: orbit groundhog approve %s)", shortSHA(d.SHA), firstLine(d.Summary), d.HeldRef, ev.TaskID))
		default:
			p.line("committed", key(d.Attempt), "", shortSHA(d.SHA)+" "+firstLine(d.Summary))
		}
	case events.GroundhogAttemptFailed:
		var d events.GroundhogAttemptFailedData
		_ = ev.Decode(&d)
		p.line("failed", key(d.Attempt), "", d.Report.Source+": "+firstLine(d.Report.WhatHappened))
	case events.GroundhogRewound:
		var d events.GroundhogRewoundData
		_ = ev.Decode(&d)
		p.line("rewound", key(d.Attempt), "", "work kept on "+d.ScratchBranch)
	case events.GroundhogAbandoned:
		var d events.GroundhogAbandonedData
		_ = ev.Decode(&d)
		p.line("blocked", d.Checkpoint, "", fmt.Sprintf("%d of %d attempts spent", d.Attempts, d.Budget))
	default:
		return false
	}
	return true
}

func (p *progress) line(state, key, took, msg string) {
	fmt.Fprintln(p.w, strings.TrimRight(fmt.Sprintf("  %-9s %-28s %7s  %s", state, key, took, msg), " "))
}
