package events

import "strconv"

// RunBudgetRaised records that a run which ended budget_exhausted was given
// a higher budget (orbit run resume): the run is live again, and its
// interpreter goes on where the budget stopped it. Its id is derived from
// the run and the raise's number, so each raise is recorded once.
const RunBudgetRaised = "run.budget_raised"

func init() {
	register(RunBudgetRaised, AggregateRun, RunBudgetRaisedData{})
}

// RunBudgetRaisedData is a run's budget from the raise on, and what the
// run had spent when it was raised. Raise numbers a run's raises from 1,
// in log order; a bound left at zero sets no bound.
type RunBudgetRaisedData struct {
	Raise      int     `json:"raise"`
	MaxTokens  int64   `json:"max_tokens,omitempty"`
	MaxCostUSD float64 `json:"max_cost_usd,omitempty"`
	Tokens     int64   `json:"tokens"`
	CostUSD    float64 `json:"cost_usd,omitempty"`
	Requester  string  `json:"requester,omitempty"`
	// Signer signed the raise (nil: a raise recorded before it was).
	Signer *Signer `json:"signer,omitempty"`
	// ChildRunID, set when the run stopped because a child run it waited
	// for did, names that child, whose raise numbered ChildRaise reopened
	// this run too: the step that waited for the child waits for its
	// next end (run.finished RunFinishedID(ChildRunID, ChildRaise)).
	ChildRunID string `json:"child_run_id,omitempty"`
	ChildRaise int    `json:"child_raise,omitempty"`
}

// RunBudgetRaisedID is the id of a run's raise-th run.budget_raised.
func RunBudgetRaisedID(runID string, raise int) string {
	return DecisionID(RunBudgetRaised, runID, strconv.Itoa(raise))
}

// RunFinishedID is the id of the run.finished that ends a run after its
// raise-th budget raise: each raise reopens the run, which ends again. The
// first end (raise 0) keeps the id a run without raises has.
func RunFinishedID(runID string, raise int) string {
	if raise == 0 {
		return DecisionID(RunFinished, runID)
	}
	return DecisionID(RunFinished, runID, "raise", strconv.Itoa(raise))
}
