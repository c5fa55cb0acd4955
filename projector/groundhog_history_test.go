package projector_test

import (
	"path/filepath"
	"strconv"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/projector"
)

// Strings planted in the audit-only parts of groundhogHistory: none of them
// may ever reach a task's memory.
const (
	plantedTurnText      = "PLANTED-TURN-TEXT"
	plantedToolUseID     = "toolu_PLANTED"
	plantedToolError     = "PLANTED-TOOL-ERROR"
	plantedVerifierOut   = "PLANTED-VERIFIER-OUTPUT"
	plantedClaimedResult = "PLANTED-CLAIMED-SUMMARY"
	plantedDenialReason  = "PLANTED-DENIAL"
	plantedScratchSHA    = "5c5c5c5PLANTED"
)

// taskAppender appends the events of one task.
type taskAppender struct {
	e    *env
	task string
}

func (e *env) forTask(task string) taskAppender { return taskAppender{e: e, task: task} }

func (a taskAppender) add(typ string, payload any) uint64 {
	a.e.t.Helper()
	return a.e.append(events.Event{Type: typ, TaskID: a.task}, payload)
}

func attempt(checkpoint string, n, day int) events.Attempt {
	return events.Attempt{Checkpoint: checkpoint, Attempt: n, Day: day}
}

// The plan texts of the histories.
const (
	planV1 = "1. cp-1: read the retry policy from config\n2. cp-2: back off exponentially\n"
	planV2 = "1. only: parse the grammar with a split rule\n"
)

// groundhogHistory appends a task's successful Groundhog run: checkpoint
// cp-1 committed at its first attempt (day 1: turns, tool calls, a side
// effect, the success verb, a passing verification, the commit and its
// grounding), then checkpoint cp-2 failing once (day 2: a tool call that
// errs, a denial, the success verb but a failing verification, the rewind
// and the verifier's failure report) and committed at its second attempt
// (day 3). It returns the sequence of the attempt.failed of day 2 and of
// the last event.
func (e *env) groundhogHistory(task, run string) (failed, last uint64) {
	e.t.Helper()
	a := e.forTask(task)
	cp1, cp2 := attempt("cp-1", 1, 1), attempt("cp-2", 1, 2)
	cp2again := attempt("cp-2", 2, 3)
	retryFile := events.SideEffect{Kind: "file_write", Target: "config/retry.yaml", Reversible: true}
	turn := func(at events.Attempt, n int, stop string, uses ...string) {
		a.add(events.GroundhogTurn, events.GroundhogTurnData{Attempt: at, Turn: events.AgentTurnData{
			Turn: n, Provider: "anthropic", Model: "claude-sonnet-4-5", StopReason: stop,
			Usage: events.TokenUsage{InputTokens: 1000 + int64(n), OutputTokens: 80, CacheReadTokens: 900},
			Text:  plantedTurnText + " of turn " + strconv.Itoa(n), ToolUses: uses,
		}})
	}

	a.add(events.TaskCreated, events.TaskCreatedData{Title: "Retry flaky uploads", Workspace: "/work/repo",
		Branch: "orbit/" + task, Plan: planV1, PlanVersion: 1, PlanDigest: "sha256:plan1"})
	a.add(events.TaskStatusChanged, events.TaskStatusChangedData{Status: events.TaskRunning, Reason: "a run took the task", RunID: run})
	a.add(events.GroundhogRunStarted, events.GroundhogRunStartedData{RunID: run, StepKey: "implement", Activity: "groundhog",
		PlanVersion: 1, Checkpoints: []string{"cp-1", "cp-2"}, Budgets: []int{3, 2}})

	// Day 1: checkpoint cp-1, committed.
	a.add(events.GroundhogAttempt, events.GroundhogAttemptData{Attempt: cp1, RunID: run, TaskBranch: "orbit/" + task,
		ScratchBranch: "groundhog/" + task + "/day-1", SnapshotRef: "refs/orbit/snapshots/" + task + "/day-1",
		PlanVersion: 1, Untracked: []string{"notes.txt"}})
	turn(cp1, 1, "tool_use", "fs.read")
	a.add(events.GroundhogToolCalled, events.GroundhogToolCalledData{Attempt: cp1, Call: events.ToolCalledData{
		Turn: 1, ToolUseID: plantedToolUseID + "_01", Name: "fs.read", InputDigest: "sha256:in1", InputSize: 40, ResultSize: 2048, DurationMS: 3}})
	turn(cp1, 2, "tool_use", "fs.write", "orbit.groundhog.side_effect")
	a.add(events.GroundhogToolCalled, events.GroundhogToolCalledData{Attempt: cp1, Call: events.ToolCalledData{
		Turn: 2, ToolUseID: plantedToolUseID + "_02", Name: "fs.write", InputDigest: "sha256:in2", InputSize: 300, ResultSize: 12, DurationMS: 5}})
	a.add(events.GroundhogSideEffect, events.GroundhogSideEffectData{Attempt: cp1, SideEffect: retryFile})
	turn(cp1, 3, "tool_use", "orbit.groundhog.checkpoint_success")
	a.add(events.GroundhogVerb, events.GroundhogVerbData{Attempt: cp1, Verb: "checkpoint_success",
		Summary: "Retry policy read from config/retry.yaml", SideEffects: []events.SideEffect{retryFile}})
	a.add(events.GroundhogVerification, events.GroundhogVerificationData{Attempt: cp1, Passed: true, Results: []events.CriterionResult{
		{Index: 0, Kind: "command", Outcome: "pass", Detail: "go test ./uploader/...", ExitCode: intp(0), Output: plantedVerifierOut + " ok uploader"},
		{Index: 1, Kind: "file_absent", Anti: true, Outcome: "pass", Detail: "debug.log is absent"},
	}})
	a.add(events.GroundhogCommitted, events.GroundhogCommittedData{Attempt: cp1, SHA: "c1c1c1c",
		Summary: "Retry policy read from config/retry.yaml", SideEffects: []events.SideEffect{retryFile}})
	a.add(events.GroundhogGrounding, events.GroundhogGroundingData{Attempt: cp1, SHA: "c1c1c1c", StateHash: "sha256:g1"})

	// Day 2: checkpoint cp-2 claims success and fails verification.
	a.add(events.GroundhogAttempt, events.GroundhogAttemptData{Attempt: cp2, RunID: run, TaskBranch: "orbit/" + task,
		ScratchBranch: "groundhog/" + task + "/day-2", SnapshotRef: "refs/orbit/snapshots/" + task + "/day-2", PlanVersion: 1})
	turn(cp2, 1, "tool_use", "shell.exec", "fs.write")
	a.add(events.GroundhogToolCalled, events.GroundhogToolCalledData{Attempt: cp2, Call: events.ToolCalledData{
		Turn: 1, ToolUseID: plantedToolUseID + "_03", Name: "shell.exec", InputDigest: "sha256:in3", InputSize: 25, ResultSize: 900,
		DurationMS: 1400, Error: plantedToolError + ": exit status 1"}})
	a.add(events.GroundhogToolDenied, events.GroundhogToolDeniedData{Attempt: cp2, Denial: events.ToolDeniedData{
		Turn: 1, ToolUseID: plantedToolUseID + "_04", Name: "fs.write", Reason: plantedDenialReason + ": .git is refused",
		Path: ".git/config", OnDenial: "continue"}})
	a.add(events.GroundhogVerb, events.GroundhogVerbData{Attempt: cp2, Verb: "checkpoint_success", Summary: plantedClaimedResult + ": backoff added"})
	a.add(events.GroundhogVerification, events.GroundhogVerificationData{Attempt: cp2, Passed: false, Results: []events.CriterionResult{
		{Index: 0, Kind: "command", Outcome: "fail", Detail: "go test ./uploader/...", ExitCode: intp(1), Output: plantedVerifierOut + " --- FAIL: TestBackoff"},
		{Index: 1, Kind: "file_absent", Anti: true, Outcome: "pass", Detail: "debug.log is absent"},
		{Index: 2, Kind: "command", Outcome: "skipped", Detail: "go vet ./...: skipped after a failure"},
	}})
	a.add(events.GroundhogRewound, events.GroundhogRewoundData{Attempt: cp2, ScratchBranch: "groundhog/" + task + "/day-2",
		ScratchSHA: plantedScratchSHA, Reason: "verification failed"})
	failed = a.add(events.GroundhogAttemptFailed, events.GroundhogAttemptFailedData{Attempt: cp2, Report: dayTwoReport()})

	// Day 3: checkpoint cp-2 again, committed.
	a.add(events.GroundhogAttempt, events.GroundhogAttemptData{Attempt: cp2again, RunID: run, TaskBranch: "orbit/" + task,
		ScratchBranch: "groundhog/" + task + "/day-3", SnapshotRef: "refs/orbit/snapshots/" + task + "/day-3", PlanVersion: 1})
	turn(cp2again, 1, "tool_use", "orbit.groundhog.checkpoint_success")
	a.add(events.GroundhogVerb, events.GroundhogVerbData{Attempt: cp2again, Verb: "checkpoint_success", Summary: "Exponential backoff with jitter"})
	a.add(events.GroundhogVerification, events.GroundhogVerificationData{Attempt: cp2again, Passed: true, Results: []events.CriterionResult{
		{Index: 0, Kind: "command", Outcome: "pass", Detail: "go test ./uploader/...", ExitCode: intp(0)},
		{Index: 1, Kind: "file_absent", Anti: true, Outcome: "pass", Detail: "debug.log is absent"},
		{Index: 2, Kind: "command", Outcome: "pass", Detail: "go vet ./...", ExitCode: intp(0)},
	}})
	a.add(events.GroundhogCommitted, events.GroundhogCommittedData{Attempt: cp2again, SHA: "c2c2c2c", Summary: "Exponential backoff with jitter"})
	a.add(events.GroundhogGrounding, events.GroundhogGroundingData{Attempt: cp2again, SHA: "c2c2c2c", PrevHash: "sha256:g1", StateHash: "sha256:g2"})
	a.add(events.GroundhogRunFinished, events.GroundhogRunFinishedData{RunID: run, State: events.GroundhogDone, Committed: 2})
	last = a.add(events.TaskStatusChanged, events.TaskStatusChangedData{Status: events.TaskDone, Reason: "every checkpoint committed", RunID: run})
	return failed, last
}

// dayTwoReport is the verifier's failure report of groundhogHistory's day 2.
func dayTwoReport() events.FailureReport {
	return events.FailureReport{Source: "verifier", WhatTried: "backoff added",
		WhatHappened:   "criterion 0 (command) failed: go test ./uploader/... exited 1",
		FailedCriteria: []string{"0: go test ./uploader/..."}}
}

// setbackHistory appends a task whose only checkpoint goes badly: its first
// attempt is interrupted by a crash and found open by the next run, its
// second ends with the failure verb, and the checkpoint is abandoned with
// its budget spent. The task is then unblocked, a run starts, and its plan
// changes under it: the run detects the drift. It returns the sequence of
// the task.status_changed to blocked and of the last event.
func (e *env) setbackHistory(task, run1, run2, run3 string) (blocked, last uint64) {
	e.t.Helper()
	a := e.forTask(task)
	day1, day2 := attempt("only", 1, 1), attempt("only", 2, 2)
	a.add(events.TaskCreated, events.TaskCreatedData{Title: "Parse the grammar", Workspace: "/work/parser",
		Branch: "orbit/" + task, Plan: "1. only: parse the grammar\n", PlanVersion: 1, PlanDigest: "sha256:g-plan1"})
	a.add(events.TaskStatusChanged, events.TaskStatusChangedData{Status: events.TaskRunning, RunID: run1})
	a.add(events.GroundhogRunStarted, events.GroundhogRunStartedData{RunID: run1, StepKey: "gh", PlanVersion: 1,
		Checkpoints: []string{"only"}, Budgets: []int{2}})
	a.add(events.GroundhogAttempt, events.GroundhogAttemptData{Attempt: day1, RunID: run1, TaskBranch: "orbit/" + task,
		ScratchBranch: "groundhog/" + task + "/day-1", SnapshotRef: "snap-1", PlanVersion: 1})
	a.add(events.GroundhogTurn, events.GroundhogTurnData{Attempt: day1, Turn: events.AgentTurnData{Turn: 1, Provider: "replay",
		Model: "replay-fixture", Fixture: "parser.json", FixtureTurn: 1, StopReason: "tool_use"}})

	// The engine died; the next run finds day 1 open.
	a.add(events.GroundhogRunStarted, events.GroundhogRunStartedData{RunID: run2, StepKey: "gh", PlanVersion: 1,
		Checkpoints: []string{"only"}, Budgets: []int{2}})
	a.add(events.GroundhogRewound, events.GroundhogRewoundData{Attempt: day1, ScratchBranch: "groundhog/" + task + "/day-1",
		ScratchSHA: "d1d1d1d", Reason: "interrupted"})
	a.add(events.GroundhogInterrupted, events.GroundhogInterruptedData{Attempt: day1, RunID: run2})

	a.add(events.GroundhogAttempt, events.GroundhogAttemptData{Attempt: day2, RunID: run2, TaskBranch: "orbit/" + task,
		ScratchBranch: "groundhog/" + task + "/day-2", SnapshotRef: "snap-2", PlanVersion: 1})
	a.add(events.GroundhogVerb, events.GroundhogVerbData{Attempt: day2, Verb: "checkpoint_failure",
		WhatTried: "one rule for both forms", WhatHappened: "the grammar is ambiguous", NextAttemptPlan: "split the rule"})
	a.add(events.GroundhogRewound, events.GroundhogRewoundData{Attempt: day2, ScratchBranch: "groundhog/" + task + "/day-2",
		ScratchSHA: "d2d2d2d", Reason: "the agent reported a failure"})
	a.add(events.GroundhogAttemptFailed, events.GroundhogAttemptFailedData{Attempt: day2, Report: setbackReport()})
	a.add(events.GroundhogAbandoned, events.GroundhogAbandonedData{Checkpoint: "only", Attempts: 2, Budget: 2})
	a.add(events.GroundhogRunFinished, events.GroundhogRunFinishedData{RunID: run2, State: events.GroundhogBlocked,
		Message: "checkpoint only: 2 of 2 attempts spent"})
	blocked = a.add(events.TaskStatusChanged, events.TaskStatusChangedData{Status: events.TaskBlocked, Reason: "budget spent", RunID: run2})

	// Unblocked; the plan changes while the next run works.
	a.add(events.TaskStatusChanged, events.TaskStatusChangedData{Status: events.TaskActive, Reason: "unblocked"})
	a.add(events.GroundhogRunStarted, events.GroundhogRunStartedData{RunID: run3, StepKey: "gh", PlanVersion: 1,
		Checkpoints: []string{"only"}, Budgets: []int{4}})
	a.add(events.TaskStatusChanged, events.TaskStatusChangedData{Status: events.TaskRunning, RunID: run3})
	a.add(events.TaskPlanChanged, events.TaskPlanChangedData{Plan: planV2, PlanVersion: 2, PlanDigest: "sha256:g-plan2"})
	a.add(events.GroundhogDrift, events.GroundhogDriftData{RunID: run3, PinnedVersion: 1, CurrentVersion: 2})
	a.add(events.GroundhogRunFinished, events.GroundhogRunFinishedData{RunID: run3, State: events.GroundhogDrifted, Message: "the plan changed"})
	last = a.add(events.TaskStatusChanged, events.TaskStatusChangedData{Status: events.TaskActive, Reason: "the plan changed", RunID: run3})
	return blocked, last
}

// setbackReport is the agent's failure report of setbackHistory's day 2.
func setbackReport() events.FailureReport {
	return events.FailureReport{Source: "agent", WhatTried: "one rule for both forms",
		WhatHappened: "the grammar is ambiguous", NextAttemptPlan: "split the rule"}
}

// viewsAt opens a views file rebuilt from e's log through seq, without
// running it: the views as they were after that event.
func (e *env) viewsAt(seq uint64) *projector.Projector {
	e.t.Helper()
	path := filepath.Join(e.t.TempDir(), "views.db")
	require.NoError(e.t, projector.Rebuild(e.ctx, e.log, path, seq))
	return e.open(projector.Config{Path: path})
}

// tm is the time of the event appended n-th in a fresh env.
func tm(n int) time.Time { return *at(n) }
