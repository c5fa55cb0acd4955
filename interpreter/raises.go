package interpreter

import (
	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
)

// raises reads the run's budget raises from the history: how many, the
// sequence of the last one, and the run's budget since then (the job's
// when none). The interpreter reads them once, as it starts: a raise is
// only recorded for a run that has ended, so none arrives while it runs.
func (x *Interpreter) loadRaises() error {
	x.budget = x.job.Spec.Budget
	for n := 1; ; n++ {
		ev, ok := x.hist.Get(events.RunBudgetRaisedID(x.runID, n))
		if !ok {
			return nil
		}
		var d events.RunBudgetRaisedData
		if err := ev.Decode(&d); err != nil {
			return err
		}
		x.raise, x.raisedAt = n, ev.Seq
		x.budget = &assets.Budget{MaxTokens: d.MaxTokens, MaxCostUSD: d.MaxCostUSD}
		x.raisedChild, x.childRaise = d.ChildRunID, d.ChildRaise
	}
}

// resumedChild returns the child run that attempt n of step key waits for
// again, and the raise of the child whose end it waits for: the child the
// run's last raise reopened it with, when attempt n-1 waited for that child
// and the budget stopped it before the raise. "" when the attempt starts
// its own child (or waits for the run its config names).
func (x *Interpreter) resumedChild(key string, n int) (string, int) {
	if x.raisedChild == "" || n < 2 || !x.stoppedBeforeRaise(key, n-1) {
		return "", 0
	}
	ev, ok := x.hist.Get(StepEventID(events.StepStarted, x.runID, key, n-1))
	if !ok {
		return "", 0
	}
	var d events.StepStartedData
	if ev.Decode(&d) != nil || d.ChildRunID != x.raisedChild {
		return "", 0
	}
	return x.raisedChild, x.childRaise
}

// stoppedBeforeRaise reports whether attempt n of step key ended
// budget_exhausted before the run's last budget raise: the raise lets the
// step go on, so that attempt is passed over and the next one runs.
func (x *Interpreter) stoppedBeforeRaise(key string, n int) bool {
	if x.raise == 0 {
		return false
	}
	ev, ok := x.hist.Get(StepEventID(events.StepFinished, x.runID, key, n))
	if !ok || ev.Seq > x.raisedAt {
		return false
	}
	var d events.StepFinishedData
	return ev.Decode(&d) == nil && d.State == events.StateBudgetExhausted
}
