package projector

import (
	"log/slog"
	"slices"

	"github.com/orbitrun/orbit/events"
)

// groundhogRunFolds maps each event type the audit record knows to its
// fold; other types are skipped.
var groundhogRunFolds = foldTable[*groundhogRunBatch]{
	events.TaskCreated:            on((*groundhogRunBatch).taskCreated),
	events.GroundhogRunStarted:    on((*groundhogRunBatch).runStarted),
	events.GroundhogRunFinished:   on((*groundhogRunBatch).runFinished),
	events.GroundhogAttempt:       on((*groundhogRunBatch).attemptStarted),
	events.GroundhogTurn:          on((*groundhogRunBatch).turn),
	events.GroundhogUsage:         on((*groundhogRunBatch).usage),
	events.GroundhogToolCalled:    on((*groundhogRunBatch).toolCalled),
	events.GroundhogToolDenied:    on((*groundhogRunBatch).toolDenied),
	events.GroundhogSideEffect:    on((*groundhogRunBatch).sideEffect),
	events.GroundhogVerb:          on((*groundhogRunBatch).verb),
	events.GroundhogVerification:  on((*groundhogRunBatch).verification),
	events.GroundhogCommitted:     on((*groundhogRunBatch).committed),
	events.GroundhogRewound:       on((*groundhogRunBatch).rewound),
	events.GroundhogAttemptFailed: on((*groundhogRunBatch).attemptFailed),
	events.GroundhogInterrupted:   on((*groundhogRunBatch).interrupted),
	events.GroundhogAbandoned:     on((*groundhogRunBatch).abandoned),
	events.GroundhogDrift:         on((*groundhogRunBatch).drift),
	events.GroundhogGrounding:     on((*groundhogRunBatch).grounding),
	events.GroundhogApproved:      on((*groundhogRunBatch).approved),
	events.GroundhogRewoundTo:     on((*groundhogRunBatch).rewoundTo),
}

// groundhogRunBatch holds the task records and attempts one transaction
// touches, decoded, and writes each of them once in flush: the turns and
// tool calls of an attempt re-encode that attempt once per batch.
type groundhogRunBatch struct {
	log      *slog.Logger
	tasks    *batchCache[GroundhogRun]  // by task id
	attempts *batchCache[AttemptRecord] // by attemptKey
}

// taskCheckpoint returns the checkpoint of the task's record, adding it as
// pending when the record does not list it yet.
func taskCheckpoint(e *cached[GroundhogRun], id string) *CheckpointRecord {
	cps := e.rec.Checkpoints
	if i := slices.IndexFunc(cps, func(c CheckpointRecord) bool { return c.ID == id }); i >= 0 {
		return &cps[i]
	}
	e.rec.Checkpoints = append(cps, CheckpointRecord{ID: id, Status: CheckpointPending})
	e.dirty = true
	return &e.rec.Checkpoints[len(e.rec.Checkpoints)-1]
}

// taskRun returns the run of the task's record, adding it when a
// run.finished comes without its run.started.
func taskRun(e *cached[GroundhogRun], id string) *GroundhogRunRecord {
	runs := e.rec.Runs
	if i := slices.IndexFunc(runs, func(r GroundhogRunRecord) bool { return r.RunID == id }); i >= 0 {
		return &runs[i]
	}
	e.rec.Runs = append(runs, GroundhogRunRecord{RunID: id})
	return &e.rec.Runs[len(e.rec.Runs)-1]
}

// attempt returns the task's record and the attempt a decoded event names,
// loading the attempt or creating it: an event of an attempt whose start
// the log does not hold still gets recorded. Both are nil when the task
// was never created.
func (b *groundhogRunBatch) attempt(ev events.Event, a events.Attempt) (*cached[GroundhogRun], *cached[AttemptRecord], error) {
	e, err := existingTask(b.tasks, b.log, ev)
	if e == nil || err != nil {
		return nil, nil, err
	}
	at, err := b.attempts.get(attemptKey(ev.TaskID, a.Day))
	if err != nil {
		return nil, nil, err
	}
	if at.rec == nil {
		at.rec = &AttemptRecord{Checkpoint: a.Checkpoint, Attempt: a.Attempt, Day: a.Day, Outcome: AttemptOpen}
		at.dirty = true
		taskCheckpoint(e, a.Checkpoint)
	}
	return e, at, nil
}

func (b *groundhogRunBatch) taskCreated(ev events.Event, _ *events.TaskCreatedData) error {
	e, err := b.tasks.get(ev.TaskID)
	if err != nil || e.rec != nil {
		return err // a second task.created changes nothing
	}
	e.rec = &GroundhogRun{TaskID: ev.TaskID}
	e.dirty = true
	return nil
}

func (b *groundhogRunBatch) runStarted(ev events.Event, d *events.GroundhogRunStartedData) error {
	e, err := existingTask(b.tasks, b.log, ev)
	if e == nil || err != nil {
		return err
	}
	r := taskRun(e, d.RunID)
	r.StepKey, r.Activity, r.PlanVersion = d.StepKey, d.Activity, d.PlanVersion
	r.Checkpoints, r.Budgets = d.Checkpoints, d.Budgets
	if r.StartedAt == nil {
		r.StartedAt = eventTime(ev)
	}
	for i, id := range d.Checkpoints {
		c := taskCheckpoint(e, id)
		if i < len(d.Budgets) {
			c.Budget = d.Budgets[i]
		}
	}
	e.dirty = true
	return nil
}

func (b *groundhogRunBatch) runFinished(ev events.Event, d *events.GroundhogRunFinishedData) error {
	e, err := existingTask(b.tasks, b.log, ev)
	if e == nil || err != nil {
		return err
	}
	r := taskRun(e, d.RunID)
	r.State, r.Committed, r.Message = d.State, d.Committed, d.Message
	r.FinishedAt = eventTime(ev)
	e.dirty = true
	return nil
}

func (b *groundhogRunBatch) attemptStarted(ev events.Event, d *events.GroundhogAttemptData) error {
	e, at, err := b.attempt(ev, d.Attempt)
	if at == nil || err != nil {
		return err
	}
	r := at.rec
	r.RunID, r.TaskBranch, r.ScratchBranch, r.SnapshotRef = d.RunID, d.TaskBranch, d.ScratchBranch, d.SnapshotRef
	r.PlanVersion, r.Untracked, r.ReplayStart = d.PlanVersion, d.Untracked, d.ReplayStart
	if r.StartedAt == nil {
		r.StartedAt = eventTime(ev)
	}
	at.dirty = true
	taskCheckpoint(e, d.Checkpoint).Status = CheckpointActive
	e.dirty = true
	return nil
}

func (b *groundhogRunBatch) turn(ev events.Event, d *events.GroundhogTurnData) error {
	_, at, err := b.attempt(ev, d.Attempt)
	if at == nil || err != nil {
		return err
	}
	t := d.Turn
	at.rec.Turns = append(at.rec.Turns, TurnRecord{
		Turn: t.Turn, Provider: t.Provider, Model: t.Model, Fixture: t.Fixture, FixtureTurn: t.FixtureTurn,
		StopReason: t.StopReason, Usage: t.Usage, Text: t.Text, ToolUses: t.ToolUses, Response: t.Response,
		At: ev.Time.UTC(),
	})
	at.dirty = true
	return nil
}

func (b *groundhogRunBatch) usage(ev events.Event, d *events.GroundhogUsageData) error {
	_, at, err := b.attempt(ev, d.Attempt)
	if at == nil || err != nil {
		return err
	}
	at.rec.Sessions = append(at.rec.Sessions, SessionUsageRecord{Usage: d.Usage, CostUSD: d.CostUSD, UsageInTurns: d.UsageInTurns, At: ev.Time.UTC()})
	at.dirty = true
	return nil
}

func (b *groundhogRunBatch) toolCalled(ev events.Event, d *events.GroundhogToolCalledData) error {
	_, at, err := b.attempt(ev, d.Attempt)
	if at == nil || err != nil {
		return err
	}
	c := d.Call
	at.rec.ToolCalls = append(at.rec.ToolCalls, ToolCallRecord{
		Turn: c.Turn, ToolUseID: c.ToolUseID, Name: c.Name, AgentTool: c.AgentTool, InputDigest: c.InputDigest,
		InputSize: c.InputSize, ResultSize: c.ResultSize, DurationMS: c.DurationMS,
		Error: c.Error, Result: c.Result, At: ev.Time.UTC(),
	})
	at.dirty = true
	return nil
}

func (b *groundhogRunBatch) toolDenied(ev events.Event, d *events.GroundhogToolDeniedData) error {
	_, at, err := b.attempt(ev, d.Attempt)
	if at == nil || err != nil {
		return err
	}
	n := d.Denial
	at.rec.Denials = append(at.rec.Denials, DenialRecord{
		Turn: n.Turn, ToolUseID: n.ToolUseID, Name: n.Name, AgentTool: n.AgentTool, Reason: n.Reason, Path: n.Path,
		OnDenial: n.OnDenial, At: ev.Time.UTC(),
	})
	at.dirty = true
	return nil
}

func (b *groundhogRunBatch) sideEffect(ev events.Event, d *events.GroundhogSideEffectData) error {
	_, at, err := b.attempt(ev, d.Attempt)
	if at == nil || err != nil {
		return err
	}
	at.rec.SideEffects = append(at.rec.SideEffects, SideEffectRecord{SideEffect: d.SideEffect, At: ev.Time.UTC()})
	at.dirty = true
	return nil
}

func (b *groundhogRunBatch) verb(ev events.Event, d *events.GroundhogVerbData) error {
	_, at, err := b.attempt(ev, d.Attempt)
	if at == nil || err != nil {
		return err
	}
	at.rec.Verb = &VerbRecord{
		Verb: d.Verb, Summary: d.Summary, SideEffects: d.SideEffects, WhatTried: d.WhatTried,
		WhatHappened: d.WhatHappened, NextAttemptPlan: d.NextAttemptPlan, At: ev.Time.UTC(),
	}
	at.dirty = true
	return nil
}

func (b *groundhogRunBatch) verification(ev events.Event, d *events.GroundhogVerificationData) error {
	_, at, err := b.attempt(ev, d.Attempt)
	if at == nil || err != nil {
		return err
	}
	at.rec.Verifications = append(at.rec.Verifications, VerificationRecord{Passed: d.Passed, Results: d.Results, At: ev.Time.UTC()})
	at.dirty = true
	return nil
}

func (b *groundhogRunBatch) committed(ev events.Event, d *events.GroundhogCommittedData) error {
	e, at, err := b.attempt(ev, d.Attempt)
	if at == nil || err != nil {
		return err
	}
	at.rec.Commit = &CommitRecord{SHA: d.SHA, NoChange: d.NoChange, Summary: d.Summary, SideEffects: d.SideEffects, At: ev.Time.UTC()}
	closeAttempt(at, ev, AttemptCommitted)
	c := taskCheckpoint(e, d.Checkpoint)
	c.Status, c.SHA = CheckpointCommitted, d.SHA
	e.dirty = true
	return nil
}

func (b *groundhogRunBatch) rewound(ev events.Event, d *events.GroundhogRewoundData) error {
	_, at, err := b.attempt(ev, d.Attempt)
	if at == nil || err != nil {
		return err
	}
	at.rec.Rewind = &RewindRecord{ScratchBranch: d.ScratchBranch, ScratchSHA: d.ScratchSHA, Reason: d.Reason, At: ev.Time.UTC()}
	closeAttempt(at, ev, AttemptRewound)
	return nil
}

func (b *groundhogRunBatch) interrupted(ev events.Event, d *events.GroundhogInterruptedData) error {
	_, at, err := b.attempt(ev, d.Attempt)
	if at == nil || err != nil {
		return err
	}
	at.rec.InterruptedBy = d.RunID
	if d.AbandonedBy != "" {
		at.rec.Abandon = &AttemptAbandonRecord{By: d.AbandonedBy, Reason: d.Reason, Signer: d.AbandonSigner, WorkspaceKept: d.WorkspaceKept, At: ev.Time.UTC()}
		closeAttempt(at, ev, AttemptAbandoned)
		return nil
	}
	closeAttempt(at, ev, AttemptInterrupted)
	return nil
}

// closeAttempt records how the attempt ended. The first closing event sets
// EndedAt; a commit is final, and an interrupted or abandoned attempt,
// which is also rewound, stays interrupted or abandoned.
func closeAttempt(at *cached[AttemptRecord], ev events.Event, outcome string) {
	r := at.rec
	at.dirty = true
	if r.EndedAt == nil {
		r.EndedAt = eventTime(ev)
	}
	switch {
	case r.Outcome == AttemptCommitted:
	case (r.Outcome == AttemptInterrupted || r.Outcome == AttemptAbandoned) && outcome == AttemptRewound:
	default:
		r.Outcome = outcome
	}
}

func (b *groundhogRunBatch) attemptFailed(ev events.Event, d *events.GroundhogAttemptFailedData) error {
	_, at, err := b.attempt(ev, d.Attempt)
	if at == nil || err != nil {
		return err
	}
	report := d.Report
	at.rec.Failure = &report
	at.dirty = true
	return nil
}

func (b *groundhogRunBatch) abandoned(ev events.Event, d *events.GroundhogAbandonedData) error {
	e, err := existingTask(b.tasks, b.log, ev)
	if e == nil || err != nil {
		return err
	}
	c := taskCheckpoint(e, d.Checkpoint)
	c.Status = CheckpointAbandoned
	c.Abandoned = &AbandonRecord{Attempts: d.Attempts, Budget: d.Budget, At: ev.Time.UTC()}
	e.dirty = true
	return nil
}

func (b *groundhogRunBatch) drift(ev events.Event, d *events.GroundhogDriftData) error {
	e, err := existingTask(b.tasks, b.log, ev)
	if e == nil || err != nil {
		return err
	}
	e.rec.Drifts = append(e.rec.Drifts, DriftRecord{
		RunID: d.RunID, PinnedVersion: d.PinnedVersion, CurrentVersion: d.CurrentVersion, At: ev.Time.UTC(),
	})
	e.dirty = true
	return nil
}

func (b *groundhogRunBatch) grounding(ev events.Event, d *events.GroundhogGroundingData) error {
	e, err := existingTask(b.tasks, b.log, ev)
	if e == nil || err != nil {
		return err
	}
	e.rec.Groundings = append(e.rec.Groundings, GroundingRecord{
		Checkpoint: d.Checkpoint, Attempt: d.Attempt.Attempt, Day: d.Day,
		SHA: d.SHA, PrevHash: d.PrevHash, StateHash: d.StateHash, At: ev.Time.UTC(),
	})
	e.dirty = true
	return nil
}

// flush writes every changed task record and attempt once, in key order.
func (b *groundhogRunBatch) flush() error {
	if err := b.tasks.flush(); err != nil {
		return err
	}
	return b.attempts.flush()
}

func (b *groundhogRunBatch) approved(ev events.Event, d *events.GroundhogApprovedData) error {
	e, err := existingTask(b.tasks, b.log, ev)
	if e == nil || err != nil {
		return err
	}
	e.rec.Control = append(e.rec.Control, ControlRecord{Action: "approved", Ref: "refs/heads/" + d.TaskBranch,
		FromSHA: d.FromSHA, ToSHA: d.ToSHA, By: d.By, Signer: d.Signer, At: ev.Time.UTC()})
	e.dirty = true
	return nil
}

// rewoundTo records the rewind, and makes the rewound checkpoint and every
// later one pending again: the next run does them again.
func (b *groundhogRunBatch) rewoundTo(ev events.Event, d *events.GroundhogRewoundToData) error {
	e, err := existingTask(b.tasks, b.log, ev)
	if e == nil || err != nil {
		return err
	}
	e.rec.Control = append(e.rec.Control, ControlRecord{Action: "rewound", Checkpoint: d.Checkpoint, Ref: d.Ref,
		FromSHA: d.FromSHA, ToSHA: d.ToSHA, By: d.By, Signer: d.Signer, Reason: d.Reason, At: ev.Time.UTC()})
	cps := e.rec.Checkpoints
	if i := slices.IndexFunc(cps, func(c CheckpointRecord) bool { return c.ID == d.Checkpoint }); i >= 0 {
		for j := i; j < len(cps); j++ {
			cps[j].Status, cps[j].SHA, cps[j].Abandoned = CheckpointPending, "", nil
		}
	}
	e.dirty = true
	return nil
}
