package groundhog

import (
	"context"
	"fmt"
	"strconv"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
)

// budget is the task's budget under the pinned plan: the plan's own, else
// the groundhog activity's; nil when neither sets one.
func (r *runner) budget() *assets.Budget {
	if r.plan.Budget != nil {
		return r.plan.Budget
	}
	return r.cfg.Spec.Budget
}

// spent sums what every attempt of the task spent, whichever run, plan
// version or backend made it: the input plus output tokens of its model
// turns, the tokens of a CLI session whose turns carried none (Codex,
// claude_json: its groundhog.agent.usage is then the only account), and
// the cost of every CLI session (only CLI agents report one).
func (st *state) spent() (tokens int64, costUSD float64) {
	for _, a := range st.attempts {
		var turns int64
		for _, t := range a.turns {
			turns += t.Usage.InputTokens + t.Usage.OutputTokens
		}
		tokens += turns
		for _, u := range a.usage {
			costUSD += u.CostUSD
			if turns == 0 {
				tokens += u.Tokens()
			}
		}
	}
	return tokens, costUSD
}

// budgetSpent is the check before an attempt of cp: when the task's budget
// is spent it records the decision (once per plan version, so a run that
// tries again under the same budget finds it recorded) and returns the
// run's result, budget_exhausted; otherwise nil.
func (r *runner) budgetSpent(ctx context.Context, cp *assets.Checkpoint) (*Result, error) {
	b := r.budget()
	tokens, cost := r.st.spent()
	if !b.Exhausted(tokens, cost) {
		return nil, nil
	}
	d := events.GroundhogBudgetSpentData{RunID: r.cfg.RunID, PlanVersion: r.pin, Checkpoint: cp.ID, Tokens: tokens, CostUSD: cost,
		MaxTokens: b.MaxTokens, MaxCostUSD: b.MaxCostUSD}
	if err := record(ctx, r, events.GroundhogBudgetSpent, events.DecisionID(events.GroundhogBudgetSpent, r.cfg.TaskID, strconv.Itoa(r.pin)), d); err != nil {
		return nil, err
	}
	msg := fmt.Sprintf("budget spent before checkpoint %s: %d tokens", cp.ID, tokens)
	if b.MaxTokens > 0 {
		msg += fmt.Sprintf(" of max_tokens %d", b.MaxTokens)
	}
	if cost > 0 || b.MaxCostUSD > 0 {
		msg += fmt.Sprintf(", $%.4f", cost)
	}
	if b.MaxCostUSD > 0 {
		msg += fmt.Sprintf(" of max_cost_usd %.4f", b.MaxCostUSD)
	}
	msg += " (raise it in a new plan version: orbit task plan " + r.cfg.TaskID + " --file FILE)"
	return &Result{State: events.GroundhogBudgetExhausted, Committed: r.committedCount(), Message: msg}, nil
}
