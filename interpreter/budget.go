package interpreter

import (
	"context"
	"fmt"
	"strconv"

	"github.com/orbitrun/orbit/events"
)

// budgetCheck decides, before step key starts, whether the run's budget is
// spent, and records the decision (run.budget_exhausted, its id derived
// from the run and the step) when it is. A step that has started or been
// skipped was let through before: the check is not made again, so a
// replay that sees usage recorded later makes the same decisions.
func (x *Interpreter) budgetCheck(ctx context.Context, sc *scope, key string) *events.ErrorInfo {
	b := x.budget
	if b == nil {
		return nil
	}
	id := events.DecisionID(events.RunBudgetExhausted, x.runID, key)
	if x.raise > 0 {
		// The decisions made before the last raise were made under an
		// older budget: each raise decides afresh.
		id = events.DecisionID(events.RunBudgetExhausted, x.runID, key, "raise", strconv.Itoa(x.raise))
	}
	if ev, ok := x.hist.Get(id); ok {
		var d events.RunBudgetExhaustedData
		if err := ev.Decode(&d); err != nil {
			return internal(ctx, err)
		}
		return budgetFailure(key, &d)
	}
	for _, seen := range []string{
		StepEventID(events.StepStarted, x.runID, key, 1),
		StepEventID(events.StepFinished, x.runID, key, 1),
		events.DecisionID(events.StepSkipped, x.runID, key),
	} {
		if _, ok := x.hist.Get(seen); ok {
			return nil
		}
	}
	tokens, cost := x.hist.Spent()
	if !b.Exhausted(tokens, cost) {
		return nil
	}
	d := events.RunBudgetExhaustedData{Before: key, Tokens: tokens, CostUSD: cost,
		MaxTokens: b.MaxTokens, MaxCostUSD: b.MaxCostUSD}
	if err := x.record(ctx, events.Event{ID: id, Type: events.RunBudgetExhausted, StepKey: key, ParentID: sc.parent}, d); err != nil {
		return internal(ctx, err)
	}
	x.host.Failpoint("interpreter-after-budget-decision")
	return budgetFailure(key, &d)
}

func budgetFailure(key string, d *events.RunBudgetExhaustedData) *events.ErrorInfo {
	return &events.ErrorInfo{Kind: events.KindBudget, StepKey: key,
		Message: "budget spent before step " + key + ": " + SpentText(d.Tokens, d.CostUSD, d.MaxTokens, d.MaxCostUSD)}
}

// SpentText says what was spent against which bounds.
func SpentText(tokens int64, cost float64, maxTokens int64, maxCost float64) string {
	msg := fmt.Sprintf("%d tokens", tokens)
	if maxTokens > 0 {
		msg += fmt.Sprintf(" of max_tokens %d", maxTokens)
	}
	msg += fmt.Sprintf(", $%.4f", cost)
	if maxCost > 0 {
		msg += fmt.Sprintf(" of max_cost_usd %.4f", maxCost)
	}
	return msg
}
