package activity_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/activity"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/executor"
	"github.com/orbitrun/orbit/internal/runrig"
	"github.com/orbitrun/orbit/internal/testkit"
)

// The registry's tests declare names of their own: Declare is process-wide.
func init() { activity.Declare("registry_test_touch", "registry_test_missing") }

func TestARegisteredActionRunsWithItsStepAndRecordsEvents(t *testing.T) {
	t.Parallel()
	log := testkit.StartLog(t, events.Config{})
	var calls []activity.ActionCall
	var mu sync.Mutex
	touch := activity.Action{External: true, Run: func(ctx context.Context, c *activity.ActionCall) (any, error) {
		mu.Lock()
		calls = append(calls, *c)
		mu.Unlock()
		if c.Input.(map[string]any)["bad"] == true {
			return nil, activity.Failure(events.KindActivity, false, "refused: %s", "the base moved")
		}
		if err := c.Emit(ctx, events.GateStarvation, events.GateStarvationData{TaskIDs: []string{"T-1"}}); err != nil {
			return nil, err
		}
		return map[string]any{"touched": c.RunID}, nil
	}}
	runrig.Start(t, executor.Config{Log: log, Root: t.TempDir()},
		activity.WorkerConfig{Log: log, Actions: map[string]activity.Action{"registry_test_touch": touch}})

	job := `
schemaVersion: 2
kind: Job
metadata: {name: touching}
spec:
  steps:
    - id: touch
      spec: {type: deterministic, action: registry_test_touch}
`
	runID, fin := runrig.RunJob(t, log, runrig.ParseJob(t, job), map[string]any{"bad": false})
	require.Equal(t, events.StateSuccess, fin.State, "%+v", fin.Error)
	assert.Equal(t, map[string]any{"touched": runID}, runrig.StepOutput(t, log, runID, "touch"))
	evs := runrig.History(t, log, runID)
	starv := runrig.OfType(evs, events.GateStarvation)
	require.Len(t, starv, 1)
	assert.Equal(t, "touch", starv[0].StepKey)
	assert.Empty(t, runrig.OfType(evs, events.ActivityStarted), "under step protocol 5 on an embedded store a first execution, External or not, has no activity.started")
	mu.Lock()
	assert.Equal(t, "touch", calls[0].StepKey)
	assert.Equal(t, 1, calls[0].Attempt)
	mu.Unlock()

	_, fin = runrig.RunJob(t, log, runrig.ParseJob(t, job), map[string]any{"bad": true})
	require.Equal(t, events.StateFailed, fin.State)
	assert.Equal(t, "refused: the base moved", fin.Error.Message)
	assert.Equal(t, events.KindActivity, fin.Error.Kind)

	_, fin = runrig.RunJob(t, log, runrig.ParseJob(t, `
schemaVersion: 2
kind: Job
metadata: {name: missing}
spec:
  steps:
    - id: m
      spec: {type: deterministic, action: registry_test_missing}
`), nil)
	require.Equal(t, events.StateFailed, fin.State)
	assert.Equal(t, events.KindUnknownAction, fin.Error.Kind, "declared, but this worker was not given it")
}

func TestAnUndeclaredActionDoesNotValidate(t *testing.T) {
	t.Parallel()
	_, err := executor.NewRunRequest(runrig.ParseJob(t, `
schemaVersion: 2
kind: Job
metadata: {name: nothing}
spec:
  steps:
    - id: n
      spec: {type: deterministic, action: registry_test_never_declared}
`), nil, "test")
	require.ErrorIs(t, err, executor.ErrInvalidJob)
	assert.ErrorContains(t, err, "registry_test_never_declared")
}

// binder binds agent steps to a task record of its own.
type binder struct {
	mu        sync.Mutex
	summaries []string
	released  int
}

func (b *binder) Bind(_ context.Context, step activity.StepRef, taskID string) (*activity.TaskBinding, error) {
	if taskID != "T-9" {
		return nil, fmt.Errorf("task %s: %w", taskID, events.ErrNotFound)
	}
	return &activity.TaskBinding{
		Snapshot: map[string]any{"id": "T-9", "title": "Add a farewell", "acceptance_criteria": []any{"bye.txt says bye"}},
		Token:    "token-of-" + step.StepKey,
		RecordSummary: func(_ context.Context, s string) error {
			b.mu.Lock()
			defer b.mu.Unlock()
			b.summaries = append(b.summaries, s)
			return nil
		},
		Release: func() { b.mu.Lock(); b.released++; b.mu.Unlock() },
	}, nil
}

func TestAnAgentStepBoundToATaskSeesItAndRecordsItsSummary(t *testing.T) {
	t.Parallel()
	log := testkit.StartLog(t, events.Config{})
	srv := testkit.NewAnthropicServer(t,
		testkit.Turn{Text: "Recording what I did.", Tools: []testkit.ToolUse{{Name: "orbit_task_summary", Input: map[string]any{"summary": "bye.txt added"}}}},
		testkit.Turn{Text: "Done."},
	)
	b := &binder{}
	env := func(name string) (string, bool) {
		if name == "ANTHROPIC_API_KEY" {
			return fakeKey, true
		}
		return "", false
	}
	runrig.Start(t, executor.Config{Log: log, Root: t.TempDir(), Env: env}, activity.WorkerConfig{Log: log, Env: env, Tasks: b})

	job := func(task string) string {
		return `
schemaVersion: 2
kind: Job
metadata: {name: implement}
spec:
  steps:
    - id: implement
      default_input: {task_id: ` + task + `}
      spec:
        type: agent_loop
        instruction: Implement the task.
        provider: claude
        model: claude-sonnet-4-5
        base_url: ` + srv.URL() + `
        tools: [fs.read]
`
	}
	_, fin := runrig.RunJob(t, log, runrig.ParseJob(t, job("T-9")), nil)
	require.Equal(t, events.StateSuccess, fin.State, "%+v", fin.Error)
	b.mu.Lock()
	assert.Equal(t, []string{"bye.txt added"}, b.summaries)
	assert.Equal(t, 1, b.released)
	b.mu.Unlock()
	reqs := srv.Scripted()
	require.NotEmpty(t, reqs)
	assert.Contains(t, reqs[0].Tools, "orbit_task_summary", "offered whatever the activity's tools")
	var first struct {
		Content []struct{ Text string } `json:"content"`
	}
	require.NoError(t, json.Unmarshal(reqs[0].Messages[0], &first))
	assert.Contains(t, first.Content[0].Text, `"title": "Add a farewell"`, "the prompt carries the task")

	_, fin = runrig.RunJob(t, log, runrig.ParseJob(t, job("T-404")), nil)
	require.Equal(t, events.StateFailed, fin.State)
	assert.Equal(t, events.KindValidation, fin.Error.Kind)
	assert.Contains(t, fin.Error.Message, "T-404")
}
