package projector

import (
	"github.com/orbitrun/orbit/events"
)

// runBudgetRaised reopens a run its budget stopped: the one change a
// terminal record takes, since the run goes on (executor.ResumeRun). The
// end it had is cleared; its next run.finished sets the new one.
func (b *runsBatch) runBudgetRaised(ev events.Event, d *events.RunBudgetRaisedData) error {
	e, err := b.openRun(ev, false)
	if e == nil || err != nil {
		return err
	}
	if e.rec.State != events.StateBudgetExhausted {
		b.log.Debug("ignoring a budget raise of a run that is not budget_exhausted", "seq", ev.Seq, "run", ev.RunID, "state", e.rec.State)
		return nil
	}
	e.rec.State = events.StateRunning
	e.rec.Output, e.rec.Error, e.rec.FinishedAt, e.rec.DurationMS = nil, nil, nil, 0
	e.rec.BudgetRaises = append(e.rec.BudgetRaises, *d)
	touchRun(e, ev)
	return nil
}
