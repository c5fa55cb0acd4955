package projector_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
	"github.com/orbitrun/orbit/projector"
)

// groundhogMemoryAtEnd is the memory groundhogHistory folds to.
func groundhogMemoryAtEnd(task string) *projector.GroundhogMemory {
	return &projector.GroundhogMemory{
		TaskID: task, PlanVersion: 1,
		Checkpoints: []projector.MemoryCheckpoint{
			{ID: "cp-1", Summary: "Retry policy read from config/retry.yaml", Commit: "c1c1c1c",
				SideEffects: []events.SideEffect{{Kind: "file_write", Target: "config/retry.yaml", Reversible: true}}},
			{ID: "cp-2", Summary: "Exponential backoff with jitter", Commit: "c2c2c2c"},
		},
	}
}

func TestGroundhogMemoryFollowsTheCheckpoints(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	failed, last := e.groundhogHistory("T-7", runID(7))
	report := dayTwoReport()
	committedOne := []projector.MemoryCheckpoint{groundhogMemoryAtEnd("T-7").Checkpoints[0]}

	tests := []struct {
		name string
		seq  uint64
		want *projector.GroundhogMemory
	}{
		{"created: empty at the plan's version", 1, &projector.GroundhogMemory{TaskID: "T-7", PlanVersion: 1}},
		{"checkpoint 1 active", 4, &projector.GroundhogMemory{TaskID: "T-7", PlanVersion: 1,
			Active: &projector.ActiveCheckpoint{ID: "cp-1"}}},
		{"checkpoint 1 verified, not committed yet", 12, &projector.GroundhogMemory{TaskID: "T-7", PlanVersion: 1,
			Active: &projector.ActiveCheckpoint{ID: "cp-1"}}},
		{"checkpoint 1 committed", 13, &projector.GroundhogMemory{TaskID: "T-7", PlanVersion: 1, Checkpoints: committedOne}},
		{"checkpoint 2 rewound, no report yet", failed - 1, &projector.GroundhogMemory{TaskID: "T-7", PlanVersion: 1,
			Checkpoints: committedOne, Active: &projector.ActiveCheckpoint{ID: "cp-2"}}},
		{"checkpoint 2 failed", failed, &projector.GroundhogMemory{TaskID: "T-7", PlanVersion: 1,
			Checkpoints: committedOne, Active: &projector.ActiveCheckpoint{ID: "cp-2", LastFailure: &report}}},
		{"checkpoint 2 again: the report stays", failed + 1, &projector.GroundhogMemory{TaskID: "T-7", PlanVersion: 1,
			Checkpoints: committedOne, Active: &projector.ActiveCheckpoint{ID: "cp-2", LastFailure: &report}}},
		{"checkpoint 2 committed", last, groundhogMemoryAtEnd("T-7")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := e.viewsAt(tt.seq).GroundhogMemory(e.ctx, "T-7")
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

// The memory is prompt-facing: nothing from turns, tool calls, denials,
// verbs, verifications, rewinds or snapshots may reach it, at any point.
func TestGroundhogMemoryHoldsOnlyWhatPromptsMaySee(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	failed, last := e.groundhogHistory("T-7", runID(7))
	forbidden := []string{
		plantedTurnText, plantedToolUseID, plantedToolError, plantedVerifierOut, plantedClaimedResult,
		plantedDenialReason, plantedScratchSHA,
		"fs.read", "fs.write", "shell.exec", "orbit.groundhog", // tool names
		"groundhog/T-7/day-", "refs/orbit/snapshots", "notes.txt", // scratch branches, snapshots, untracked files
		"claude-sonnet", "sha256:g1", "sha256:in", ".git/config", // models, grounding hashes, tool inputs, denied paths
	}

	// After every event of the history, not only where it settles.
	memory := map[uint64]string{}
	for seq := uint64(1); seq <= last; seq++ {
		m, err := e.viewsAt(seq).GroundhogMemory(e.ctx, "T-7")
		require.NoError(t, err)
		data, err := json.Marshal(m)
		require.NoError(t, err)
		memory[seq] = string(data)
		for _, s := range forbidden {
			assert.NotContains(t, memory[seq], s, "the memory at sequence %d", seq)
		}
	}
	for _, seq := range []uint64{failed, last} {
		for _, s := range []string{"Retry policy read from config/retry.yaml", "config/retry.yaml", "file_write", "c1c1c1c"} {
			assert.Contains(t, memory[seq], s, "the memory at sequence %d", seq)
		}
	}
	assert.Contains(t, memory[failed], "go test ./uploader/... exited 1", "the failure report")
	assert.Contains(t, memory[last], "Exponential backoff with jitter")
	assert.Contains(t, memory[last], "c2c2c2c")

	// What is stored is no more than what the query returns.
	p := e.running(projector.Config{}, last)
	require.NoError(t, p.Close())
	stored := testkit.DumpBolt(t, e.path)["groundhog_memory"]
	require.Len(t, stored, 1)
	for _, s := range forbidden {
		assert.False(t, strings.Contains(stored["T-7"], s), "the stored memory holds %q", s)
	}
}

func TestGroundhogMemoryCommitsEachCheckpointOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.forTask("T-3")
	report := events.FailureReport{Source: "synthetic", WhatHappened: "no verb"}
	a.add(events.TaskCreated, events.TaskCreatedData{Title: "t", PlanVersion: 1})
	a.add(events.GroundhogAttempt, events.GroundhogAttemptData{Attempt: attempt("cp-1", 1, 1)})
	a.add(events.GroundhogAttemptFailed, events.GroundhogAttemptFailedData{Attempt: attempt("cp-1", 1, 1), Report: report})
	a.add(events.GroundhogAttempt, events.GroundhogAttemptData{Attempt: attempt("cp-1", 2, 2)})
	a.add(events.GroundhogCommitted, events.GroundhogCommittedData{Attempt: attempt("cp-1", 2, 2), SHA: "aaa", Summary: "first"})
	// The plan changes; a replay of it commits cp-1 again.
	a.add(events.TaskPlanChanged, events.TaskPlanChangedData{Plan: "p2", PlanVersion: 2})
	a.add(events.GroundhogAttempt, events.GroundhogAttemptData{Attempt: attempt("cp-1", 1, 3)})
	replayed := a.add(events.GroundhogCommitted, events.GroundhogCommittedData{Attempt: attempt("cp-1", 1, 3), SHA: "bbb", Summary: "second"})
	// A failure of one checkpoint is not carried to another.
	a.add(events.GroundhogAttempt, events.GroundhogAttemptData{Attempt: attempt("cp-2", 1, 4)})
	a.add(events.GroundhogAttemptFailed, events.GroundhogAttemptFailedData{Attempt: attempt("cp-2", 1, 4), Report: report})
	last := a.add(events.GroundhogAttempt, events.GroundhogAttemptData{Attempt: attempt("cp-3", 1, 5)})

	first := []projector.MemoryCheckpoint{{ID: "cp-1", Summary: "first", Commit: "aaa"}}
	m, err := e.viewsAt(replayed).GroundhogMemory(e.ctx, "T-3")
	require.NoError(t, err)
	assert.Equal(t, &projector.GroundhogMemory{TaskID: "T-3", PlanVersion: 2, Checkpoints: first}, m)

	m, err = e.viewsAt(last).GroundhogMemory(e.ctx, "T-3")
	require.NoError(t, err)
	assert.Equal(t, &projector.GroundhogMemory{TaskID: "T-3", PlanVersion: 2, Checkpoints: first,
		Active: &projector.ActiveCheckpoint{ID: "cp-3"}}, m)
}

func TestGroundhogMemoryAfterAbandonAndPlanChange(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	blocked, last := e.setbackHistory("T-12", runID(1), runID(2), runID(3))
	report := setbackReport()
	for _, tt := range []struct {
		seq     uint64
		version int
	}{{blocked, 1}, {last, 2}} {
		m, err := e.viewsAt(tt.seq).GroundhogMemory(e.ctx, "T-12")
		require.NoError(t, err)
		assert.Equal(t, &projector.GroundhogMemory{TaskID: "T-12", PlanVersion: tt.version,
			Active: &projector.ActiveCheckpoint{ID: "only", LastFailure: &report}}, m, "at sequence %d", tt.seq)
	}
}
