package main

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"github.com/orbitrun/orbit/engine"
	"github.com/orbitrun/orbit/events"
)

// selectorFlags are the run selectors of cancel, retry and pause.
type selectorFlags struct {
	job, requester string
	states         []string
	since          time.Duration
	dryRun         bool
}

func (f *selectorFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.job, "job", "", "select the runs of this job")
	cmd.Flags().StringSliceVar(&f.states, "state", nil, "select the runs in this state (pending, running, paused, failed, …; repeat or comma-separate)")
	cmd.Flags().DurationVar(&f.since, "since", 0, "select the runs requested at most this long ago (1h, 30m)")
	cmd.Flags().StringVar(&f.requester, "requester", "", "select the runs this requester asked for")
	cmd.Flags().BoolVar(&f.dryRun, "dry-run", false, "list the runs the command would touch, and touch none")
}

// selector is the selector the flags give, nil when none is set.
func (f *selectorFlags) selector() *engine.Selector {
	s := &engine.Selector{Job: f.job, States: f.states, SinceMS: f.since.Milliseconds(), Requester: f.requester}
	if s.Empty() {
		return nil
	}
	return s
}

// args checks that a command has a run id or a selector, not both.
func (f *selectorFlags) args(cmd *cobra.Command, args []string) error {
	switch {
	case len(args) > 1:
		return usageErr("%s wants one run id, got %d arguments\nUsage: %s", cmd.CommandPath(), len(args), cmd.UseLine())
	case len(args) == 1 && f.selector() != nil:
		return usageErr("%s: give a run id or selectors (--job, --state, --since, --requester), not both", cmd.CommandPath())
	case len(args) == 0 && f.selector() == nil:
		return usageErr("%s needs a run id or selectors (--job, --state, --since, --requester)\nUsage: %s", cmd.CommandPath(), cmd.UseLine())
	}
	return nil
}

// printBulk prints the runs a bulk operation touched (or would), one a
// line, and says on stderr what it was.
func (a *app) printBulk(verb string, b engine.Bulk) error {
	if a.json {
		return a.printJSON(b)
	}
	for _, id := range b.Runs {
		a.printf("%s\n", id)
	}
	switch {
	case b.DryRun:
		a.errorf("dry run: %d run(s) would be %s; nothing was recorded\n", len(b.Runs), verb)
	case b.ID != "":
		a.errorf("%d run(s) %s as bulk operation %s\n", len(b.Runs), verb, b.ID)
	}
	for id, why := range b.Refused {
		a.errorf("run %s: %s\n", id, why)
	}
	if len(b.Refused) > 0 {
		return unsuccessful
	}
	return nil
}

func (a *app) runPauseCommand(unpause bool) *cobra.Command {
	var (
		sel    selectorFlags
		reason string
		now    bool
		tree   bool
	)
	use, short, verb := "pause [<run_id>] [--tree] [--now]", "Pause a running run: it starts no new step until unpaused", "paused"
	long := `Pause a run: it starts no new step until 'orbit run unpause'. Steps that are
running finish; with --now they are stopped as a cancel stops them and run
again, from the start, once the run is unpaused (the run again does not
spend one of the step's retries). The time the run spends paused does not
count against the deadlines of its wait steps. A pause is recorded in the run's log
(run.paused), so it holds across engine restarts; a paused run can still be
cancelled. 'orbit run show' and 'orbit run history' show it paused.

With --tree the run (if it is live) and every live run below it (the runs
it started with job.invoke, theirs, and so on, waited for or detached) are
paused, as cancel --tree cancels them: how a job that keeps starting
detached runs of itself is held still. With selectors instead of a run id
(--job, --state, --since, --requester) every live run they pick is paused.
Either way each records the bulk operation's id; --dry-run lists the runs
and pauses none.`
	if unpause {
		use, short, verb = "unpause [<run_id>] [--tree]", "Let a paused run go on", "unpaused"
		long = `Unpause a paused run: it goes on from where it stopped (run.unpaused).
With --tree, the run and every paused live run below it; with selectors,
every paused run they pick; --dry-run lists them.`
	}
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Long:  long,
		Args: func(cmd *cobra.Command, args []string) error {
			if tree && len(args) == 0 {
				return usageErr("%s --tree needs the run id at the top of the tree\nUsage: %s", cmd.CommandPath(), cmd.UseLine())
			}
			return sel.args(cmd, args)
		},
		RunE: a.withEngine(func(ctx context.Context, l *events.Log, args []string) error {
			q := engine.RunPause{Selector: sel.selector(), Unpause: unpause, Now: now, Tree: tree, DryRun: sel.dryRun, Requester: requester(), Reason: reason}
			if len(args) == 1 {
				view, err := getRun(ctx, l, args[0])
				if err != nil {
					return err
				}
				q.RunID = view.ID
			}
			var b engine.Bulk
			if err := request(ctx, l, engine.EndpointRunPause, q, &b); err != nil {
				return err
			}
			return a.printBulk(verb, b)
		}),
	}
	sel.register(cmd)
	cmd.Flags().BoolVar(&tree, "tree", false, "the run and every live run below it, as one bulk operation")
	if !unpause {
		cmd.Flags().StringVar(&reason, "reason", "", "why, for the record")
		cmd.Flags().BoolVar(&now, "now", false, "stop the running steps too; they run again on unpause")
	}
	return cmd
}
