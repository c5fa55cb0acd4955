package main

import (
	"context"
	"fmt"
	"math"

	"github.com/spf13/cobra"

	"github.com/orbitrun/orbit/engine"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/executor"
)

func (a *app) runResumeCommand() *cobra.Command {
	var (
		maxTokens int64
		maxCost   float64
		detach    bool
	)
	cmd := &cobra.Command{
		Use:   "resume <run_id> [--max-tokens N] [--max-cost-usd N]",
		Short: "Raise the budget of a run its budget stopped, and let it go on",
		Long: `Give a run that ended budget_exhausted a higher budget, and let the same run
go on: the steps that finished keep their results, and the step the budget
stopped (or was about to start) runs again, as a new attempt. The raise is
recorded in the run's log (run.budget_raised) with what the run had spent;
'orbit run show' lists it. A bound you leave out keeps its current value.

A child run (job.invoke) is where its budget was spent, so it is the one to
resume: a parent that waited for it and stopped with it goes on too, its
step waiting for the child's next end. Resuming such a parent is refused,
naming the child.

A run that is not budget_exhausted, a raise without a bound, or a bound not
above what the run has spent (it would stop again at once) is refused and
nothing is recorded.

The run id is printed on stdout and the run followed to its next end, as
'orbit job run' does, unless --detach.

Exit status: 0 the run succeeded, 1 it did not (its budget may stop it
again), 2 the raise was refused (unknown run, not budget_exhausted, bound
not above the spending), 3 no engine could be reached.`,
		Args: exactArgs(1, "a run id"),
		PreRunE: func(*cobra.Command, []string) error {
			switch {
			case math.IsNaN(maxCost) || math.IsInf(maxCost, 0) || maxCost < 0:
				return usageErr("--max-cost-usd: want a number of dollars ≥ 0, not %v", maxCost)
			case maxTokens < 0:
				return usageErr("--max-tokens: want a whole number ≥ 0, not %d", maxTokens)
			case maxTokens == 0 && maxCost == 0:
				return usageErr("orbit run resume needs --max-tokens or --max-cost-usd\nSee 'orbit run resume --help'.")
			}
			return nil
		},
		RunE: a.withEngine(func(ctx context.Context, l *events.Log, args []string) error {
			if _, err := storeAccepts(ctx, l); err != nil {
				return err
			}
			q := engine.RunResume{RunID: args[0], MaxTokens: maxTokens, MaxCostUSD: maxCost, Requester: requester()}
			feed, err := a.followRun(ctx, l, args[0], []string{events.RunFilter(args[0])})
			if err != nil {
				return err
			}
			defer feed.stop()
			var res executor.Raised
			if err := request(ctx, l, engine.EndpointRunResume, q, &res); err != nil {
				return err
			}
			if detach {
				if a.json {
					return a.printJSON(res)
				}
				a.printf("%s\n", res.RunID)
				return nil
			}
			// Only what follows the raise is the resumed run's.
			feed.last = res.Seq
			if !a.json {
				a.printf("%s\n", res.RunID)
			}
			a.errorf("run %s: budget raised to %s; resuming\n", res.RunID, bounds(res.Data.MaxTokens, res.Data.MaxCostUSD))
			for _, p := range res.Parents {
				a.errorf("run %s, which stopped waiting for it, goes on too\n", p)
			}
			return a.follow(ctx, feed, res.Job, a.json)
		}),
	}
	cmd.Flags().Int64Var(&maxTokens, "max-tokens", 0, "the run's new max_tokens (input plus output tokens of all its agents)")
	cmd.Flags().Float64Var(&maxCost, "max-cost-usd", 0, "the run's new max_cost_usd (as its CLI agents report their cost)")
	cmd.Flags().BoolVarP(&detach, "detach", "d", false, "print the run id and return without waiting")
	a.progressFlag(cmd)
	return cmd
}

// bounds says a budget in words: "max_tokens 5000, max_cost_usd 1.5000".
func bounds(maxTokens int64, maxCost float64) string {
	s := ""
	if maxTokens > 0 {
		s = fmt.Sprintf("max_tokens %d", maxTokens)
	}
	if maxCost > 0 {
		if s != "" {
			s += ", "
		}
		s += fmt.Sprintf("max_cost_usd %.4f", maxCost)
	}
	return s
}

// budgetRaise says a raise in words: "raised to max_tokens 5000 after 600
// tokens, $0.0000 spent (by cli:ann@host, signed by client U…)".
func budgetRaise(d events.RunBudgetRaisedData) string {
	s := fmt.Sprintf("raised to %s after %d tokens, $%.4f spent", bounds(d.MaxTokens, d.MaxCostUSD), d.Tokens, d.CostUSD)
	if d.Requester != "" || d.Signer != nil {
		s += " (by " + signedBy(d.Requester, d.Signer, ", ") + ")"
	}
	return s
}

// signedBy names who asked for a write: the requester the request named
// and, apart, the identity that signed it (Signer; a write recorded
// before signers were, or on a server that does not say, has none).
func signedBy(requester string, s *events.Signer, sep string) string {
	if requester == "" {
		requester = "unknown"
	}
	if s == nil {
		return requester
	}
	return requester + sep + "signed by " + s.String()
}
