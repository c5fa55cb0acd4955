package projector_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/projector"
)

func TestTasksViewFoldsATask(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	run := runID(7)
	_, last := e.groundhogHistory("T-7", run)
	p := e.running(projector.Config{}, last)

	got, err := p.Task(e.ctx, "T-7")
	require.NoError(t, err)
	assert.Equal(t, &projector.TaskView{
		ID: "T-7", Title: "Retry flaky uploads",
		Status: events.TaskDone, StatusReason: "every checkpoint committed",
		Workspace: "/work/repo", Branch: "orbit/T-7",
		Plan: planV1, PlanVersion: 1, PlanDigest: "sha256:plan1",
		CreatedAt: at(1), UpdatedAt: at(30),
		LastRunID: run,
		Runs:      []projector.TaskRun{{RunID: run, Kind: projector.TaskRunGroundhog, At: at(3)}},
		History: []projector.TaskTransition{
			{To: events.TaskActive, At: at(1)},
			{From: events.TaskActive, To: events.TaskRunning, Reason: "a run took the task", RunID: run, At: at(2)},
			{From: events.TaskRunning, To: events.TaskDone, Reason: "every checkpoint committed", RunID: run, At: at(30)},
		},
	}, got)

	_, err = p.Task(e.ctx, "T-8")
	assert.ErrorIs(t, err, projector.ErrNotFound)
	assert.ErrorIs(t, err, events.ErrNotFound)
}

func TestTaskStatusAndPlanChanges(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	blocked, last := e.setbackHistory("T-12", runID(1), runID(2), runID(3))

	tests := []struct {
		name string
		seq  uint64
		want projector.TaskView
	}{
		{"created", 1, projector.TaskView{Status: events.TaskActive, Plan: "1. only: parse the grammar\n",
			PlanVersion: 1, PlanDigest: "sha256:g-plan1", UpdatedAt: at(1)}},
		{"running", 3, projector.TaskView{Status: events.TaskRunning, Plan: "1. only: parse the grammar\n",
			PlanVersion: 1, PlanDigest: "sha256:g-plan1", UpdatedAt: at(3), LastRunID: runID(1)}},
		{"blocked", blocked, projector.TaskView{Status: events.TaskBlocked, StatusReason: "budget spent",
			Plan: "1. only: parse the grammar\n", PlanVersion: 1, PlanDigest: "sha256:g-plan1", UpdatedAt: at(15), LastRunID: runID(2)}},
		{"plan changed", 19, projector.TaskView{Status: events.TaskRunning,
			Plan: planV2, PlanVersion: 2, PlanDigest: "sha256:g-plan2", UpdatedAt: at(19), LastRunID: runID(3)}},
		{"active again", last, projector.TaskView{Status: events.TaskActive, StatusReason: "the plan changed",
			Plan: planV2, PlanVersion: 2, PlanDigest: "sha256:g-plan2", UpdatedAt: at(22), LastRunID: runID(3)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := tt.want
			want.ID, want.Title, want.Workspace, want.Branch = "T-12", "Parse the grammar", "/work/parser", "orbit/T-12"
			want.CreatedAt = at(1)
			got, err := e.viewsAt(tt.seq).Task(e.ctx, "T-12")
			require.NoError(t, err)
			got.Runs, got.History = nil, nil // below
			assert.Equal(t, &want, got)
		})
	}
	got, err := e.viewsAt(last).Task(e.ctx, "T-12")
	require.NoError(t, err)
	var moves []string
	for _, h := range got.History {
		moves = append(moves, h.From+">"+h.To)
	}
	assert.Equal(t, []string{">active", "active>running", "running>blocked", "blocked>active", "active>running", "running>active"}, moves,
		"every status the task was given, each from the one before")
	assert.Len(t, got.Runs, 3)
}

func TestTasksAreListedInNaturalOrder(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var last uint64
	for _, id := range []string{"T-10", "T-2", "alpha", "T-1x", "T-1", "T-02", "T-9"} {
		last = e.append(events.Event{Type: events.TaskCreated, TaskID: id}, events.TaskCreatedData{Title: id, PlanVersion: 1})
	}
	p := e.running(projector.Config{}, last)

	tasks, err := p.Tasks(e.ctx)
	require.NoError(t, err)
	var ids []string
	for _, task := range tasks {
		ids = append(ids, task.ID)
	}
	assert.Equal(t, []string{"T-1", "T-1x", "T-02", "T-2", "T-9", "T-10", "alpha"}, ids)
}

func TestTasksOfAnEmptyLog(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p := e.open(projector.Config{})
	tasks, err := p.Tasks(e.ctx)
	require.NoError(t, err)
	assert.Empty(t, tasks)
	_, err = p.GroundhogMemory(e.ctx, "T-1")
	assert.ErrorIs(t, err, projector.ErrNotFound)
	_, err = p.GroundhogRun(e.ctx, "T-1")
	assert.ErrorIs(t, err, projector.ErrNotFound)
}
