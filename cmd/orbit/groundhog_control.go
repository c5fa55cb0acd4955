package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/orbitrun/orbit/engine"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/groundhog"
)

func (a *app) groundhogApproveCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "approve <task_id>",
		Short: "Fast-forward a task's branch to its checkpoint commits held for approval",
		Long: `Approve the checkpoint commits a task's activity held for approval
(materialize: on_approval): the task branch is fast-forwarded to
refs/orbit/groundhog/<task>, with the workspace when it is checked out, and
the approval is recorded (groundhog.approved).

The engine does it while no run works in the task's repository.

Exit status: 0 approved, or nothing held (said on stdout); 1 refused: the
task branch moved since the held commits were made (not a fast-forward),
uncommitted changes on the checked-out task branch, or a run holds the
workspace; 2 no such task.`,
		Args: exactArgs(1, "a task id"),
		RunE: a.withEngine(func(ctx context.Context, l *events.Log, args []string) error {
			return a.groundhogControl(ctx, l, engine.EndpointGroundhogApprove, engine.GroundhogControl{TaskID: args[0], By: requester()})
		}),
	}
}

func (a *app) groundhogRewindCommand() *cobra.Command {
	var to, reason string
	cmd := &cobra.Command{
		Use:   "rewind <task_id> --to <checkpoint> [--reason TEXT]",
		Short: "Take a task back to before a committed checkpoint, to do it and the later ones again",
		Long: `Rewind a task to before one of its committed checkpoints: the branch
that holds its commits (the task branch, with the workspace, or the held ref
of an on_approval task) moves back to the commit before that checkpoint's,
the rewind is recorded (groundhog.rewound_to), the task's memory forgets
that checkpoint and every later one, and the task becomes active: the next
'orbit groundhog run' does them again with a prompt that does not remember
them. The commits rewound over stay in git's object store.

The engine does it while no run works in the task's repository.

Exit status: 0 rewound; 1 a run holds the workspace (named); 2 refused,
nothing written: no such task, an unknown or not yet committed checkpoint,
an open attempt, a workspace off the task branch or with uncommitted
changes to tracked files, or a branch that moved since the last recorded
commit.`,
		Args: exactArgs(1, "a task id"),
		RunE: a.withEngine(func(ctx context.Context, l *events.Log, args []string) error {
			if to == "" {
				return usageErr("rewind needs --to <checkpoint>")
			}
			return a.groundhogControl(ctx, l, engine.EndpointGroundhogRewind,
				engine.GroundhogControl{TaskID: args[0], Checkpoint: to, Reason: reason, By: requester()})
		}),
	}
	cmd.Flags().StringVar(&to, "to", "", "the checkpoint to rewind to before (required)")
	cmd.Flags().StringVar(&reason, "reason", "", "why the task is rewound (recorded)")
	return cmd
}

// groundhogControl asks the engine for an approve or a rewind and reports
// its answer.
func (a *app) groundhogControl(ctx context.Context, l *events.Log, endpoint string, req engine.GroundhogControl) error {
	ctx, cancel := context.WithTimeout(ctx, abandonTimeout)
	defer cancel()
	var res groundhog.Control
	if err := request(ctx, l, endpoint, req, &res); err != nil {
		if errors.Is(err, events.ErrNotFound) || errors.Is(err, events.ErrInvalidRequest) || errors.Is(err, events.ErrUnavailable) {
			return err
		}
		return &exitError{code: exitUnsuccess, err: fmt.Errorf("%s %s: %w", endpoint, req.TaskID, err)}
	}
	if a.json {
		if err := a.printJSON(res); err != nil {
			return err
		}
	} else if res.Outcome != groundhog.ControlRefused {
		a.printf("%s\n", res.Message)
	}
	if res.Outcome == groundhog.ControlRefused {
		return &exitError{code: exitUnsuccess, err: errors.New(res.Message)}
	}
	return nil
}
