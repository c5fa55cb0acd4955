package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/orbitrun/orbit/engine"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/groundhog"
)

// abandonTimeout bounds the wait for the engine's answer: the engine
// rewinds the workspace before it answers.
const abandonTimeout = 2 * time.Minute

func (a *app) groundhogAbandonCommand() *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:   "abandon <task_id> [--reason TEXT]",
		Short: "Close a task's open attempt for good, rewinding it and recording why",
		Long: `Close the attempt a task has open when no run can close it (for example,
someone committed on the task branch while the attempt was open, so every
resumed run fails with "task branch moved" or "unexpected branch").

The engine does it while no run works in the task's repository (it is
refused, naming the run, while one does: cancel it or let it end first).
The workspace is rewound to the attempt's snapshot, the attempt's work kept
on its scratch branch, and the attempt is recorded as abandoned by you, with
the reason; it spends none of the checkpoint's budget, and a running task
becomes active, so the next 'orbit groundhog run' starts a fresh attempt.
When the repository is not where the attempt left it (the task branch
moved, HEAD is on another branch) nothing is reset: the task branch keeps
what was committed on it, the workspace its files (at most the attempt's
work is saved on its scratch branch and the workspace switched to the task
branch, as a failed run does), and the record says so. An attempt that was verified and whose commit already is the task
branch's head is recorded as committed, never reset.

Exit status: 0 abandoned, or nothing was open (said on stdout); 1 refused
(a run holds the workspace) or git refused (files a reset would lose);
2 no such task.`,
		Args: exactArgs(1, "a task id"),
		RunE: a.withEngine(func(ctx context.Context, l *events.Log, args []string) error {
			ctx, cancel := context.WithTimeout(ctx, abandonTimeout)
			defer cancel()
			var res groundhog.Abandonment
			err := request(ctx, l, engine.EndpointGroundhogAbandon, engine.GroundhogAbandon{TaskID: args[0], Reason: reason, By: requester()}, &res)
			if err != nil {
				if errors.Is(err, events.ErrNotFound) || errors.Is(err, events.ErrInvalidRequest) || errors.Is(err, events.ErrUnavailable) {
					return err
				}
				return &exitError{code: exitUnsuccess, err: fmt.Errorf("abandon %s: %w", args[0], err)}
			}
			if a.json {
				if err := a.printJSON(res); err != nil {
					return err
				}
			} else if res.Outcome != groundhog.AbandonRefused {
				a.printf("%s\n", res.Message)
			}
			if res.Outcome == groundhog.AbandonRefused {
				return &exitError{code: exitUnsuccess, err: errors.New(res.Message)}
			}
			return nil
		}),
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why the attempt is abandoned (recorded)")
	return cmd
}
