package events

// Groundhog event types, stored under orbit.events.task.<task>.groundhog.*.
// Every event of an attempt names the checkpoint and the day (the task-wide
// attempt number that names the scratch branch groundhog/<task>/day-<n>).
const (
	GroundhogRunStarted    = "groundhog.run.started"
	GroundhogRunFinished   = "groundhog.run.finished"
	GroundhogRunWaiting    = "groundhog.run.waiting"
	GroundhogAttempt       = "groundhog.attempt.started"
	GroundhogTurn          = "groundhog.agent.turn"
	GroundhogToolCalled    = "groundhog.tool.called"
	GroundhogToolDenied    = "groundhog.tool.denied"
	GroundhogSideEffect    = "groundhog.side_effect"
	GroundhogVerb          = "groundhog.verb"
	GroundhogVerification  = "groundhog.verification"
	GroundhogCommitted     = "groundhog.committed"
	GroundhogRewound       = "groundhog.rewound"
	GroundhogAttemptFailed = "groundhog.attempt.failed"
	GroundhogInterrupted   = "groundhog.interrupted"
	GroundhogAbandoned     = "groundhog.abandoned"
	GroundhogDrift         = "groundhog.drift_detected"
	GroundhogGrounding     = "groundhog.grounding"
	// GroundhogBudgetSpent records the decision, before an attempt, that
	// the task's budget is spent.
	GroundhogBudgetSpent = "groundhog.budget_exhausted"
	// GroundhogBaseline records criteria a verification failed, run again
	// on the attempt's base snapshot (added in the third version; a log
	// without it replays as it did).
	GroundhogBaseline = "groundhog.baseline"
)

func init() {
	register(GroundhogRunStarted, AggregateTask, GroundhogRunStartedData{})
	register(GroundhogRunFinished, AggregateTask, GroundhogRunFinishedData{})
	register(GroundhogRunWaiting, AggregateTask, GroundhogRunWaitingData{})
	register(GroundhogAttempt, AggregateTask, GroundhogAttemptData{})
	register(GroundhogTurn, AggregateTask, GroundhogTurnData{})
	register(GroundhogToolCalled, AggregateTask, GroundhogToolCalledData{})
	register(GroundhogToolDenied, AggregateTask, GroundhogToolDeniedData{})
	register(GroundhogSideEffect, AggregateTask, GroundhogSideEffectData{})
	register(GroundhogVerb, AggregateTask, GroundhogVerbData{})
	register(GroundhogVerification, AggregateTask, GroundhogVerificationData{})
	register(GroundhogCommitted, AggregateTask, GroundhogCommittedData{})
	register(GroundhogRewound, AggregateTask, GroundhogRewoundData{})
	register(GroundhogAttemptFailed, AggregateTask, GroundhogAttemptFailedData{})
	register(GroundhogInterrupted, AggregateTask, GroundhogInterruptedData{})
	register(GroundhogAbandoned, AggregateTask, GroundhogAbandonedData{})
	register(GroundhogDrift, AggregateTask, GroundhogDriftData{})
	register(GroundhogGrounding, AggregateTask, GroundhogGroundingData{})
	register(GroundhogBudgetSpent, AggregateTask, GroundhogBudgetSpentData{})
	register(GroundhogBaseline, AggregateTask, GroundhogBaselineData{})
}

// States a Groundhog run ends in.
const (
	GroundhogDone      = "done"      // every checkpoint committed
	GroundhogBlocked   = "blocked"   // a checkpoint's budget was spent
	GroundhogDrifted   = "drifted"   // the plan changed under the run
	GroundhogFailed    = "failed"    // Orbit or git failed; the workspace is clean
	GroundhogCancelled = "cancelled" // the run was cancelled
	// GroundhogBudgetExhausted: the task's budget was spent before an attempt.
	GroundhogBudgetExhausted = "budget_exhausted"
	// GroundhogBaselineRed: a criterion the attempt failed fails on the
	// base snapshot too; the checkpoint holds, no attempt spent, until
	// the base changes.
	GroundhogBaselineRed = "baseline_red"
)

// BaselineCheck is one criterion run on a base snapshot: Key identifies
// the criterion (its digest), Result is what it gave there.
type BaselineCheck struct {
	Key    string          `json:"key"`
	Result CriterionResult `json:"result"`
}

// GroundhogBaselineData records criteria that failed an attempt's
// verification, run on the commit the attempt started from (BaseSHA).
// Red lists the indexes (of the verification's results) that fail on the
// base too, among criteria without fixes_baseline; a non-empty Red holds
// the checkpoint as baseline_red. Checks are the cache: a criterion is
// run on one base commit once, whatever the attempts or engines.
type GroundhogBaselineData struct {
	Attempt
	BaseSHA string          `json:"base_sha"`
	Checks  []BaselineCheck `json:"checks"`
	Red     []int           `json:"red,omitempty"`
}

// GroundhogRunWaitingData records that a Groundhog run waits for its
// workspace, which another run holds: one Groundhog run works in a
// repository at a time.
type GroundhogRunWaitingData struct {
	RunID     string `json:"run_id"`
	Workspace string `json:"workspace"`
	HeldBy    string `json:"held_by"` // who holds it, as the lock says
}

// Attempt identifies an attempt in every event about it.
type Attempt struct {
	Checkpoint string `json:"checkpoint"`
	Attempt    int    `json:"attempt"` // 1-based within the checkpoint
	Day        int    `json:"day"`     // 1-based within the task
}

// SideEffect is what an agent declared it did beyond its edits, with the
// orbit.groundhog.side_effect verb or in checkpoint_success.
type SideEffect struct {
	Kind       string `json:"kind"` // file_write | file_delete | git_commit | db_mutation | other
	Target     string `json:"target"`
	Reversible bool   `json:"reversible"`
}

// FailureReport is what the next attempt of a checkpoint learns about the
// last one: the agent's own account, or the verifier's, or that the
// attempt ended without a verdict.
type FailureReport struct {
	Source          string   `json:"source"` // agent | verifier | synthetic | interrupted | infrastructure | abandoned
	WhatTried       string   `json:"what_tried,omitempty"`
	WhatHappened    string   `json:"what_happened"`
	NextAttemptPlan string   `json:"next_attempt_plan,omitempty"`
	FailedCriteria  []string `json:"failed_criteria,omitempty"`
}

// GroundhogRunStartedData records a run taking on a task, and the plan
// version it pins.
type GroundhogRunStartedData struct {
	RunID       string   `json:"run_id"`
	StepKey     string   `json:"step_key"`
	Activity    string   `json:"activity,omitempty"`
	PlanVersion int      `json:"plan_version"`
	Checkpoints []string `json:"checkpoints"`
	Budgets     []int    `json:"budgets"` // attempt budget of each checkpoint, in order
}

// GroundhogRunFinishedData records how a run left the task.
type GroundhogRunFinishedData struct {
	RunID     string `json:"run_id"`
	State     string `json:"state"`
	Committed int    `json:"committed"` // checkpoints committed, in all runs
	Message   string `json:"message,omitempty"`
}

// GroundhogAttemptData records the start of an attempt on a clean snapshot.
type GroundhogAttemptData struct {
	Attempt
	RunID         string   `json:"run_id"`
	TaskBranch    string   `json:"task_branch"`
	ScratchBranch string   `json:"scratch_branch"`
	SnapshotRef   string   `json:"snapshot_ref"`
	PlanVersion   int      `json:"plan_version"`
	Untracked     []string `json:"untracked,omitempty"` // untracked files before the attempt, never absorbed
	ReplayStart   int      `json:"replay_start,omitempty"`
}

// GroundhogTurnData is a model turn of an attempt.
type GroundhogTurnData struct {
	Attempt
	Turn AgentTurnData `json:"turn"`
}

// GroundhogToolCalledData is a tool call of an attempt.
type GroundhogToolCalledData struct {
	Attempt
	Call ToolCalledData `json:"call"`
}

// GroundhogToolDeniedData is a refused tool call of an attempt.
type GroundhogToolDeniedData struct {
	Attempt
	Denial ToolDeniedData `json:"denial"`
}

// GroundhogSideEffectData records a side effect the agent declared.
type GroundhogSideEffectData struct {
	Attempt
	SideEffect
}

// GroundhogVerbData records the terminal verb that closed an attempt's
// session: checkpoint_success or checkpoint_failure, with what it said.
type GroundhogVerbData struct {
	Attempt
	Verb            string       `json:"verb"`
	Summary         string       `json:"summary,omitempty"`
	SideEffects     []SideEffect `json:"side_effects,omitempty"`
	WhatTried       string       `json:"what_tried,omitempty"`
	WhatHappened    string       `json:"what_happened,omitempty"`
	NextAttemptPlan string       `json:"next_attempt_plan,omitempty"`
}

// CriterionResult is one criterion as the verifier found it.
type CriterionResult struct {
	Index    int    `json:"index"`
	Kind     string `json:"kind"`
	Anti     bool   `json:"anti,omitempty"`
	Outcome  string `json:"outcome"` // pass | fail | skipped
	Detail   string `json:"detail"`
	ExitCode *int   `json:"exit_code,omitempty"`
	Output   string `json:"output,omitempty"` // capped at 4 KiB
	// Sandbox is how a command criterion ran (sandbox.ModeMountNamespace
	// or ModeNone), as on cli.invocation.started; empty for the others
	// and for an engine that gave the verifier no policy.
	Sandbox string `json:"sandbox,omitempty"`
}

// GroundhogVerificationData records one run of the verifier, pass or fail.
type GroundhogVerificationData struct {
	Attempt
	Passed  bool              `json:"passed"`
	Results []CriterionResult `json:"results"`
}

// GroundhogCommittedData records a checkpoint's success: one squash commit
// on the task branch (or none, when the attempt changed nothing).
type GroundhogCommittedData struct {
	Attempt
	SHA         string       `json:"sha"`
	NoChange    bool         `json:"no_change,omitempty"`
	Summary     string       `json:"summary"`
	SideEffects []SideEffect `json:"side_effects,omitempty"`
	// HeldRef is set when the commit was held for approval: it landed on
	// this ref (refs/orbit/groundhog/<task>), not on the task branch.
	HeldRef string `json:"held_ref,omitempty"`
}

// GroundhogRewoundData records that an attempt's work was captured on its
// scratch branch and the workspace reset to the snapshot.
type GroundhogRewoundData struct {
	Attempt
	ScratchBranch string `json:"scratch_branch"`
	ScratchSHA    string `json:"scratch_sha"`
	Reason        string `json:"reason"`
}

// GroundhogAttemptFailedData records the failure report of an attempt.
type GroundhogAttemptFailedData struct {
	Attempt
	Report FailureReport `json:"report"`
}

// GroundhogInterruptedData records an attempt that ended without being the
// agent's failure: found open after a crash, stopped by an infrastructure
// error, or abandoned by a person (`orbit groundhog abandon`). It spends
// none of the checkpoint's budget, and it closes the attempt.
//
// AbandonedBy, Reason and WorkspaceKept were added for abandons (events
// recorded before have none of them, and decode unchanged): who abandoned
// the attempt and why, and whether the task branch and workspace were not
// reset (someone had committed on the task branch under the attempt, so a
// rewind would have been refused) instead of rewound.
type GroundhogInterruptedData struct {
	Attempt
	RunID         string `json:"run_id"`
	AbandonedBy   string `json:"abandoned_by,omitempty"`
	Reason        string `json:"reason,omitempty"`
	WorkspaceKept bool   `json:"workspace_kept,omitempty"`
	// AbandonSigner signed the abandon (nil: not an abandon, or one
	// recorded before it was).
	AbandonSigner *Signer `json:"abandon_signer,omitempty"`
}

// GroundhogAbandonedData records a checkpoint whose budget was spent.
type GroundhogAbandonedData struct {
	Checkpoint string `json:"checkpoint"`
	Attempts   int    `json:"attempts"`
	Budget     int    `json:"budget"`
}

// GroundhogDriftData records that the task's plan changed under a run.
type GroundhogDriftData struct {
	RunID          string `json:"run_id"`
	PinnedVersion  int    `json:"pinned_version"`
	CurrentVersion int    `json:"current_version"`
}

// GroundhogGroundingData is the post-commit grounding record: the commit
// and a hash chained from the previous record, so an auditor can recompute
// the chain from the task's events.
type GroundhogGroundingData struct {
	Attempt
	SHA       string `json:"sha"`
	PrevHash  string `json:"prev_hash"`
	StateHash string `json:"state_hash"`
}

// GroundhogBudgetSpentData records that a task's budget was found spent
// before the next attempt of Checkpoint, under plan version PlanVersion:
// what the task's attempts had spent and the bounds. Its id is derived
// from the task and the plan version, so the decision is recorded once per
// budget.
type GroundhogBudgetSpentData struct {
	RunID       string  `json:"run_id"`
	PlanVersion int     `json:"plan_version"`
	Checkpoint  string  `json:"checkpoint"`
	Tokens      int64   `json:"tokens"`
	CostUSD     float64 `json:"cost_usd,omitempty"`
	MaxTokens   int64   `json:"max_tokens,omitempty"`
	MaxCostUSD  float64 `json:"max_cost_usd,omitempty"`
}
