package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/orbitrun/orbit/engine"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/executor"
	"github.com/orbitrun/orbit/projector"
)

func (a *app) runRetryCommand() *cobra.Command {
	var (
		from   string
		input  string
		detach bool
		sel    selectorFlags
	)
	cmd := &cobra.Command{
		Use:   "retry [<run_id>] [--from STEP] [--input JSON|@file] [--job J] [--state S] [--since D] [--requester R] [--dry-run]",
		Short: "Run a finished run's job again, from the start or from a step",
		Long: `Start a new run of the job a finished run ran: the job as that run pinned it
(not the job file as it is today), with the same input unless --input gives
a new one. With --from STEP (a top-level step id), the steps before STEP
return the old run's recorded outputs without running, and STEP and the
steps after it run again.

A retry never carries a decision across a change of the input it rested
on. With an --input that differs from the old run's, every wait gate
before STEP is re-armed (a signal approves a run with its input), and a
step before STEP is reused only if its input, rendered on the new input,
equals the one the old run recorded; the others run again. The retry lists
on stderr (with --json, in "steps") what it reuses, re-arms or runs again,
and why; 'orbit run show' shows it too.

The new run records which run it retries and from where; 'orbit run show'
shows the lineage both ways. A pending or running run cannot be retried.
The new run's id is printed on stdout and the run followed to its end, as
'orbit job run' does, unless --detach.

With selectors instead of a run id (--job, --state, --since, --requester)
every finished run they pick is retried, detached, each retry recording
the bulk operation's id; the runs retried are printed, one "old new" pair a
line. --dry-run lists the runs and retries none.

Exit status: 0 the new run succeeded, 1 it did not, 2 the retry was refused
(unknown run, run not finished, unknown step, bad input; nothing is
written), 3 no engine could be reached.`,
		Args: func(cmd *cobra.Command, args []string) error { return sel.args(cmd, args) },
		RunE: a.withEngine(func(ctx context.Context, l *events.Log, args []string) error {
			q := engine.RunRetry{From: from, Requester: requester(), Selector: sel.selector(), DryRun: sel.dryRun}
			if len(args) == 1 {
				q.RunID = args[0]
			}
			if input != "" {
				v, err := a.parseInput(input)
				if err != nil {
					return err
				}
				if q.Input, err = json.Marshal(v); err != nil {
					return err
				}
			}
			if _, err := storeAccepts(ctx, l); err != nil {
				return err
			}
			if q.Selector != nil {
				var res engine.BulkRetried
				if err := request(ctx, l, engine.EndpointRunRetry, q, &res); err != nil {
					return err
				}
				if a.json {
					return a.printJSON(res)
				}
				if res.Bulk.DryRun {
					return a.printBulk("retried", res.Bulk)
				}
				for i, id := range res.Retries {
					a.printf("%s %s\n", res.Bulk.Runs[i], id)
				}
				if res.Bulk.ID != "" {
					a.errorf("%d run(s) retried as bulk operation %s\n", len(res.Retries), res.Bulk.ID)
				}
				for id, why := range res.Bulk.Refused {
					a.errorf("run %s: %s\n", id, why)
				}
				if len(res.Bulk.Refused) > 0 {
					return unsuccessful
				}
				return nil
			}
			if sel.dryRun {
				return usageErr("orbit run retry: --dry-run goes with selectors (--job, --state, --since, --requester)")
			}
			var res engine.RunRetried
			if err := request(ctx, l, engine.EndpointRunRetry, q, &res); err != nil {
				return err
			}
			if detach {
				if a.json {
					return a.printJSON(res)
				}
				a.printf("%s\n", res.RunID)
				a.retryPlan(res.RunID, res.Steps)
				return nil
			}
			feed, err := a.followRun(ctx, l, res.RunID, []string{events.RunFilter(res.RunID)})
			if err != nil {
				return err
			}
			defer feed.stop()
			if !a.json {
				a.printf("%s\n", res.RunID)
				a.retryPlan(res.RunID, res.Steps)
			}
			return a.follow(ctx, feed, res.Job, a.json)
		}),
	}
	cmd.Flags().StringVar(&from, "from", "", "the top-level step to run again from (the steps before it reuse their recorded outputs)")
	cmd.Flags().StringVarP(&input, "input", "i", "", "a new input as JSON, or @FILE (@- for stdin), merged over the job's default_input (default: the old run's input)")
	cmd.Flags().BoolVarP(&detach, "detach", "d", false, "print the new run id and return without waiting")
	sel.register(cmd)
	a.progressFlag(cmd)
	return cmd
}

func (a *app) runSignalCommand() *cobra.Command {
	var data string
	cmd := &cobra.Command{
		Use:   "signal <run_id> NAME [--data JSON|@file]",
		Short: "Send a signal to a run that waits for it at a wait step",
		Long: `Send the signal NAME to a run. Every step of the run that waits for NAME now
(a step with the body 'wait: {signal: NAME}') finishes with the signal's
data as its output, and the run goes on. The signal is recorded in the
run's log (run.signalled).

A signal that the run does not wait for is refused and nothing is recorded:
the run has finished, or has not started, or waits for other signals, or
its wait timed out. The message says what the run is waiting for
('orbit run show' says it too).

The run id is printed on stdout (with --json: the steps the signal opened).

Exit status: 0 delivered, 2 refused (unknown run, not waiting for NAME,
--data not JSON), 3 no engine could be reached.`,
		Args: exactArgs(2, "a run id and a signal name"),
		RunE: a.withEngine(func(ctx context.Context, l *events.Log, args []string) error {
			q := engine.RunSignal{RunID: args[0], Signal: args[1], Requester: requester()}
			if data != "" {
				v, err := a.parseJSONFlag("--data", "a signal's data", data)
				if err != nil {
					return err
				}
				if q.Data, err = json.Marshal(v); err != nil {
					return err
				}
			}
			var res executor.Signalled
			if err := request(ctx, l, engine.EndpointRunSignal, q, &res); err != nil {
				return err
			}
			if a.json {
				return a.printJSON(res)
			}
			a.printf("%s\n", res.RunID)
			for _, g := range res.Gates {
				a.errorf("run %s: signal %s opened step %s\n", res.RunID, res.Signal, g.StepKey)
			}
			return nil
		}),
	}
	cmd.Flags().StringVar(&data, "data", "", "the signal's data as JSON, or @FILE (@- for stdin): the waiting step's output")
	return cmd
}

// retryPlan says on stderr what a retry does with the steps before its
// --from step.
func (a *app) retryPlan(runID string, steps []events.RetryStep) {
	for _, s := range steps {
		a.errorf("run %s: %s\n", runID, retryStepLine(s))
	}
}

// retryStepLine says in words what a retry did with one step:
// "reuses step build: its rendered input is unchanged".
func retryStepLine(s events.RetryStep) string {
	switch s.Action {
	case events.RetryReused:
		return fmt.Sprintf("reuses step %s: %s", s.Step, s.Reason)
	case events.RetryRearmed:
		return fmt.Sprintf("re-arms step %s: %s", s.Step, s.Reason)
	}
	return fmt.Sprintf("runs step %s again: %s", s.Step, s.Reason)
}

// fromStep says where a retry started: "from STEP", or "" for all steps.
func fromStep(from string) string {
	if from == "" {
		return ""
	}
	return "from " + from
}

// lineage is the retry lineage of a run as lines for the end of a trace:
// the run it retries and the runs that retried it.
func lineage(v *projector.RunView) string {
	var b strings.Builder
	if v.RetryOf != "" {
		fmt.Fprintf(&b, "\nretry of: %s\n", strings.TrimSpace(v.RetryOf+" "+fromStep(v.RetryFrom)))
	}
	if len(v.Retries) > 0 {
		if v.RetryOf == "" {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "retried by: %s\n", strings.Join(v.Retries, ", "))
	}
	return b.String()
}

// runLineage is a run's lineage in one cell of `orbit run history`.
func runLineage(v *projector.RunView) string {
	var parts []string
	if v.RetryOf != "" {
		parts = append(parts, strings.TrimSpace("retry of "+v.RetryOf+" "+fromStep(v.RetryFrom)))
	}
	if len(v.Retries) > 0 {
		parts = append(parts, "retried by "+strings.Join(v.Retries, ", "))
	}
	return strings.Join(parts, "; ")
}

// waitingFor says what a waiting step waits for, and how to send it.
func waitingFor(runID string, s projector.StepView) string {
	until := "no deadline"
	if s.Wait.Deadline != nil {
		until = "until " + timestamp(s.Wait.Deadline)
	}
	return fmt.Sprintf("signal %s at step %s, %s (orbit run signal %s %s)", s.Wait.Signal, s.Key, until, runID, s.Wait.Signal)
}
