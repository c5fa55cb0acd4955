package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/orbitrun/orbit/engine"
	"github.com/orbitrun/orbit/events"
)

func (a *app) runCancelCommand() *cobra.Command {
	var (
		reason string
		wait   time.Duration
		tree   bool
		sel    selectorFlags
	)
	cmd := &cobra.Command{
		Use:   "cancel [<run_id>] [--tree] [--job J] [--state S] [--since D] [--requester R] [--dry-run]",
		Short: "Cancel a pending or running run, or a whole tree of runs",
		Long: `Cancel a run. A pending run ends cancelled at once. A running run dispatches
nothing more; its running activities get SIGTERM to their process groups and
SIGKILL after a grace period; then it ends cancelled. A finished run never
changes: cancelling one is an error. Runs the run started with job.invoke are
cancelled with it, waited for or not.

With --tree the run (if it is live) and every live run below it are
cancelled, whether or not the run itself has finished: how a job that keeps
starting detached runs of itself is stopped. Each records that it was
cancelled as part of the tree cancel of <run_id>, and the id of that one
bulk operation. The runs asked are printed, one id a line.

With selectors instead of a run id (--job, --state, --since, --requester)
every live run they pick is cancelled, each recording the bulk operation's
id. --dry-run lists the runs a cancel would ask (with --tree too) and asks
none.

The command waits (up to --wait) for the runs to end and prints how each
ended.`,
		Example: `  orbit run cancel 01JD… --reason "wrong input"
  orbit run cancel --tree 01JD…
  orbit run cancel --job nightly --state running --dry-run`,
		Args: func(cmd *cobra.Command, args []string) error { return sel.args(cmd, args) },
		RunE: a.withEngine(func(ctx context.Context, l *events.Log, args []string) error {
			if len(args) == 0 || sel.dryRun {
				q := engine.CancelRequest{Selector: sel.selector(), DryRun: sel.dryRun, Tree: tree, Requester: requester(), Reason: reason}
				if len(args) == 1 {
					view, err := getRun(ctx, l, args[0])
					if err != nil {
						return err
					}
					q.RunID = view.ID
				}
				var asked engine.Cancelled
				if err := request(ctx, l, engine.EndpointCancel, q, &asked); err != nil {
					return err
				}
				return a.printBulk("cancelled", asked.Bulk)
			}
			view, err := getRun(ctx, l, args[0])
			if err != nil {
				return err
			}
			if !tree && events.Terminal(view.State) {
				return &exitError{code: exitUsage, err: fmt.Errorf("run %s has already finished (%s); a finished run never changes", view.ID, view.State)}
			}
			// Every end from here on is seen, whichever runs the engine asks.
			from, err := l.LastSeq(ctx)
			if err != nil {
				return &exitError{code: exitUnavailable, err: err}
			}
			feed, err := l.Follow(ctx, events.FollowOptions{Filters: []string{events.TypeFilter(events.AggregateRun, events.RunFinished)}, FromSeq: from + 1})
			if err != nil {
				return &exitError{code: exitUnavailable, err: err}
			}
			defer feed.Stop()
			var asked engine.Cancelled
			if err := request(ctx, l, engine.EndpointCancel, engine.CancelRequest{RunID: view.ID, Tree: tree, Requester: requester(), Reason: reason}, &asked); err != nil {
				return err
			}
			if len(asked.Runs) == 0 {
				return &exitError{code: exitUsage, err: fmt.Errorf("run %s has already finished (%s) and no run below it is live", view.ID, view.State)}
			}
			for _, id := range asked.Runs {
				a.printf("%s\n", id)
			}
			if asked.Bulk.ID != "" {
				a.errorf("%d run(s) asked to cancel as bulk operation %s\n", len(asked.Runs), asked.Bulk.ID)
			}
			if wait <= 0 {
				return nil
			}
			return a.reportEnds(feed, asked.Runs, wait)
		}),
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why, for the record")
	cmd.Flags().DurationVar(&wait, "wait", 30*time.Second, "how long to wait for the runs to end (0: do not wait)")
	cmd.Flags().BoolVar(&tree, "tree", false, "cancel the run and every live run below it, even when the run itself has finished")
	sel.register(cmd)
	return cmd
}

// reportEnds waits up to wait for runs to end, following feed (run.finished
// of every run), and says on stderr how each ended: one line a run, or for
// many a count by state. It is unsuccessful when one ended otherwise than
// cancelled or is still stopping.
func (a *app) reportEnds(feed *events.Feed, runs []string, wait time.Duration) error {
	open := make(map[string]bool, len(runs))
	for _, id := range runs {
		open[id] = true
	}
	states := map[string]int{}
	ok := true
	timeout := time.After(wait)
	for len(open) > 0 {
		select {
		case ev, more := <-feed.Events():
			if !more {
				return &exitError{code: exitUnavailable, err: feed.Err()}
			}
			if !open[ev.RunID] {
				continue
			}
			var d events.RunFinishedData
			if err := ev.Decode(&d); err != nil {
				return err
			}
			delete(open, ev.RunID)
			states[d.State]++
			ok = ok && d.State == events.StateCancelled
			if len(runs) == 1 {
				a.errorf("run %s %s\n", ev.RunID, d.State)
			}
		case <-timeout:
			if len(runs) == 1 {
				a.errorf("run %s: cancel requested; still stopping after %s\n", runs[0], wait)
			} else {
				a.errorf("%d of %d runs: cancel requested; still stopping after %s\n", len(open), len(runs), wait)
			}
			return unsuccessful
		}
	}
	if len(runs) > 1 {
		for _, state := range slices.Sorted(maps.Keys(states)) {
			a.errorf("%d runs %s\n", states[state], state)
		}
	}
	if !ok {
		return unsuccessful
	}
	return nil
}
