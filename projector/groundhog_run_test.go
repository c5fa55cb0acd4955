package projector_test

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/projector"
)

func turnRecord(n, seq int, uses ...string) projector.TurnRecord {
	return projector.TurnRecord{Turn: n, Provider: "anthropic", Model: "claude-sonnet-4-5", StopReason: "tool_use",
		Usage: events.TokenUsage{InputTokens: 1000 + int64(n), OutputTokens: 80, CacheReadTokens: 900},
		Text:  plantedTurnText + " of turn " + strconv.Itoa(n), ToolUses: uses, At: tm(seq)}
}

func TestGroundhogRunRecordsEveryAttempt(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	run := runID(7)
	_, last := e.groundhogHistory("T-7", run)
	p := e.running(projector.Config{}, last)

	retryFile := events.SideEffect{Kind: "file_write", Target: "config/retry.yaml", Reversible: true}
	day1 := projector.AttemptRecord{
		Checkpoint: "cp-1", Attempt: 1, Day: 1,
		RunID: run, TaskBranch: "orbit/T-7", ScratchBranch: "groundhog/T-7/day-1",
		SnapshotRef: "refs/orbit/snapshots/T-7/day-1", PlanVersion: 1, Untracked: []string{"notes.txt"},
		StartedAt: at(4), EndedAt: at(13), Outcome: projector.AttemptCommitted,
		Turns: []projector.TurnRecord{
			turnRecord(1, 5, "fs.read"),
			turnRecord(2, 7, "fs.write", "orbit.groundhog.side_effect"),
			turnRecord(3, 10, "orbit.groundhog.checkpoint_success"),
		},
		ToolCalls: []projector.ToolCallRecord{
			{Turn: 1, ToolUseID: plantedToolUseID + "_01", Name: "fs.read", InputDigest: "sha256:in1", InputSize: 40, ResultSize: 2048, DurationMS: 3, At: tm(6)},
			{Turn: 2, ToolUseID: plantedToolUseID + "_02", Name: "fs.write", InputDigest: "sha256:in2", InputSize: 300, ResultSize: 12, DurationMS: 5, At: tm(8)},
		},
		SideEffects: []projector.SideEffectRecord{{SideEffect: retryFile, At: tm(9)}},
		Verb: &projector.VerbRecord{Verb: "checkpoint_success", Summary: "Retry policy read from config/retry.yaml",
			SideEffects: []events.SideEffect{retryFile}, At: tm(11)},
		Verifications: []projector.VerificationRecord{{Passed: true, At: tm(12), Results: []events.CriterionResult{
			{Index: 0, Kind: "command", Outcome: "pass", Detail: "go test ./uploader/...", ExitCode: intp(0), Output: plantedVerifierOut + " ok uploader"},
			{Index: 1, Kind: "file_absent", Anti: true, Outcome: "pass", Detail: "debug.log is absent"},
		}}},
		Commit: &projector.CommitRecord{SHA: "c1c1c1c", Summary: "Retry policy read from config/retry.yaml",
			SideEffects: []events.SideEffect{retryFile}, At: tm(13)},
	}
	report := dayTwoReport()
	day2 := projector.AttemptRecord{
		Checkpoint: "cp-2", Attempt: 1, Day: 2,
		RunID: run, TaskBranch: "orbit/T-7", ScratchBranch: "groundhog/T-7/day-2",
		SnapshotRef: "refs/orbit/snapshots/T-7/day-2", PlanVersion: 1,
		StartedAt: at(15), EndedAt: at(21), Outcome: projector.AttemptRewound,
		Turns: []projector.TurnRecord{turnRecord(1, 16, "shell.exec", "fs.write")},
		ToolCalls: []projector.ToolCallRecord{{Turn: 1, ToolUseID: plantedToolUseID + "_03", Name: "shell.exec",
			InputDigest: "sha256:in3", InputSize: 25, ResultSize: 900, DurationMS: 1400, Error: plantedToolError + ": exit status 1", At: tm(17)}},
		Denials: []projector.DenialRecord{{Turn: 1, ToolUseID: plantedToolUseID + "_04", Name: "fs.write",
			Reason: plantedDenialReason + ": .git is refused", Path: ".git/config", OnDenial: "continue", At: tm(18)}},
		Verb: &projector.VerbRecord{Verb: "checkpoint_success", Summary: plantedClaimedResult + ": backoff added", At: tm(19)},
		Verifications: []projector.VerificationRecord{{Passed: false, At: tm(20), Results: []events.CriterionResult{
			{Index: 0, Kind: "command", Outcome: "fail", Detail: "go test ./uploader/...", ExitCode: intp(1), Output: plantedVerifierOut + " --- FAIL: TestBackoff"},
			{Index: 1, Kind: "file_absent", Anti: true, Outcome: "pass", Detail: "debug.log is absent"},
			{Index: 2, Kind: "command", Outcome: "skipped", Detail: "go vet ./...: skipped after a failure"},
		}}},
		Rewind:  &projector.RewindRecord{ScratchBranch: "groundhog/T-7/day-2", ScratchSHA: plantedScratchSHA, Reason: "verification failed", At: tm(21)},
		Failure: &report,
	}
	day3 := projector.AttemptRecord{
		Checkpoint: "cp-2", Attempt: 2, Day: 3,
		RunID: run, TaskBranch: "orbit/T-7", ScratchBranch: "groundhog/T-7/day-3",
		SnapshotRef: "refs/orbit/snapshots/T-7/day-3", PlanVersion: 1,
		StartedAt: at(23), EndedAt: at(27), Outcome: projector.AttemptCommitted,
		Turns: []projector.TurnRecord{turnRecord(1, 24, "orbit.groundhog.checkpoint_success")},
		Verb:  &projector.VerbRecord{Verb: "checkpoint_success", Summary: "Exponential backoff with jitter", At: tm(25)},
		Verifications: []projector.VerificationRecord{{Passed: true, At: tm(26), Results: []events.CriterionResult{
			{Index: 0, Kind: "command", Outcome: "pass", Detail: "go test ./uploader/...", ExitCode: intp(0)},
			{Index: 1, Kind: "file_absent", Anti: true, Outcome: "pass", Detail: "debug.log is absent"},
			{Index: 2, Kind: "command", Outcome: "pass", Detail: "go vet ./...", ExitCode: intp(0)},
		}}},
		Commit: &projector.CommitRecord{SHA: "c2c2c2c", Summary: "Exponential backoff with jitter", At: tm(27)},
	}

	got, err := p.GroundhogRun(e.ctx, "T-7")
	require.NoError(t, err)
	assert.Equal(t, &projector.GroundhogRun{
		TaskID: "T-7",
		Runs: []projector.GroundhogRunRecord{{
			RunID: run, StepKey: "implement", Activity: "groundhog", PlanVersion: 1,
			Checkpoints: []string{"cp-1", "cp-2"}, Budgets: []int{3, 2},
			StartedAt: at(3), FinishedAt: at(29), State: events.GroundhogDone, Committed: 2,
		}},
		Checkpoints: []projector.CheckpointRecord{
			{ID: "cp-1", Status: projector.CheckpointCommitted, Budget: 3, SHA: "c1c1c1c", Attempts: []projector.AttemptRecord{day1}},
			{ID: "cp-2", Status: projector.CheckpointCommitted, Budget: 2, SHA: "c2c2c2c", Attempts: []projector.AttemptRecord{day2, day3}},
		},
		Groundings: []projector.GroundingRecord{
			{Checkpoint: "cp-1", Attempt: 1, Day: 1, SHA: "c1c1c1c", StateHash: "sha256:g1", At: tm(14)},
			{Checkpoint: "cp-2", Attempt: 2, Day: 3, SHA: "c2c2c2c", PrevHash: "sha256:g1", StateHash: "sha256:g2", At: tm(28)},
		},
	}, got)

	// While checkpoint 2 is being retried, it is active and its second
	// attempt open.
	mid, err := e.viewsAt(23).GroundhogRun(e.ctx, "T-7")
	require.NoError(t, err)
	require.Len(t, mid.Checkpoints, 2)
	assert.Equal(t, projector.CheckpointActive, mid.Checkpoints[1].Status)
	require.Len(t, mid.Checkpoints[1].Attempts, 2)
	assert.Equal(t, projector.AttemptOpen, mid.Checkpoints[1].Attempts[1].Outcome)
	assert.Nil(t, mid.Checkpoints[1].Attempts[1].EndedAt)
	assert.Empty(t, mid.Runs[0].State)
}

func TestGroundhogRunRecordsSetbacks(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	run1, run2, run3 := runID(1), runID(2), runID(3)
	_, last := e.setbackHistory("T-12", run1, run2, run3)
	p := e.running(projector.Config{}, last)

	agentReport := setbackReport()
	got, err := p.GroundhogRun(e.ctx, "T-12")
	require.NoError(t, err)
	assert.Equal(t, &projector.GroundhogRun{
		TaskID: "T-12",
		Runs: []projector.GroundhogRunRecord{
			{RunID: run1, StepKey: "gh", PlanVersion: 1, Checkpoints: []string{"only"}, Budgets: []int{2}, StartedAt: at(3)},
			{RunID: run2, StepKey: "gh", PlanVersion: 1, Checkpoints: []string{"only"}, Budgets: []int{2}, StartedAt: at(6),
				FinishedAt: at(14), State: events.GroundhogBlocked, Message: "checkpoint only: 2 of 2 attempts spent"},
			{RunID: run3, StepKey: "gh", PlanVersion: 1, Checkpoints: []string{"only"}, Budgets: []int{4}, StartedAt: at(17),
				FinishedAt: at(21), State: events.GroundhogDrifted, Message: "the plan changed"},
		},
		Checkpoints: []projector.CheckpointRecord{{
			ID: "only", Status: projector.CheckpointAbandoned, Budget: 4,
			Abandoned: &projector.AbandonRecord{Attempts: 2, Budget: 2, At: tm(13)},
			Attempts: []projector.AttemptRecord{
				{
					Checkpoint: "only", Attempt: 1, Day: 1, RunID: run1, TaskBranch: "orbit/T-12",
					ScratchBranch: "groundhog/T-12/day-1", SnapshotRef: "snap-1", PlanVersion: 1,
					StartedAt: at(4), EndedAt: at(7), Outcome: projector.AttemptInterrupted, InterruptedBy: run2,
					Turns: []projector.TurnRecord{{Turn: 1, Provider: "replay", Model: "replay-fixture", Fixture: "parser.json",
						FixtureTurn: 1, StopReason: "tool_use", At: tm(5)}},
					Rewind: &projector.RewindRecord{ScratchBranch: "groundhog/T-12/day-1", ScratchSHA: "d1d1d1d", Reason: "interrupted", At: tm(7)},
				},
				{
					Checkpoint: "only", Attempt: 2, Day: 2, RunID: run2, TaskBranch: "orbit/T-12",
					ScratchBranch: "groundhog/T-12/day-2", SnapshotRef: "snap-2", PlanVersion: 1,
					StartedAt: at(9), EndedAt: at(11), Outcome: projector.AttemptRewound,
					Verb: &projector.VerbRecord{Verb: "checkpoint_failure", WhatTried: "one rule for both forms",
						WhatHappened: "the grammar is ambiguous", NextAttemptPlan: "split the rule", At: tm(10)},
					Rewind: &projector.RewindRecord{ScratchBranch: "groundhog/T-12/day-2", ScratchSHA: "d2d2d2d",
						Reason: "the agent reported a failure", At: tm(11)},
					Failure: &agentReport,
				},
			},
		}},
		Drifts: []projector.DriftRecord{{RunID: run3, PinnedVersion: 1, CurrentVersion: 2, At: tm(20)}},
	}, got)
}

// An interrupted attempt stays interrupted whether its rewind is recorded
// before or after the interruption; a commit is final.
func TestAttemptOutcomes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.forTask("T-1")
	a.add(events.TaskCreated, events.TaskCreatedData{PlanVersion: 1})
	a.add(events.GroundhogAttempt, events.GroundhogAttemptData{Attempt: attempt("c", 1, 1)})
	a.add(events.GroundhogInterrupted, events.GroundhogInterruptedData{Attempt: attempt("c", 1, 1), RunID: "r2"})
	a.add(events.GroundhogRewound, events.GroundhogRewoundData{Attempt: attempt("c", 1, 1), Reason: "interrupted"})
	a.add(events.GroundhogAttempt, events.GroundhogAttemptData{Attempt: attempt("c", 2, 2)})
	a.add(events.GroundhogCommitted, events.GroundhogCommittedData{Attempt: attempt("c", 2, 2), SHA: "s", NoChange: true})
	a.add(events.GroundhogRewound, events.GroundhogRewoundData{Attempt: attempt("c", 2, 2), Reason: "late"})
	// An event of an attempt whose start is not in the log still counts.
	last := a.add(events.GroundhogToolCalled, events.GroundhogToolCalledData{Attempt: attempt("d", 1, 3), Call: events.ToolCalledData{Name: "fs.read"}})

	got, err := e.viewsAt(last).GroundhogRun(e.ctx, "T-1")
	require.NoError(t, err)
	require.Len(t, got.Checkpoints, 2)
	c, d := got.Checkpoints[0], got.Checkpoints[1]
	assert.Equal(t, projector.CheckpointCommitted, c.Status)
	require.Len(t, c.Attempts, 2)
	assert.Equal(t, projector.AttemptInterrupted, c.Attempts[0].Outcome)
	assert.Equal(t, at(3), c.Attempts[0].EndedAt, "ended at the first closing event")
	assert.Equal(t, "r2", c.Attempts[0].InterruptedBy)
	assert.Equal(t, &projector.RewindRecord{Reason: "interrupted", At: tm(4)}, c.Attempts[0].Rewind)
	assert.Equal(t, projector.AttemptCommitted, c.Attempts[1].Outcome)
	assert.Equal(t, &projector.CommitRecord{SHA: "s", NoChange: true, At: tm(6)}, c.Attempts[1].Commit)
	assert.Equal(t, "late", c.Attempts[1].Rewind.Reason)

	assert.Equal(t, "d", d.ID)
	assert.Equal(t, projector.CheckpointPending, d.Status)
	require.Len(t, d.Attempts, 1)
	assert.Equal(t, projector.AttemptOpen, d.Attempts[0].Outcome)
	assert.Nil(t, d.Attempts[0].StartedAt)
	assert.Equal(t, "fs.read", d.Attempts[0].ToolCalls[0].Name)
}
