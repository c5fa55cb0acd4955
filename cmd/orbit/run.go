package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/engine"
	"github.com/orbitrun/orbit/projector"
)

func (a *app) runCommand() *cobra.Command {
	var opts runOptions
	cmd := &cobra.Command{
		Use:   "run <name|file.yaml>",
		Short: "Run a job (short for 'job run'), or inspect runs",
		Long: `'orbit run <job>' is the short form of 'orbit job run <job>'. A job named like
one of the subcommands below needs the long form.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErr("orbit run needs a job name or file, or one of its subcommands\nSee 'orbit run --help'.")
			}
			return a.runJob(cmd.Context(), args[0], opts)
		},
	}
	opts.register(cmd)
	cmd.AddCommand(a.runShowCommand(), a.runHistoryCommand(), a.runEventsCommand(), a.runTraceCommand(), a.runTailCommand(), a.runCancelCommand(),
		a.runRetryCommand(), a.runSignalCommand(), a.runResumeCommand(), a.runShipCommand(), a.runAutoCommand())
	return cmd
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
			a.showRun(view)
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

func (a *app) showRun(v *projector.RunView) {
	field := func(name, value string) { a.printf("%-10s %s\n", name+":", value) }
	field("Run", v.ID)
	field("Job", v.Job)
	field("State", v.State)
	if v.Requester != "" {
		field("Requester", v.Requester)
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
		Use:   "history",
		Short: "List runs, newest first",
		Args:  cobra.NoArgs,
		RunE: a.withEngine(func(ctx context.Context, l *events.Log, _ []string) error {
			last, err := l.LastSeq(ctx)
			if err != nil {
				return &exitError{code: exitUnavailable, err: err}
			}
			var runs []projector.RunView
			if err := request(ctx, l, engine.EndpointRuns, engine.RunsQuery{Job: job, Limit: limit, MinSeq: last}, &runs); err != nil {
				return err
			}
			if a.json {
				return a.printJSON(runs)
			}
			t := newTable(a.stdout, "RUN", "JOB", "STATE", "REQUESTED", "DURATION", "LINEAGE")
			for _, r := range runs {
				took := "-"
				if r.FinishedAt != nil {
					took = duration(r.DurationMS)
				}
				t.row(r.ID, r.Job, r.State, timestamp(r.RequestedAt), took, runLineage(&r))
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

func (a *app) runEventsCommand() *cobra.Command {
	var f eventFilter
	cmd := &cobra.Command{
		Use:   "events [run_id]",
		Short: "Print a run's events (default: the latest run)",
		Args:  cobra.MaximumNArgs(1),
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
