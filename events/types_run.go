package events

import (
	"encoding/json"
	"time"
)

// Run event types: the life of a run and of its steps (DESIGN §3).
const (
	RunRequested       = "run.requested"
	RunQueued          = "run.queued"
	RunStarted         = "run.started"
	RunResumed         = "run.resumed"
	RunFinished        = "run.finished"
	RunCancelRequested = "run.cancel_requested"
	// RunBudgetExhausted is the interpreter's decision, before a step, that
	// the run's budget is spent: the run ends budget_exhausted.
	RunBudgetExhausted = "run.budget_exhausted"

	StepStarted        = "step.started"
	StepSkipped        = "step.skipped"
	StepRetryScheduled = "step.retry_scheduled"
	StepFinished       = "step.finished"
	StepDeadLettered   = "step.dead_lettered"

	ActivityStarted  = "activity.started"
	ActivityFinished = "activity.finished"
	ShellExited      = "shell.exited"
)

func init() {
	register(RunRequested, AggregateRun, RunRequestedData{})
	register(RunQueued, AggregateRun, RunQueuedData{})
	register(RunStarted, AggregateRun, RunStartedData{})
	register(RunResumed, AggregateRun, RunResumedData{})
	register(RunFinished, AggregateRun, RunFinishedData{})
	register(RunCancelRequested, AggregateRun, RunCancelRequestedData{})
	register(RunBudgetExhausted, AggregateRun, RunBudgetExhaustedData{})
	register(StepStarted, AggregateRun, StepStartedData{})
	register(StepSkipped, AggregateRun, StepSkippedData{})
	register(StepRetryScheduled, AggregateRun, StepRetryScheduledData{})
	register(StepFinished, AggregateRun, StepFinishedData{})
	register(StepDeadLettered, AggregateRun, StepDeadLetteredData{})
	register(ActivityStarted, AggregateRun, ActivityStartedData{})
	register(ActivityFinished, AggregateRun, ActivityFinishedData{})
	register(ShellExited, AggregateRun, ShellExitedData{})
}

// Terminal and intermediate states of runs and steps.
const (
	StatePending   = "pending"
	StateRunning   = "running"
	StateSuccess   = "success"
	StateFailed    = "failed"
	StateCancelled = "cancelled"
	StateTimeout   = "timeout"
	StateSkipped   = "skipped"
	// StateBudgetExhausted ends a run whose agents spent its budget
	// (DESIGN §8); a step an agent stopped for the budget ends so too.
	StateBudgetExhausted = "budget_exhausted"
)

// Terminal reports whether a run or step state is final.
func Terminal(state string) bool {
	switch state {
	case StateSuccess, StateFailed, StateCancelled, StateTimeout, StateSkipped, StateBudgetExhausted:
		return true
	}
	return false
}

// ErrorInfo is an error as the log records it: what kind of failure, the
// message a user reads, whether another attempt could help, and the step it
// came from.
type ErrorInfo struct {
	Kind      string `json:"kind"`
	Message   string `json:"message"`
	Retryable bool   `json:"retryable"`
	StepKey   string `json:"step_key,omitempty"`
}

// Error kinds.
const (
	KindActivity      = "activity"       // the activity failed (exit code, action failure)
	KindTimeout       = "timeout"        // the activity ran past its time limit
	KindValidation    = "validation"     // bad input or template found at run time
	KindUnknownAction = "unknown_action" // deterministic action that does not exist
	KindAllowlist     = "allowlist"      // program or tool outside its allowlist
	KindCancelled     = "cancelled"      // the run was cancelled
	KindStructural    = "structural"     // the job's shape cannot run
	KindInternal      = "internal"       // Orbit itself failed
	KindDeadLetter    = "dead_letter"    // the command could not be delivered
	KindToolDenied    = "tool_denied"    // an agent called a tool its policy refuses
	KindLimit         = "limit"          // a configured limit of the engine was reached
	KindIncomplete    = "incomplete"     // an agent ended without its completion record
	KindBudget        = "budget"         // the run's or task's budget is spent
	KindPaused        = "paused"         // stopped by orbit run pause --now: run again on unpause, no retry spent
)

// BlobRef names a blob in the orbit_blobs object store by its digest.
type BlobRef struct {
	Digest string `json:"digest"` // "sha256-<hex>"
	Size   int64  `json:"size"`
}

// RunLink points at the run and step that started a child run.
type RunLink struct {
	RunID   string `json:"run_id"`
	StepKey string `json:"step_key"`
}

// RunRequestedData pins what a run executes: the normalized job (validated
// before it was requested) and the merged input.
type RunRequestedData struct {
	JobName   string          `json:"job_name"`
	Job       json.RawMessage `json:"job"`
	Input     any             `json:"input"`
	Requester string          `json:"requester,omitempty"`
	// Signer is the identity that signed the request (see Signer); nil
	// for a run the engine started itself (a child run) and in runs
	// recorded before it was.
	Signer *Signer  `json:"signer,omitempty"`
	Parent *RunLink `json:"parent,omitempty"`
	// Depth is how many job.invoke steps lie between the run and the run
	// someone requested: 0 for that one, its parent's + 1 for a child.
	Depth int `json:"depth,omitempty"`
	// Root is that run someone requested, at the top of this run's chain
	// of job.invoke steps; empty for that run itself (and in runs recorded
	// before it was). engine.max_descendants counts the live runs below
	// one root.
	Root string `json:"root,omitempty"`
	// Env pins the values of the environment variables the job reads
	// ({{ env.NAME }}) that the requester had, secret-named ones excepted:
	// the run sees them whichever engine runs it, and a replay the same.
	Env map[string]string `json:"env,omitempty"`
	// RetryOf is the run this one retries (orbit run retry), From the
	// top-level step it runs again from: the steps before From return
	// RetryOf's recorded outputs (DESIGN §12).
	RetryOf string `json:"retry_of,omitempty"`
	From    string `json:"from,omitempty"`
	// RetrySteps says, for a retry with From, what the retry does with
	// each top-level step before From and why (DESIGN §12): the steps it
	// reuses are the only ones whose outcomes it takes over. Absent in
	// retries recorded before it was, which reuse every step before From.
	RetrySteps []RetryStep `json:"retry_steps,omitempty"`
	// Backend is what backend: auto resolved to in Job (http or cli); the
	// jobs the run invokes resolve theirs the same way. Empty in runs
	// recorded before it was: they resolve by the engine's runtime.backend.
	Backend string `json:"backend,omitempty"`
	// Traceparent is the W3C traceparent the caller requested the run
	// with: the run's span is its child, in its trace (see tracing).
	Traceparent string `json:"traceparent,omitempty"`
	// Routine names the routine and the tick a scheduled run fires for
	// (DESIGN §14); nil for a run someone requested.
	Routine *RoutineTick `json:"routine,omitempty"`
	// Bulk is the bulk operation (a selector of orbit run retry) that
	// requested this retry.
	Bulk string `json:"bulk,omitempty"`
	// Protocol is the step protocol the run records its steps by (see
	// StepProtocol); absent (0) in runs recorded before it was, which
	// record by protocol 1. A run keeps its protocol for good: an engine
	// that resumes it, or replays it, decides by the protocol it was
	// requested under.
	Protocol int `json:"protocol,omitempty"`
}

// StepProtocol is the version of the step protocol new runs record their
// steps by: which events a step of each construct writes, so which
// events a replay finds its decisions in (docs/architecture/runs.md, "The
// step protocol").
//
//   - 1: the protocol of every run recorded before run.requested named
//     one.
//   - 2: a fan-out item has no fanout.item event: the item's worker's
//     step.started is its first event.
//   - 3: a worker's step.finished carries the execution's outcome,
//     duration, worker and delivery, and no activity.finished is written;
//     activity.started is written only before an execution with effects
//     outside the log (every activity but a deterministic action not
//     marked External) and before any redelivered one.
//   - 4: a step of a pure built-in action (echo, fail,
//     pipeline_success_guard) whose config and input hold no secret is
//     decided by the orchestrator: it is one event, its step.finished,
//     which names the engine as its worker, has no delivery and carries
//     what its step.started would have (StepFinishedData.Started); no
//     step.started is written and no command is sent.
//     And (a fan-out item's input by reference) the fan-out's
//     step.started records its scope's input once, and the step.started
//     of a step whose input is its item's input as it is records an Item
//     reference instead of an Input (see ItemInput).
//   - 5: on an embedded store (one engine, so one worker) a command's
//     first execution has no activity.started, whatever its activity:
//     its step.started is in the log before it runs and its step.finished
//     names the worker and delivery. A possible repeat (a redelivered
//     command, or one the orchestrator sent again from the log) keeps
//     its activity.started{redelivered}; on a shared server nothing
//     changes from 4.
const StepProtocol = 5

// RoutineTick is the routine a run was started for and the tick of its
// schedule it fires for. Manual is set for orbit routine run-now, which
// fires outside the schedule (Tick is then when it was asked).
type RoutineTick struct {
	Name   string    `json:"name"`
	Tick   time.Time `json:"tick"`
	Manual bool      `json:"manual,omitempty"`
	// Missed is how many earlier ticks no engine fired: the run is the one
	// catch-up run of missed_run: catch_up_once.
	Missed int `json:"missed,omitempty"`
	// Retry is the retry attempt (policy.retries) this run is of the
	// tick, whose earlier run failed; 0 for the tick's first run.
	Retry int `json:"retry,omitempty"`
}

// RetryStep is what a retry with From does with one top-level step before
// From: reuse its recorded outcome, re-arm it (a wait gate, which waits for
// its signal again), or run it again; Reason says why in words.
type RetryStep struct {
	Step   string `json:"step"`
	Action string `json:"action"`
	Reason string `json:"reason"`
}

// RetryStep actions.
const (
	RetryReused  = "reused"
	RetryRearmed = "rearmed"
	RetryRerun   = "rerun"
)

// RunQueuedData records that a run waits because its job already has
// max_active_runs runs active.
type RunQueuedData struct {
	MaxActiveRuns int      `json:"max_active_runs"`
	Active        []string `json:"active"`
	// JobPaused: the run waits for its job's unpause (orbit job unpause).
	JobPaused bool `json:"job_paused,omitempty"`
}

// RunStartedData records that an engine took the run's lease and began it.
type RunStartedData struct {
	Engine string `json:"engine"`
}

// RunResumedData records that an engine took over a started run: after
// the engine that ran it stopped, or after a budget raise let it go on.
type RunResumedData struct {
	Engine string `json:"engine"`
	// Previous is the engine that started or last resumed the run (the
	// same as Engine when that engine resumes it again); Raise is the
	// budget raise (1, 2, …) that resumed it, 0 when an engine took it
	// over. Both are empty in runs recorded before they were.
	Previous string `json:"previous,omitempty"`
	Raise    int    `json:"raise,omitempty"`
}

// RunFinishedData is a run's terminal record.
type RunFinishedData struct {
	State      string     `json:"state"`
	Output     any        `json:"output,omitempty"`
	Error      *ErrorInfo `json:"error,omitempty"`
	DurationMS int64      `json:"duration_ms"`
}

// RunCancelRequestedData asks for a run to be cancelled.
type RunCancelRequestedData struct {
	Reason    string `json:"reason,omitempty"`
	Requester string `json:"requester,omitempty"`
	// Tree is the run whose tree cancel (orbit run cancel --tree) this is
	// part of: that run's, or one below it, whether asked for directly or
	// reached through a cancelled parent.
	Tree string `json:"tree,omitempty"`
	// Bulk is the bulk operation (a selector of orbit run cancel, or a
	// cancel --tree) this cancel was part of, itself or through a
	// cancelled parent.
	Bulk string `json:"bulk,omitempty"`
	// Signer signed the request (nil: the engine cancelled a child run
	// itself, or a cancel recorded before it was).
	Signer *Signer `json:"signer,omitempty"`
}

// StepStartedData records the start of one attempt of a step instance: the
// dispatch of an activity, or the start of a structural step (ActivityType
// parallel, fan_out or loop) or of a child job (ChildRunID).
type StepStartedData struct {
	Attempt      int    `json:"attempt"`
	ActivityType string `json:"activity_type"`
	Target       string `json:"target,omitempty"`
	Input        any    `json:"input,omitempty"`
	ChildRunID   string `json:"child_run_id,omitempty"`
	// ChildRaise is the raise of the child run whose end this attempt
	// waits for: set when the attempt waits again for a child that a
	// budget raise resumed (see RunBudgetRaisedData.ChildRunID).
	ChildRaise int `json:"child_raise,omitempty"`
	// Wait is set for a signal gate (ActivityType wait).
	Wait *WaitInfo `json:"wait,omitempty"`
	// Item, from step protocol 4 on, stands for Input in the step.started
	// of an activity step whose input is its fan-out item's input as it
	// is: Input is then absent, and the input is the fan-out's recorded
	// scope input with item set (see ItemInput).
	Item *ItemInput `json:"item,omitempty"`
}

// ItemInput is a fan-out item's input by reference: the input of the
// fan-out's scope, which the fan-out's step.started (Of) records once as
// the member "input" of its Input, with the member "item" set to Value
// (merged over an object input, or an object of its own when the input
// is not one). A fan-out of n items so records its list once, not n
// times.
type ItemInput struct {
	// Of is the id of the fan-out attempt's step.started.
	Of string `json:"of"`
	// Seq is that event's stream sequence (set in a nested fan-out's
	// step.started, where a worker reading its scope input reads on).
	Seq uint64 `json:"seq,omitempty"`
	// Index is the item's number, from 1, as in the item's step key.
	Index int `json:"index"`
	// Value is the item.
	Value any `json:"value"`
}

// FanOutScopeInput is the member of a fan-out's step.started Input (beside
// items and max_workers) that records, from step protocol 4 on, its
// scope's input: what its items' ItemInput references name. A fan-out
// whose scope is an item of another fan-out, as it is, records none: its
// step.started's Item names that item's input instead.
const FanOutScopeInput = "input"

// WithItem returns the input of a fan-out item whose scope's input is
// scope: item set over an object input, or an object of its own when the
// input is not one. It never changes scope (its members are shared).
func WithItem(scope, item any) map[string]any {
	m, _ := scope.(map[string]any)
	out := make(map[string]any, len(m)+1)
	for k, v := range m {
		out[k] = v
	}
	out["item"] = item
	return out
}

// StepSkippedData records a step whose `when` was false.
type StepSkippedData struct {
	Condition string `json:"condition"`
	// ReusedFrom names the run whose skip a retry took over.
	ReusedFrom string `json:"reused_from,omitempty"`
}

// Structural activity types, as step.started records them.
const (
	TypeParallel = "parallel"
	TypeFanOut   = "fan_out"
	TypeLoop     = "loop"
)

// StepRetryScheduledData records the wait before a step's next attempt.
type StepRetryScheduledData struct {
	Attempt   int       `json:"attempt"` // the attempt that will run after the wait
	DelayMS   int64     `json:"delay_ms"`
	NotBefore time.Time `json:"not_before"`
	Cause     ErrorInfo `json:"cause"`
}

// StepFinishedData is the result of one attempt of a step instance.
type StepFinishedData struct {
	Attempt    int        `json:"attempt"`
	State      string     `json:"state"`
	Output     any        `json:"output,omitempty"`
	Error      *ErrorInfo `json:"error,omitempty"`
	DurationMS int64      `json:"duration_ms"`
	// ReusedFrom names the run whose recorded output a retry returned for
	// this step instead of running it (orbit run retry --from).
	ReusedFrom string `json:"reused_from,omitempty"`
	// Worker and Delivery are set on the step.finished a worker writes
	// for an execution under step protocol 3 on (where activity.finished
	// is no longer written): the worker that ran it and the command's
	// delivery it ran on. Empty on a step.finished no execution wrote (a
	// structural step's, a skip, a dead letter, a reuse).
	Worker   string `json:"worker,omitempty"`
	Delivery int    `json:"delivery,omitempty"`
	// Started is set on the step.finished of a step the orchestrator
	// decided itself (from step protocol 4: a pure action, see
	// StepProtocol). Such a step has no step.started: its one event is
	// this, stored at once, and Started holds what its step.started would
	// have held (the activity type, the target, the input). Whoever
	// folds a step.started folds this first, with the event's time.
	Started *StepStartedData `json:"started,omitempty"`
}

// StepStart returns what ev records of the start of a step attempt: a
// step.started's data, or, for a step the orchestrator decided (step
// protocol 4), what its step.finished carries in its place. It is false
// for any other event, and for one that does not decode.
func StepStart(ev Event) (StepStartedData, bool) {
	switch ev.Type {
	case StepStarted:
		var d StepStartedData
		return d, ev.Decode(&d) == nil
	case StepFinished:
		var d StepFinishedData
		if ev.Decode(&d) != nil || d.Started == nil {
			return StepStartedData{}, false
		}
		return *d.Started, true
	}
	return StepStartedData{}, false
}

// StepDeadLetteredData records that a step attempt's command was started
// Deliveries times without finishing and was removed: the attempt failed.
type StepDeadLetteredData struct {
	Attempt    int    `json:"attempt"`
	Deliveries int    `json:"deliveries"`
	Command    string `json:"command"`
}

// ActivityStartedData records that a worker began executing an attempt.
// Under step protocols 1 and 2 every execution has one; from 3 on only
// one with effects outside the log, or a redelivered one, and from 5 on,
// on an embedded store, only a redelivered one (see StepProtocol).
// Redelivered means the command may have been delivered before — to this
// engine before a restart or to another, or sent again from the log
// (interpreter.StepCommand.Resent) — so an earlier delivery may have run
// part of the activity.
type ActivityStartedData struct {
	Attempt      int    `json:"attempt"`
	ActivityType string `json:"activity_type"`
	Worker       string `json:"worker"`
	Delivery     int    `json:"delivery"`
	Redelivered  bool   `json:"redelivered,omitempty"`
}

// ActivityFinishedData records that a worker finished executing an
// attempt: written under step protocols 1 and 2 only, step.finished
// carries the same from 3 on.
type ActivityFinishedData struct {
	Attempt    int        `json:"attempt"`
	State      string     `json:"state"`
	DurationMS int64      `json:"duration_ms"`
	Error      *ErrorInfo `json:"error,omitempty"`
}

// OutputStream is captured process output: an inline preview and, when the
// output is larger than the preview, the whole of it as a blob.
type OutputStream struct {
	Preview   string   `json:"preview"`
	Size      int64    `json:"size"`
	Truncated bool     `json:"truncated,omitempty"`
	Blob      *BlobRef `json:"blob,omitempty"`
}

// ShellExitedData records how a shell activity's process ended.
type ShellExitedData struct {
	Attempt  int          `json:"attempt"`
	Program  string       `json:"program"`
	Args     []string     `json:"args,omitempty"`
	PID      int          `json:"pid"`
	ExitCode int          `json:"exit_code"`
	Signal   string       `json:"signal,omitempty"`
	TimedOut bool         `json:"timed_out,omitempty"`
	Stdout   OutputStream `json:"stdout"`
	Stderr   OutputStream `json:"stderr"`
	// Sandbox is how a step of an activity with sandbox: agent ran, as a
	// CLI invocation records it ("mount-namespace", or "none" where the
	// machine has no sandbox); empty for any other step.
	Sandbox string `json:"sandbox,omitempty"`
	// Unenforced is what the sandbox did not keep the step from
	// (sandbox.Unenforced), as on cli.invocation.started.
	Unenforced string `json:"unenforced,omitempty"`
}

// RunBudgetExhaustedData records the decision that a run's budget is spent:
// what was spent when the interpreter looked, before step Before, against
// which bounds. Its id is derived from the run and Before, so a replay
// reads the decision back rather than summing usage that came later.
type RunBudgetExhaustedData struct {
	Before     string  `json:"before"`
	Tokens     int64   `json:"tokens"`
	CostUSD    float64 `json:"cost_usd,omitempty"`
	MaxTokens  int64   `json:"max_tokens,omitempty"`
	MaxCostUSD float64 `json:"max_cost_usd,omitempty"`
}
