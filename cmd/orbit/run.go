package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/engine"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/executor"
	"github.com/orbitrun/orbit/projector"
)

func (a *app) runCommand() *cobra.Command {
	var opts runOptions
	cmd := &cobra.Command{
		Use:   "run <name|file.yaml>",
		Short: "Run a job (short for 'job run'), or inspect runs",
		Long: `'orbit run <job>' is the short form of 'orbit job run <job>'. A job named like
one of the subcommands below, or close enough to one to be a typo of it
(histroy, log), needs the long form: the short form refuses it rather than
run a job where a subcommand was meant.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				if err := notASubcommand(cmd, args[0]); err != nil {
					return err
				}
			}
			if len(args) != 1 {
				return usageErr("orbit run needs a job name or file, or one of its subcommands\nSee 'orbit run --help'.")
			}
			return a.runJob(cmd.Context(), args[0], opts)
		},
	}
	opts.register(a, cmd)
	cmd.AddCommand(a.runShowCommand(), a.runHistoryCommand(), a.runEventsCommand(), a.runLogsCommand(), a.runTraceCommand(), a.runTailCommand(), a.runCancelCommand(),
		a.runRetryCommand(), a.runPauseCommand(false), a.runPauseCommand(true), a.runSignalCommand(), a.runResumeCommand(), a.runShipCommand(), a.runAutoCommand())
	return cmd
}

// looksLike reports whether name looks like the subcommand sub: a prefix
// of it, or a typo of it — one edit away (a swap of two neighbours is one),
// or two for names of five bytes or more.
func looksLike(name, sub string) bool {
	if strings.HasPrefix(sub, name) {
		return true
	}
	most := 1
	if len(name) >= 5 {
		most = 2
	}
	return assets.EditDistance(name, sub) <= most
}

// notASubcommand refuses, for 'orbit run <job>', a name that looks like one
// of run's subcommands (a typo of one, or a prefix): the short form must
// not run a job where a subcommand was meant. A job file (a path, or a
// name ending .yaml) is never refused; a job so named runs with 'orbit job
// run'.
func notASubcommand(cmd *cobra.Command, name string) error {
	if strings.ContainsRune(name, '/') || strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml") {
		return nil
	}
	var like []string
	for _, sub := range cmd.Commands() {
		if !sub.IsAvailableCommand() {
			continue
		}
		for _, n := range append([]string{sub.Name()}, sub.Aliases...) {
			if looksLike(strings.ToLower(name), n) {
				like = append(like, n)
				break
			}
		}
	}
	if len(like) == 0 {
		return nil
	}
	return usageErr("%q looks like the subcommand %s, not a job: did you mean 'orbit run %s'? (To run a job named %s: orbit job run %s)\nSee 'orbit run --help'.",
		clip(name), strings.Join(like, " or "), like[0], clip(name), clip(name))
}

func (a *app) runShowCommand() *cobra.Command {
	var step string
	cmd := &cobra.Command{
		Use:   "show [run_id]",
		Short: "Show a run (default: the latest) and its steps",
		Args:  cobra.MaximumNArgs(1),
		RunE: a.withEngine(func(ctx context.Context, l *events.Log, args []string) error {
			view, err := getRun(ctx, l, optional(args))
			if err != nil {
				return err
			}
			if step != "" {
				return a.showStep(view, step)
			}
			if a.json {
				return a.printJSON(view)
			}
			children, err := childGates(ctx, l, view)
			if err != nil {
				return err
			}
			a.showRun(view, children)
			return nil
		}),
	}
	cmd.Flags().StringVarP(&step, "step", "s", "", "show one step instance (by key)")
	return cmd
}

func optional(args []string) string {
	if len(args) == 0 {
		return ""
	}
	return args[0]
}

// getRun fetches a run view, the latest when id is empty.
func getRun(ctx context.Context, l *events.Log, id string) (*projector.RunView, error) {
	last, err := l.LastSeq(ctx)
	if err != nil {
		return nil, &exitError{code: exitUnavailable, err: err}
	}
	var view projector.RunView
	if err := request(ctx, l, engine.EndpointRun, engine.RunQuery{RunID: id, MinSeq: last}, &view); err != nil {
		return nil, err
	}
	return &view, nil
}

// childGates returns the gates of the child runs a running run waits for,
// when it waits at no gate of its own: where its signals must go.
func childGates(ctx context.Context, l *events.Log, v *projector.RunView) ([]executor.Gate, error) {
	if v.State != events.StateRunning || len(v.Children) == 0 {
		return nil, nil
	}
	for _, s := range v.Steps {
		if s.State == projector.StateWaiting {
			return nil, nil
		}
	}
	var gates executor.Gates
	if err := request(ctx, l, engine.EndpointRunGates, engine.RunGates{RunID: v.ID}, &gates); err != nil {
		return nil, err
	}
	return gates.Gates, nil
}

// shownState is a run's state, with "paused" while it is.
func shownState(v *projector.RunView) string {
	if v.Paused {
		return v.State + " (paused)"
	}
	return v.State
}

// routineLine says which routine and tick started a run.
func routineLine(r *events.RoutineTick) string {
	switch {
	case r.Manual:
		return r.Name + ", run-now at " + r.Tick.UTC().Format(time.RFC3339)
	case r.Retry > 0:
		return fmt.Sprintf("%s, tick %s (retry %d)", r.Name, r.Tick.UTC().Format(time.RFC3339), r.Retry)
	case r.Missed > 0:
		return fmt.Sprintf("%s, tick %s (catching up %d missed)", r.Name, r.Tick.UTC().Format(time.RFC3339), r.Missed)
	}
	return r.Name + ", tick " + r.Tick.UTC().Format(time.RFC3339)
}

// showRun prints a run, and the gates of the child runs it waits for
// (see childGates).
func (a *app) showRun(v *projector.RunView, children []executor.Gate) {
	field := func(name, value string) { a.printf("%-10s %s\n", name+":", value) }
	field("Run", v.ID)
	field("Job", v.Job)
	field("State", shownState(v))
	if v.Paused {
		field("Paused", "since "+timestamp(v.PausedAt)+"; orbit run unpause "+v.ID+" lets it go on")
	}
	if v.PausedMS > 0 {
		field("Paused for", duration(v.PausedMS))
	}
	if r := v.Routine; r != nil {
		field("Routine", routineLine(r))
	}
	if v.Requester != "" || v.Signer != nil {
		field("Requester", signedBy(v.Requester, v.Signer, ", "))
	}
	if c := v.Cancel; c != nil {
		field("Cancel", strings.TrimSuffix("requested by "+signedBy(c.Requester, c.Signer, ", ")+": "+c.Reason, ": "))
	}
	if v.Parent != nil {
		field("Parent", v.Parent.RunID+" step "+v.Parent.StepKey)
	}
	if len(v.Children) > 0 {
		field("Children", strings.Join(v.Children, ", "))
	}
	if v.RetryOf != "" {
		field("Retry of", strings.TrimSpace(v.RetryOf+" "+fromStep(v.RetryFrom)))
	}
	for _, s := range v.RetrySteps {
		field("Retry", retryStepLine(s))
	}
	if len(v.Retries) > 0 {
		field("Retries", strings.Join(v.Retries, ", "))
	}
	for _, r := range v.BudgetRaises {
		field("Budget", budgetRaise(r))
	}
	if len(v.QueuedBehind) > 0 && v.StartedAt == nil {
		field("Queued", "behind "+strings.Join(v.QueuedBehind, ", "))
	}
	field("Requested", timestamp(v.RequestedAt))
	field("Started", timestamp(v.StartedAt))
	finished := timestamp(v.FinishedAt)
	if v.FinishedAt != nil {
		finished += " (" + duration(v.DurationMS) + ")"
	}
	field("Finished", finished)
	field("Input", compact(v.Input))
	if v.Output != nil {
		field("Output", compact(v.Output))
	}
	if v.Error != nil {
		field("Error", describeError(v.Error))
	}
	for _, s := range v.Steps {
		if s.State == projector.StateWaiting && s.Wait != nil {
			field("Waiting", waitingFor(v.ID, s))
		}
	}
	for _, g := range children {
		field("Waiting", executor.DescribeGate(g))
	}
	if len(v.Steps) == 0 {
		return
	}
	a.printf("\n")
	t := newTable(a.stdout, "STEP", "STATE", "ATTEMPTS", "DURATION", "ERROR")
	for _, s := range v.Steps {
		msg := ""
		if s.Error != nil {
			msg = firstLine(s.Error.Message)
		}
		state := s.State
		if s.ReusedFrom != "" {
			state += " (reused)"
		}
		t.row(s.Key, state, fmt.Sprint(s.Attempts), duration(s.DurationMS), msg)
	}
	_ = t.flush()
}

func (a *app) showStep(v *projector.RunView, key string) error {
	for _, s := range v.Steps {
		if s.Key != key {
			continue
		}
		if a.json {
			return a.printJSON(s)
		}
		field := func(name, value string) { a.printf("%-10s %s\n", name+":", value) }
		field("Step", s.Key)
		field("Run", v.ID)
		field("State", s.State)
		field("Activity", strings.TrimSpace(s.ActivityType+" "+s.Target))
		field("Attempts", fmt.Sprint(s.Attempts))
		field("Started", timestamp(s.StartedAt))
		field("Finished", timestamp(s.FinishedAt))
		field("Duration", duration(s.DurationMS))
		if s.ExitCode != nil {
			field("Exit code", fmt.Sprint(*s.ExitCode))
		}
		field("Input", compact(s.Input))
		field("Output", compact(s.Output))
		if s.Error != nil {
			field("Error", describeError(s.Error))
		}
		return nil
	}
	return usageErr("run %s has no step %q", v.ID, key)
}

func describeError(e *events.ErrorInfo) string {
	where := ""
	if e.StepKey != "" {
		where = e.StepKey + ": "
	}
	return fmt.Sprintf("%s%s [%s]", where, e.Message, e.Kind)
}

func compact(v any) string {
	if v == nil {
		return "null"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func (a *app) runHistoryCommand() *cobra.Command {
	var (
		job   string
		limit int
	)
	cmd := &cobra.Command{
		Use:     "history",
		Aliases: []string{"list", "ls"},
		Short:   "List runs, newest first",
		Long: `List runs, newest first: the 20 newest unless -n says how many (0: all). When
there are more, stderr says how many the list leaves out.`,
		Args: cobra.NoArgs,
		PreRunE: func(*cobra.Command, []string) error {
			if limit < 0 {
				return usageErr("--limit: want how many runs to list (0 for all), not %d", limit)
			}
			return nil
		},
		RunE: a.withEngine(func(ctx context.Context, l *events.Log, _ []string) error {
			last, err := l.LastSeq(ctx)
			if err != nil {
				return &exitError{code: exitUnavailable, err: err}
			}
			q := engine.RunsQuery{Job: job, Limit: limit, MinSeq: last}
			var runs []projector.RunView
			if err := request(ctx, l, engine.EndpointRuns, q, &runs); err != nil {
				return err
			}
			if len(runs) == 0 && job != "" {
				defer a.errorf("no run of job %s (orbit job list lists the jobs)\n", clip(job))
			}
			if a.json {
				return a.printJSON(runs)
			}
			if limit > 0 && len(runs) == limit {
				var n engine.RunsCount
				if err := request(ctx, l, engine.EndpointRunsCount, q, &n); err != nil {
					return err
				}
				if n.Total > len(runs) {
					defer a.errorf("the %d newest of %d runs; orbit run history -n 0 lists them all\n", len(runs), n.Total)
				}
			}
			t := newTable(a.stdout, "RUN", "JOB", "STATE", "REQUESTED", "DURATION", "LINEAGE")
			for _, r := range runs {
				took := "-"
				if r.FinishedAt != nil {
					took = duration(r.DurationMS)
				}
				t.row(r.ID, r.Job, shownState(&r), timestamp(r.RequestedAt), took, runLineage(&r))
			}
			return t.flush()
		}),
	}
	cmd.Flags().StringVarP(&job, "job", "j", "", "only runs of this job")
	cmd.Flags().IntVarP(&limit, "limit", "n", 20, "at most this many runs (0: all)")
	return cmd
}

// eventFilter selects events of one run by type (a NATS-style pattern such
// as step.* or step.>) and step key (the key or any key under it).
type eventFilter struct {
	typ  string
	step string
}

func (f eventFilter) subjects(runID string) []string {
	if f.typ == "" {
		return []string{events.RunFilter(runID)}
	}
	return []string{events.EventSubject(events.AggregateRun, runID, f.typ)}
}

func (f eventFilter) match(ev events.Event) bool {
	return f.step == "" || ev.StepKey == f.step || strings.HasPrefix(ev.StepKey, f.step+"/")
}

// check refuses a type pattern that no run event type matches: `--type
// step` (meant: step.*) would otherwise print an empty table for ever.
func (f eventFilter) check() error {
	if f.typ == "" {
		return nil
	}
	var families []string
	for _, name := range events.Types() {
		info, _ := events.Lookup(name)
		if info.Aggregate != events.AggregateRun {
			continue
		}
		if typeMatches(f.typ, name) {
			return nil
		}
		family, _, _ := strings.Cut(name, ".")
		if !slices.Contains(families, family+".*") {
			families = append(families, family+".*")
		}
	}
	return usageErr("--type %s: no event type of a run matches it (want a type such as step.finished or a pattern: %s)", clip(f.typ), strings.Join(families, ", "))
}

// typeMatches reports whether a NATS-style pattern (tokens split on '.',
// '*' one token, '>' the rest) matches an event type.
func typeMatches(pattern, typ string) bool {
	ps, ts := strings.Split(pattern, "."), strings.Split(typ, ".")
	for i, p := range ps {
		if p == ">" {
			return i < len(ts)
		}
		if i >= len(ts) || (p != "*" && p != ts[i]) {
			return false
		}
	}
	return len(ps) == len(ts)
}

func (a *app) runEventsCommand() *cobra.Command {
	var f eventFilter
	cmd := &cobra.Command{
		Use:   "events [run_id]",
		Short: "Print a run's events (default: the latest run)",
		Args:  cobra.MaximumNArgs(1),
		PreRunE: func(*cobra.Command, []string) error {
			return f.check()
		},
		RunE: a.withEngine(func(ctx context.Context, l *events.Log, args []string) error {
			runID, err := resolveRunID(ctx, l, optional(args))
			if err != nil {
				return err
			}
			evs, err := l.Read(ctx, events.FollowOptions{Filters: f.subjects(runID), BlobRefs: true})
			if err != nil {
				return &exitError{code: exitUnavailable, err: err}
			}
			var out []events.Event
			for _, ev := range evs {
				if f.match(ev) {
					out = append(out, ev)
				}
			}
			if len(out) == 0 && len(evs) > 0 {
				defer a.errorf("no event of run %s matches --step %s (orbit run show %s lists its steps)\n", runID, clip(f.step), runID)
			}
			if len(out) == 0 && len(evs) == 0 && f.typ != "" {
				defer a.errorf("no event of run %s matches --type %s\n", runID, clip(f.typ))
			}
			if a.json {
				if out == nil {
					out = []events.Event{}
				}
				return a.printJSON(out)
			}
			t := newTable(a.stdout, "SEQ", "TIME", "TYPE", "STEP", "DATA")
			for _, ev := range out {
				t.row(eventRow(ev)...)
			}
			return t.flush()
		}),
	}
	cmd.Flags().StringVarP(&f.typ, "type", "t", "", "only events of this type (wildcards: step.*, step.>)")
	cmd.Flags().StringVarP(&f.step, "step", "s", "", "only events of this step key (and the keys under it)")
	return cmd
}

func eventRow(ev events.Event) []string {
	data := string(ev.Data)
	if len(data) > 100 {
		data = data[:100] + "…"
	}
	step := ev.StepKey
	if step == "" {
		step = "-"
	}
	return []string{fmt.Sprint(ev.Seq), ev.Time.Local().Format("15:04:05.000"), ev.Type, step, data}
}

// resolveRunID returns id, or the latest run's id when id is empty. A run
// the log does not have is a usage error (exit 2): an id mistyped must not
// print nothing, or wait for ever. A run just submitted is recorded within
// moments, so the log is asked for a few seconds.
func resolveRunID(ctx context.Context, l *events.Log, id string) (string, error) {
	if id != "" {
		return id, runRecorded(ctx, l, id)
	}
	view, err := getRun(ctx, l, "")
	if err != nil {
		return "", err
	}
	return view.ID, nil
}

// recordWait is how long runRecorded waits for a run's run.requested.
const recordWait = 3 * time.Second

func runRecorded(ctx context.Context, l *events.Log, id string) error {
	deadline := time.Now().Add(recordWait)
	for {
		last, err := l.LastMatching(ctx, []string{events.EventSubject(events.AggregateRun, id, events.RunRequested)})
		if errors.Is(err, events.ErrInvalidRequest) {
			return usageErr("no run %s (orbit run history lists the runs)", clip(id))
		}
		if err != nil {
			return &exitError{code: exitUnavailable, err: err}
		}
		if last > 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return usageErr("no run %s (orbit run history lists the runs)", id)
		}
		select {
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (a *app) runTailCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "tail [run_id]",
		Short: "Print a run's events as they happen until it ends (default: the latest run)",
		Args:  cobra.MaximumNArgs(1),
		RunE: a.withEngine(func(ctx context.Context, l *events.Log, args []string) error {
			runID, err := resolveRunID(ctx, l, optional(args))
			if err != nil {
				return err
			}
			feed, err := a.followRun(ctx, l, runID, []string{events.RunFilter(runID)})
			if err != nil {
				return err
			}
			defer feed.stop()
			enc := json.NewEncoder(a.stdout)
			for {
				ev, err := feed.next(ctx)
				if ctx.Err() != nil {
					return nil
				}
				if err != nil {
					return err
				}
				if a.json {
					_ = enc.Encode(ev)
				} else {
					a.printf("%s\n", strings.Join(eventRow(ev), "  "))
				}
				if ev.Type == events.RunFinished {
					return nil
				}
			}
		}),
	}
}
