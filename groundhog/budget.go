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

// spentTokens sums input plus output tokens of every model turn of every
// attempt of the task, whichever run or plan version made it. The turns do
// not carry a cost, so a task's max_cost_usd counts nothing yet.
func (st *state) spentTokens() int64 {
	var n int64
	for _, a := range st.attempts {
		for _, t := range a.turns {
			n += t.Usage.InputTokens + t.Usage.OutputTokens
		}
	}
	return n
}

// budgetSpent is the check before an attempt of cp: when the task's budget
// is spent it records the decision (once per plan version, so a run that
// tries again under the same budget finds it recorded) and returns the
// run's result, budget_exhausted; otherwise nil.
func (r *runner) budgetSpent(ctx context.Context, cp *assets.Checkpoint) (*Result, error) {
	b := r.budget()
	tokens := r.st.spentTokens()
	if !b.Exhausted(tokens, 0) {
		return nil, nil
	}
	d := events.GroundhogBudgetSpentData{RunID: r.cfg.RunID, PlanVersion: r.pin, Checkpoint: cp.ID, Tokens: tokens,
		MaxTokens: b.MaxTokens, MaxCostUSD: b.MaxCostUSD}
	if err := record(ctx, r, events.GroundhogBudgetSpent, events.DecisionID(events.GroundhogBudgetSpent, r.cfg.TaskID, strconv.Itoa(r.pin)), d); err != nil {
		return nil, err
	}
	msg := fmt.Sprintf("budget spent before checkpoint %s: %d tokens", cp.ID, tokens)
	if b.MaxTokens > 0 {
		msg += fmt.Sprintf(" of max_tokens %d", b.MaxTokens)
	}
	msg += " (raise it in a new plan version: orbit task plan " + r.cfg.TaskID + " --file FILE)"
	return &Result{State: events.GroundhogBudgetExhausted, Committed: r.committedCount(), Message: msg}, nil
}
