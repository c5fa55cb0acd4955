package executor

import (
	"context"
	"strings"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/interpreter"
)

// runFacts is what ResumeRun reads of a run from the log.
type runFacts struct {
	id       string
	job      string
	state    string // pending before its first end
	budget   *assets.Budget
	raises   int
	raisedAt uint64       // sequence of its last raise
	last     events.Event // its last run.finished: the end a raise reopens
	spent    interpreter.Spend
	parent   *events.RunLink
	// stops are the attempts of its steps that waited for a child run
	// and ended budget_exhausted, in log order.
	stops []childStop
}

// childStop is a step attempt of a run that ended budget_exhausted when
// the child run it waited for did.
type childStop struct {
	key   string
	child string
	seq   uint64 // of the attempt's step.finished
}

// readFacts reads runID's facts from the log. A run the log does not have
// has an empty job.
func readFacts(ctx context.Context, log *events.Log, runID string) (*runFacts, error) {
	evs, err := readRun(ctx, log, runID, events.RunRequested, events.RunFinished, events.RunBudgetRaised,
		events.AgentTurn, events.CLIInvocationFinished, events.StepStarted, events.StepFinished)
	if err != nil {
		return nil, err
	}
	f := &runFacts{id: runID}
	children := map[string]string{} // step key # attempt → child run
	for _, ev := range evs {
		f.spent.Add(ev)
		switch ev.Type {
		case events.RunRequested:
			var d events.RunRequestedData
			if err := ev.Decode(&d); err != nil {
				return nil, err
			}
			j, err := decodeJob(d.Job)
			if err != nil {
				return nil, err
			}
			f.job, f.state, f.budget, f.parent = j.Name, events.StatePending, j.Spec.Budget, d.Parent
		case events.RunFinished:
			var d events.RunFinishedData
			if err := ev.Decode(&d); err != nil {
				return nil, err
			}
			f.state, f.last = d.State, ev
		case events.RunBudgetRaised:
			var d events.RunBudgetRaisedData
			if err := ev.Decode(&d); err != nil {
				return nil, err
			}
			f.state, f.raises, f.raisedAt = events.StateRunning, d.Raise, ev.Seq
			f.budget = &assets.Budget{MaxTokens: d.MaxTokens, MaxCostUSD: d.MaxCostUSD}
		case events.StepStarted:
			var d events.StepStartedData
			if ev.Decode(&d) == nil && d.ChildRunID != "" {
				children[interpreter.AttemptKey(ev.StepKey, d.Attempt)] = d.ChildRunID
			}
		case events.StepFinished:
			var d events.StepFinishedData
			if ev.Decode(&d) != nil || d.State != events.StateBudgetExhausted {
				break
			}
			if child := children[interpreter.AttemptKey(ev.StepKey, d.Attempt)]; child != "" {
				f.stops = append(f.stops, childStop{key: ev.StepKey, child: child, seq: ev.Seq})
			}
		}
	}
	return f, nil
}

// stoppedBy returns the child stop that ended the run's last segment, when
// the run is budget_exhausted because a child it waited for was.
func (f *runFacts) stoppedBy() (childStop, bool) {
	if f.state != events.StateBudgetExhausted {
		return childStop{}, false
	}
	for i := len(f.stops) - 1; i >= 0; i-- {
		if s := f.stops[i]; s.seq > f.raisedAt {
			return s, true
		}
	}
	return childStop{}, false
}

// tookEnd returns the attempt of the run's last segment that took child's
// budget_exhausted end, if one did.
func (f *runFacts) tookEnd(child string, after uint64) (childStop, bool) {
	for _, s := range f.stops {
		if s.child == child && s.seq > after {
			return s, true
		}
	}
	return childStop{}, false
}

// reusable reports whether a run stopped at s waits for the same child
// again once reopened: its step runs again under the same key only when
// it is a top-level step. A step inside a parallel, fan-out or loop runs
// again with that structural step, under a new key, and starts a new
// child run.
func (s childStop) reusable() bool { return !strings.Contains(s.key, "/") }
