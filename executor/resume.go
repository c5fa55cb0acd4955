package executor

import (
	"context"
	"fmt"
	"strings"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/failpoint"
)

// Raise is a new budget for a run that ended budget_exhausted. A bound left
// at zero keeps the run's current one.
type Raise struct {
	MaxTokens  int64
	MaxCostUSD float64
}

// Raised says what ResumeRun recorded.
type Raised struct {
	RunID string `json:"run_id"`
	Job   string `json:"job"`
	// Seq is the stream sequence of the run.budget_raised event: the run's
	// events after it are the resumed run's.
	Seq  uint64                     `json:"seq"`
	Data events.RunBudgetRaisedData `json:"budget"`
}

// ResumeRun raises the budget of a run that ended budget_exhausted by
// recording run.budget_raised; the run is then live again, and the
// orchestrator that admits it (Orchestrator.Resume, or any engine's
// recovery) goes on where the budget stopped it: finished steps keep their
// results, and the step the budget stopped runs again as a new attempt.
//
// It refuses, writing nothing, with an error matching events.ErrNotFound a
// run the log does not have, and with one matching ErrNotResumable and
// events.ErrInvalidRequest a Groundhog run (its task's budget is raised in
// a new plan version), a run that is not budget_exhausted, a raise that
// sets no bound, or a bound not above what the run has spent (it would
// stop again before its next step). A raise recorded by someone else at the
// same moment is refused with events.ErrConflict.
func ResumeRun(ctx context.Context, log *events.Log, runID string, r Raise, requester string) (*Raised, error) {
	if r.MaxTokens < 0 || r.MaxCostUSD < 0 || (r.MaxTokens == 0 && r.MaxCostUSD == 0) {
		return nil, refuse([]error{events.ErrInvalidRequest, ErrNotResumable},
			"a raise needs a positive max_tokens or max_cost_usd (orbit run resume %s --max-tokens N | --max-cost-usd N)", runID)
	}
	evs, err := readRun(ctx, log, runID, events.RunRequested, events.RunFinished, events.RunBudgetRaised,
		events.AgentTurn, events.CLIInvocationFinished)
	if err != nil {
		return nil, err
	}
	var (
		job    string
		state  string
		budget *assets.Budget
		raises int
		last   events.Event // the run.finished a raise reopens
		s      spend
	)
	for _, ev := range evs {
		s.add(ev)
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
			job, state, budget = j.Name, events.StatePending, j.Spec.Budget
		case events.RunFinished:
			var d events.RunFinishedData
			if err := ev.Decode(&d); err != nil {
				return nil, err
			}
			state, last = d.State, ev
		case events.RunBudgetRaised:
			var d events.RunBudgetRaisedData
			if err := ev.Decode(&d); err != nil {
				return nil, err
			}
			state, raises = events.StateRunning, d.Raise
			budget = &assets.Budget{MaxTokens: d.MaxTokens, MaxCostUSD: d.MaxCostUSD}
		}
	}
	switch {
	case job == "":
		return nil, refuse([]error{events.ErrNotFound}, "no run %s (orbit run history lists the runs)", runID)
	case strings.HasPrefix(job, events.GroundhogJobPrefix):
		// The task's budget stopped it, and it lives in the task's plan.
		return nil, refuse([]error{events.ErrInvalidRequest, ErrNotResumable},
			"run %s is a Groundhog run: its task's budget is in the task's plan; raise it in a new plan version (orbit task plan %s --file FILE), then orbit groundhog run %s",
			runID, strings.TrimPrefix(job, events.GroundhogJobPrefix), strings.TrimPrefix(job, events.GroundhogJobPrefix))
	case state != events.StateBudgetExhausted:
		return nil, refuse([]error{events.ErrInvalidRequest, ErrNotResumable},
			"run %s is %s, not %s: only a run its budget stopped can be resumed", runID, state, events.StateBudgetExhausted)
	}
	d := events.RunBudgetRaisedData{Raise: raises + 1, Tokens: s.tokens, CostUSD: s.costUSD, Requester: requester}
	if budget != nil {
		d.MaxTokens, d.MaxCostUSD = budget.MaxTokens, budget.MaxCostUSD
	}
	if r.MaxTokens > 0 {
		if r.MaxTokens <= s.tokens {
			return nil, refuse([]error{events.ErrInvalidRequest, ErrNotResumable},
				"run %s has spent %d tokens: a max_tokens of %d is not above that", runID, s.tokens, r.MaxTokens)
		}
		d.MaxTokens = r.MaxTokens
	}
	if r.MaxCostUSD > 0 {
		if r.MaxCostUSD <= s.costUSD {
			return nil, refuse([]error{events.ErrInvalidRequest, ErrNotResumable},
				"run %s has spent $%.4f: a max_cost_usd of %.4f is not above that", runID, s.costUSD, r.MaxCostUSD)
		}
		d.MaxCostUSD = r.MaxCostUSD
	}
	if (&assets.Budget{MaxTokens: d.MaxTokens, MaxCostUSD: d.MaxCostUSD}).Exhausted(s.tokens, s.costUSD) {
		return nil, refuse([]error{events.ErrInvalidRequest, ErrNotResumable},
			"run %s would stop again at once: %s; raise that bound too", runID, spentText(s.tokens, s.costUSD, d.MaxTokens, d.MaxCostUSD))
	}
	app, err := log.Append(ctx, events.Event{
		ID:       events.RunBudgetRaisedID(runID, d.Raise),
		Type:     events.RunBudgetRaised,
		RunID:    runID,
		Job:      job,
		ParentID: last.ID,
	}, d)
	if err != nil {
		return nil, fmt.Errorf("recording the raise of run %s: %w", runID, err)
	}
	failpoint.Hit("resume-after-raise")
	if app.Duplicate {
		return nil, fmt.Errorf("%w: run %s was resumed by another request at the same moment", events.ErrConflict, runID)
	}
	return &Raised{RunID: runID, Job: job, Seq: app.Seq, Data: d}, nil
}

// raises reads the run's budget raises from the history: how many, the
// sequence of the last one, and the run's budget since then (the job's
// when none). The interpreter reads them once, as it starts: a raise is
// only recorded for a run that has ended, so none arrives while it runs.
func (x *interpreter) loadRaises() error {
	x.budget = x.job.Spec.Budget
	for n := 1; ; n++ {
		ev, ok := x.hist.get(events.RunBudgetRaisedID(x.runID, n))
		if !ok {
			return nil
		}
		var d events.RunBudgetRaisedData
		if err := ev.Decode(&d); err != nil {
			return err
		}
		x.raise, x.raisedAt = n, ev.Seq
		x.budget = &assets.Budget{MaxTokens: d.MaxTokens, MaxCostUSD: d.MaxCostUSD}
	}
}

// stoppedBeforeRaise reports whether attempt n of step key ended
// budget_exhausted before the run's last budget raise: the raise lets the
// step go on, so that attempt is passed over and the next one runs.
func (x *interpreter) stoppedBeforeRaise(key string, n int) bool {
	if x.raise == 0 {
		return false
	}
	ev, ok := x.hist.get(stepEventID(events.StepFinished, x.runID, key, n))
	if !ok || ev.Seq > x.raisedAt {
		return false
	}
	var d events.StepFinishedData
	return ev.Decode(&d) == nil && d.State == events.StateBudgetExhausted
}

// watchRaises admits every run whose budget is raised from now on, so that
// it goes on as soon as it has a slot. A run the engine still holds, ending
// as the raise arrives, is admitted again when it ends. The returned func stops
// watching and waits until it has; it may be called more than once.
func (o *Orchestrator) watchRaises(ctx context.Context) (func(), error) {
	return o.watchRuns(ctx, events.RunBudgetRaised, func(runID string) { o.resume(ctx, runID) })
}

// resume admits a run whose budget was raised, or, when this engine still
// holds it, has it admitted again once it ends (see release). Either way it
// takes a slot or queues like any run. On a shared server the global queue
// admits it (see apply).
func (o *Orchestrator) resume(ctx context.Context, runID string) {
	if o.shared() {
		return
	}
	o.mu.Lock()
	if rc, ok := o.runs[runID]; ok {
		rc.again = true
		o.mu.Unlock()
		return
	}
	o.mu.Unlock()
	rc, err := o.loadRun(ctx, runID)
	if err != nil {
		o.log.Error("cannot resume run after its budget was raised", "run", runID, "err", err)
		return
	}
	o.admit(ctx, rc)
}
