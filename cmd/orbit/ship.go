package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/orbitrun/orbit/engine"
	"github.com/orbitrun/orbit/executor"
	"github.com/orbitrun/orbit/shipping"
)

// autoJob is the job orbit run ship and orbit run auto submit.
const autoJob = "task_auto_pipeline"

// shipOptions are the flags of orbit run ship and orbit run auto.
type shipOptions struct {
	mode, base, baseSync string
	maxBundles           int
	pollSeconds          int
	detach               bool
}

func (o *shipOptions) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&o.mode, "mode", "", "local: merge into the base branch; pr: open a pull request (default: the job's, pr)")
	f.StringVar(&o.base, "base", "", "the base branch (default: the job's, main)")
	f.StringVar(&o.baseSync, "base-sync", "", "remote: start from origin/<base>, freshly fetched (default); local: from the local base")
	f.IntVar(&o.pollSeconds, "poll-seconds", 0, "how often a gate waiting for files held by another run asks again (default: the job's, 30)")
	f.BoolVarP(&o.detach, "detach", "d", false, "print the run id and return without waiting")
}

func (a *app) runShipCommand() *cobra.Command {
	var opts shipOptions
	cmd := &cobra.Command{
		Use:   "ship <task-id>... [--mode local|pr] [--base main] [--base-sync remote|local] [--detach]",
		Short: "Ship tasks: each through its gate and its pipeline",
		Long: `Ship the named tasks, each as a bundle of its own, as orbit run auto does with
the backlog: task_auto_pipeline dispatches a task_gate_pipeline per task,
which reserves the task's context files and runs task_<mode>_pipeline in a
worktree of its own. Tasks that share no file ship side by side; one that
shares a file with another waits in its gate.

Prints the run id, then, once the run has ended, its workflow status, what
it dispatched and each gate's end (--json: the report as JSON). Exit status:
0 every gate succeeded, 1 one did not, 2 bad input, 3 no engine.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.ship(cmd.Context(), map[string]any{"task_ids": args}, opts)
		},
	}
	opts.register(cmd)
	return cmd
}

func (a *app) runAutoCommand() *cobra.Command {
	var opts shipOptions
	cmd := &cobra.Command{
		Use:   "auto [--max-bundles N] [--mode local|pr] [--base main] [--base-sync remote|local] [--detach]",
		Short: "Ship the backlog",
		Long: `Ship the backlog (task_auto_pipeline): the backlog's tasks whose
dependencies are done, most urgent and oldest first, each through its gate
(task_gate_pipeline) and its pipeline (task_<mode>_pipeline), in worktrees
of their own. A task whose context files overlap files a running shipment
holds is left out (excluded) until the next run; a task that shares a file
with another of this run waits in its gate until that one ends.

Prints the run id, then its workflow status: empty_backlog (nothing to
ship), gated_noop (nothing dispatched, tasks left out for held files),
gate_waiting (a gate has not ended), gate_failed, or completed; with the
number of gates dispatched and tasks excluded, why each was, and each
gate's end (--json: the report as JSON). Exit status: 0 every gate
succeeded, 1 one did not, 2 bad input, 3 no engine.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			input := map[string]any{}
			if opts.maxBundles > 0 {
				input["max_bundles"] = opts.maxBundles
			}
			return a.ship(cmd.Context(), input, opts)
		},
	}
	opts.register(cmd)
	cmd.Flags().IntVar(&opts.maxBundles, "max-bundles", 0, "dispatch at most this many bundles (default: the job's, 10)")
	return cmd
}

// ship submits task_auto_pipeline with input and the options, and reports
// how it went.
func (a *app) ship(ctx context.Context, input map[string]any, opts shipOptions) error {
	cat, err := a.projectCatalog()
	if err != nil {
		return err
	}
	job, err := cat.Job(autoJob)
	if err != nil {
		return err
	}
	for flag, v := range map[string]string{"mode": opts.mode, "base_branch": opts.base, "base_sync": opts.baseSync} {
		if v != "" {
			input[flag] = v
		}
	}
	if opts.pollSeconds > 0 {
		input["poll_interval_seconds"] = opts.pollSeconds
	}
	if s := opts.baseSync; s != "" && s != "remote" && s != "local" {
		return usageErr("--base-sync is remote or local, not %q", s)
	}
	req, err := executor.NewRunRequest(job, input, requester())
	if err != nil {
		return err
	}
	// The pipeline a gate dispatches is task_<mode>_pipeline: say now if
	// the catalog has none, rather than fail every gate.
	mode, _ := req.Input.(map[string]any)["mode"].(string)
	if _, err := cat.Job("task_" + mode + "_pipeline"); err != nil {
		return usageErr("--mode %s: %v", mode, err)
	}
	req.Backend = cat.Backend()
	if err := req.PinEnv(os.LookupEnv); err != nil {
		return err
	}
	l, err := a.connect(ctx)
	if err != nil {
		return err
	}
	defer l.Close()
	if opts.detach {
		return a.submit(ctx, l, req, true)
	}
	ran := a.submitThen(ctx, l, req, false, false)
	var ee *exitError
	if ran != nil && !errors.Is(ran, unsuccessful) && !(errors.As(ran, &ee) && ee.code == exitInterrupted) {
		return ran
	}
	last, err := l.LastSeq(context.WithoutCancel(ctx))
	if err != nil {
		return &exitError{code: exitUnavailable, err: err}
	}
	var rep shipping.AutoReport
	if err := request(context.WithoutCancel(ctx), l, engine.EndpointShipReport, engine.ShipReportQuery{RunID: req.RunID, MinSeq: last}, &rep); err != nil {
		return err
	}
	if a.json {
		if err := a.printJSON(rep); err != nil {
			return err
		}
	} else {
		a.printReport(&rep)
	}
	return ran
}

func (a *app) printReport(rep *shipping.AutoReport) {
	a.printf("workflow_status: %s\n", rep.WorkflowStatus)
	a.printf("run %s %s: %d listed, %d dispatched, %d excluded\n", rep.RunID, rep.State, rep.Listed, rep.Dispatched, len(rep.Excluded))
	for _, g := range rep.Gates {
		line := fmt.Sprintf("  gate %s  %s  %s", g.RunID, strings.Join(g.TaskIDs, ","), g.State)
		switch {
		case g.Skipped != "":
			line += "  skipped: " + g.Skipped
		case g.Child != "":
			line += fmt.Sprintf("  pipeline %s %s", g.Child, or(g.ChildStatus, "running"))
		}
		if g.Error != nil {
			line += "  " + describeError(g.Error)
		}
		a.printf("%s\n", line)
	}
	for _, x := range rep.Excluded {
		var held []string
		for _, c := range x.Conflicts {
			held = append(held, c.RequestedFile+" (held for "+c.LockingTaskID+")")
		}
		a.printf("  excluded %s  %s  %s\n", x.ID, x.Reason, strings.Join(held, ", "))
	}
	if rep.Error != nil && len(rep.Gates) == 0 {
		a.printf("  %s\n", describeError(rep.Error))
	}
}
