package executor

import (
	"context"
	"fmt"
	"strings"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/failpoint"
	"github.com/orbitrun/orbit/interpreter"
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
	// Parents are the runs reopened with it, nearest first: each had
	// stopped because the run below it, which it waited for, did.
	Parents []string `json:"parents,omitempty"`
}

// ResumeRun raises the budget of a run that ended budget_exhausted by
// recording run.budget_raised; the run is then live again, and the
// orchestrator that admits it (Orchestrator.Resume, or any engine's
// recovery) goes on where the budget stopped it: finished steps keep their
// results, and the step the budget stopped runs again as a new attempt.
// The raise records who signed the API request ctx serves, if any
// (events.RequestSigner).
//
// A child run is where its budget was spent, so it is the one to resume:
// a parent that waited for it and stopped because it did is reopened with
// it (and so on up), its job.invoke or job.wait step waiting for the
// child's next end instead of starting a new child. Resuming such a parent
// is refused naming the child, unless the child was resumed already (the
// parent's reopening was interrupted), in which case the parent is
// reopened with it.
//
// It refuses, writing nothing, with an error matching events.ErrNotFound a
// run the log does not have, and with one matching ErrNotResumable and
// events.ErrInvalidRequest a Groundhog run (its task's budget is raised in
// a new plan version), a run that is not budget_exhausted, a raise that
// sets no bound, a bound not above what the run has spent (it would
// stop again before its next step), a parent stopped by a child that was
// not resumed, or a child whose end a parent took and went on from (the
// parent did not stop with it: resuming the child alone changes nothing it
// did). A raise recorded by someone else at the same moment is refused with
// events.ErrConflict.
func ResumeRun(ctx context.Context, log *events.Log, runID string, r Raise, requester string) (*Raised, error) {
	if r.MaxTokens < 0 || r.MaxCostUSD < 0 || (r.MaxTokens == 0 && r.MaxCostUSD == 0) {
		return nil, refuse([]error{events.ErrInvalidRequest, ErrNotResumable},
			"a raise needs a positive max_tokens or max_cost_usd (orbit run resume %s --max-tokens N | --max-cost-usd N)", runID)
	}
	f, err := readFacts(ctx, log, runID)
	if err != nil {
		return nil, err
	}
	switch {
	case f.job == "":
		return nil, refuse([]error{events.ErrNotFound}, "no run %s (orbit run history lists the runs)", runID)
	case strings.HasPrefix(f.job, events.GroundhogJobPrefix):
		// The task's budget stopped it, and it lives in the task's plan.
		task := strings.TrimPrefix(f.job, events.GroundhogJobPrefix)
		return nil, refuse([]error{events.ErrInvalidRequest, ErrNotResumable},
			"run %s is a Groundhog run: its task's budget is in the task's plan; raise it in a new plan version (orbit task plan %s --file FILE), then orbit groundhog run %s",
			runID, task, task)
	case f.state != events.StateBudgetExhausted:
		return nil, refuse([]error{events.ErrInvalidRequest, ErrNotResumable},
			"run %s is %s, not %s: only a run its budget stopped can be resumed", runID, f.state, events.StateBudgetExhausted)
	}
	d := events.RunBudgetRaisedData{Raise: f.raises + 1, Tokens: f.spent.Tokens, CostUSD: f.spent.CostUSD, Requester: requester,
		Signer: events.RequestSigner(ctx)}
	if f.budget != nil {
		d.MaxTokens, d.MaxCostUSD = f.budget.MaxTokens, f.budget.MaxCostUSD
	}
	if stop, ok := f.stoppedBy(); ok && stop.reusable() {
		child, err := readFacts(ctx, log, stop.child)
		if err != nil {
			return nil, err
		}
		if child.raises == 0 || child.raisedAt < stop.seq {
			return nil, refuse([]error{events.ErrInvalidRequest, ErrNotResumable},
				"run %s stopped because its child run %s (step %s) spent its budget: resume the child, and run %s goes on with it (orbit run resume %s --max-tokens N | --max-cost-usd N)",
				runID, stop.child, stop.key, runID, stop.child)
		}
		d.ChildRunID, d.ChildRaise = stop.child, child.raises
	}
	if r.MaxTokens > 0 {
		if r.MaxTokens <= f.spent.Tokens {
			return nil, refuse([]error{events.ErrInvalidRequest, ErrNotResumable},
				"run %s has spent %d tokens: a max_tokens of %d is not above that", runID, f.spent.Tokens, r.MaxTokens)
		}
		d.MaxTokens = r.MaxTokens
	}
	if r.MaxCostUSD > 0 {
		if r.MaxCostUSD <= f.spent.CostUSD {
			return nil, refuse([]error{events.ErrInvalidRequest, ErrNotResumable},
				"run %s has spent $%.4f: a max_cost_usd of %.4f is not above that", runID, f.spent.CostUSD, r.MaxCostUSD)
		}
		d.MaxCostUSD = r.MaxCostUSD
	}
	if (&assets.Budget{MaxTokens: d.MaxTokens, MaxCostUSD: d.MaxCostUSD}).Exhausted(f.spent.Tokens, f.spent.CostUSD) {
		return nil, refuse([]error{events.ErrInvalidRequest, ErrNotResumable},
			"run %s would stop again at once: %s; raise that bound too", runID, interpreter.SpentText(f.spent.Tokens, f.spent.CostUSD, d.MaxTokens, d.MaxCostUSD))
	}
	parents, err := waitingParents(ctx, log, f)
	if err != nil {
		return nil, err
	}
	if err := notRemoved(ctx, log, f, parents); err != nil {
		return nil, err
	}
	app, err := appendRaise(ctx, log, f, d)
	if err != nil {
		return nil, err
	}
	failpoint.Hit("resume-after-raise")
	if app.Duplicate {
		return nil, fmt.Errorf("%w: run %s was resumed by another request at the same moment", events.ErrConflict, runID)
	}
	res := &Raised{RunID: runID, Job: f.job, Seq: app.Seq, Data: d}
	// Each parent is reopened with the run below it. A crash in between
	// leaves a parent budget_exhausted; resuming it then reopens it with
	// its child (see above).
	child, childRaise := runID, d.Raise
	for _, p := range parents {
		pd := events.RunBudgetRaisedData{Raise: p.raises + 1, Tokens: p.spent.Tokens, CostUSD: p.spent.CostUSD,
			Requester: "run:" + child, ChildRunID: child, ChildRaise: childRaise}
		if p.budget != nil {
			pd.MaxTokens, pd.MaxCostUSD = p.budget.MaxTokens, p.budget.MaxCostUSD
		}
		if _, err := appendRaise(ctx, log, p, pd); err != nil {
			return nil, fmt.Errorf("reopening run %s, the parent of run %s: %w", p.id, child, err)
		}
		res.Parents = append(res.Parents, p.id)
		child, childRaise = p.id, pd.Raise
	}
	return res, nil
}

// notRemoved refuses a raise of a run, or of a parent reopened with it,
// that a log.removed record names: retention archived it and removes it
// from the log (its record is made before its purge, which a pass killed
// between the two finishes at its next), so a raise would go on from a
// history that is being taken away.
func notRemoved(ctx context.Context, log *events.Log, f *runFacts, parents []*runFacts) error {
	for _, r := range append([]*runFacts{f}, parents...) {
		rec, err := log.RemovalOf(ctx, r.id)
		if err != nil {
			return err
		}
		if rec != nil {
			return refuse([]error{events.ErrInvalidRequest, ErrNotResumable},
				"run %s was archived and removed from the log by retention (record %d, archive %s): it cannot be resumed; orbit replay --from-archive reads it",
				r.id, rec.Seq, rec.Archive)
		}
	}
	return nil
}

// waitingParents returns the runs above f, nearest first, that stopped
// because the run below them did and wait for it again once reopened. It
// refuses a run whose end a parent took without stopping with it, or took
// in a step that cannot wait for it again.
func waitingParents(ctx context.Context, log *events.Log, f *runFacts) ([]*runFacts, error) {
	var parents []*runFacts
	seen := map[string]bool{f.id: true}
	for cur := f; cur.parent != nil && cur.parent.RunID != "" && !seen[cur.parent.RunID]; {
		seen[cur.parent.RunID] = true
		p, err := readFacts(ctx, log, cur.parent.RunID)
		if err != nil {
			return nil, err
		}
		took, ok := p.tookEnd(cur.id, cur.last.Seq)
		if !ok {
			return parents, nil // it did not wait for this end: nothing to tell it
		}
		stop, stopped := p.stoppedBy()
		switch {
		case !stopped || stop.child != cur.id:
			return nil, refuse([]error{events.ErrInvalidRequest, ErrNotResumable},
				"run %s ended %s and its parent run %s took that end in step %s and went on (it is %s): resuming run %s alone cannot change what run %s did; orbit run retry %s runs it again",
				cur.id, events.StateBudgetExhausted, p.id, took.key, p.state, cur.id, p.id, p.id)
		case !stop.reusable():
			return nil, refuse([]error{events.ErrInvalidRequest, ErrNotResumable},
				"run %s stopped its parent run %s in step %s, inside a parallel, fan-out or loop step that runs again as a whole with a new child run: resume run %s instead (orbit run resume %s --max-tokens N | --max-cost-usd N)",
				cur.id, p.id, stop.key, p.id, p.id)
		}
		parents = append(parents, p)
		cur = p
	}
	return parents, nil
}

// appendRaise records run f's raise d, reopening the run.finished it ends
// on.
func appendRaise(ctx context.Context, log *events.Log, f *runFacts, d events.RunBudgetRaisedData) (events.Appended, error) {
	app, err := log.Append(ctx, events.Event{
		ID:       events.RunBudgetRaisedID(f.id, d.Raise),
		Type:     events.RunBudgetRaised,
		RunID:    f.id,
		Job:      f.job,
		ParentID: f.last.ID,
	}, d)
	if err != nil {
		return app, fmt.Errorf("recording the raise of run %s: %w", f.id, err)
	}
	return app, nil
}

// watchRaises admits every run whose budget is raised from now on, so that
// it goes on as soon as it has a slot. A run the engine still holds, ending
// as the raise arrives, is admitted again when it ends. The returned func stops
// watching and waits until it has; it may be called more than once.
func (o *Orchestrator) watchRaises(ctx context.Context) (func(), error) {
	return o.watchRuns(ctx, events.RunBudgetRaised, func(ev events.Event) { o.resume(ctx, ev.RunID) })
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
