package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/engine"
)

func (a *app) runCancelCommand() *cobra.Command {
	var (
		reason string
		wait   time.Duration
	)
	cmd := &cobra.Command{
		Use:   "cancel <run_id>",
		Short: "Cancel a pending or running run",
		Long: `Cancel a run. A pending run ends cancelled at once. A running run dispatches
nothing more; its running activities get SIGTERM to their process groups and
SIGKILL after a grace period; then it ends cancelled. A finished run never
changes: cancelling one is an error.

The command waits (up to --wait) for the run to end and prints its final state.`,
		Args: exactArgs(1, "a run id"),
		RunE: a.withEngine(func(ctx context.Context, l *events.Log, args []string) error {
			view, err := getRun(ctx, l, args[0])
			if err != nil {
				return err
			}
			if events.Terminal(view.State) {
				return &exitError{code: exitUnsuccess, err: fmt.Errorf("run %s has already finished (%s); a finished run never changes", view.ID, view.State)}
			}
			feed, err := l.Follow(ctx, events.FollowOptions{Filters: []string{events.EventSubject(events.AggregateRun, view.ID, events.RunFinished)}})
			if err != nil {
				return &exitError{code: exitUnavailable, err: err}
			}
			defer feed.Stop()
			if err := request(ctx, l, engine.EndpointCancel, engine.CancelRequest{RunID: view.ID, Requester: requester(), Reason: reason}, nil); err != nil {
				return err
			}
			if wait <= 0 {
				a.printf("%s\n", view.ID)
				return nil
			}
			select {
			case ev := <-feed.Events():
				var d events.RunFinishedData
				if err := ev.Decode(&d); err != nil {
					return err
				}
				a.printf("%s\n", view.ID)
				a.errorf("run %s %s\n", view.ID, d.State)
				if d.State != events.StateCancelled {
					return unsuccessful
				}
				return nil
			case <-time.After(wait):
				a.printf("%s\n", view.ID)
				a.errorf("run %s: cancel requested; still stopping after %s\n", view.ID, wait)
				return unsuccessful
			}
		}),
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why, for the record")
	cmd.Flags().DurationVar(&wait, "wait", 30*time.Second, "how long to wait for the run to end (0: do not wait)")
	return cmd
}
