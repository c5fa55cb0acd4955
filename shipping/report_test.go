package shipping_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/shipping"
)

// run appends the events of a run of job: requested (by parent, when
// set), its top-level steps' outputs, and, when state is set, its end.
func (r *rig) run(id, job, parent string, input any, outputs map[string]any, state string) {
	r.t.Helper()
	req := events.RunRequestedData{JobName: job, Job: json.RawMessage(`{}`), Input: input}
	if parent != "" {
		req.Parent = &events.RunLink{RunID: parent, StepKey: "dispatch/1"}
	}
	app := func(ev events.Event, payload any) {
		ev.RunID, ev.Job = id, job
		_, err := r.log.Append(r.ctx, ev, payload)
		require.NoError(r.t, err)
	}
	app(events.Event{ID: events.DecisionID(events.RunRequested, id), Type: events.RunRequested}, req)
	for key, out := range outputs {
		app(events.Event{Type: events.StepStarted, StepKey: key}, events.StepStartedData{Attempt: 1, ActivityType: "deterministic"})
		app(events.Event{Type: events.StepFinished, StepKey: key}, events.StepFinishedData{Attempt: 1, State: events.StateSuccess, Output: out})
	}
	if state != "" {
		fin := events.RunFinishedData{State: state}
		if state != events.StateSuccess {
			fin.Error = &events.ErrorInfo{Kind: events.KindActivity, Message: "it failed", StepKey: "guard"}
		}
		app(events.Event{Type: events.RunFinished}, fin)
	}
}

func TestReportSaysHowAnAutoRunWent(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	status := func(id string) *shipping.AutoReport {
		t.Helper()
		last, err := r.log.LastSeq(r.ctx)
		require.NoError(t, err)
		rep, err := r.svc.Report(r.ctx, id, last)
		require.NoError(t, err)
		return rep
	}
	r.run("EMPTY", "task_auto_pipeline", "", nil, map[string]any{"list_backlog": map[string]any{"task_count": 0, "excluded": []any{}}}, events.StateSuccess)
	assert.Equal(t, shipping.StatusEmptyBacklog, status("EMPTY").WorkflowStatus)

	r.run("NOOP", "task_auto_pipeline", "", nil, map[string]any{"list_backlog": map[string]any{"task_count": 0, "excluded": []any{
		map[string]any{"id": "T-2", "reason": "context_lock_conflict", "conflicts": []any{map[string]any{"requested_file": "a.txt", "locking_task_id": "T-1"}}}}}},
		events.StateSuccess)
	noop := status("NOOP")
	assert.Equal(t, shipping.StatusGatedNoop, noop.WorkflowStatus)
	require.Len(t, noop.Excluded, 1)
	assert.Equal(t, "a.txt", noop.Excluded[0].Conflicts[0].RequestedFile)

	r.run("AUTO", "task_auto_pipeline", "", nil, map[string]any{"list_backlog": map[string]any{"task_count": 2}}, "")
	r.run("GATE1", "task_gate_pipeline", "AUTO", map[string]any{"task_ids": []any{"T-1"}},
		map[string]any{"dispatch_child": map[string]any{"status": "succeeded", "run_id": "PIPE1"}}, events.StateSuccess)
	r.run("GATE2", "task_gate_pipeline", "AUTO", map[string]any{"task_ids": []any{"T-3"}}, nil, "")
	waiting := status("AUTO")
	assert.Equal(t, shipping.StatusGateWaiting, waiting.WorkflowStatus)
	assert.Equal(t, 2, waiting.Dispatched)
	assert.Equal(t, shipping.GateReport{RunID: "GATE1", TaskIDs: []string{"T-1"}, State: events.StateSuccess, Child: "PIPE1", ChildStatus: "succeeded"}, waiting.Gates[0])

	_, err := r.log.Append(r.ctx, events.Event{Type: events.RunFinished, RunID: "GATE2", Job: "task_gate_pipeline"},
		events.RunFinishedData{State: events.StateFailed, Error: &events.ErrorInfo{Kind: events.KindActivity, Message: "gate starved"}})
	require.NoError(t, err)
	_, err = r.log.Append(r.ctx, events.Event{Type: events.RunFinished, RunID: "AUTO", Job: "task_auto_pipeline"},
		events.RunFinishedData{State: events.StateFailed, Error: &events.ErrorInfo{Kind: events.KindActivity, Message: "1 of 2 did not succeed"}})
	require.NoError(t, err)
	failed := status("AUTO")
	assert.Equal(t, shipping.StatusGateFailed, failed.WorkflowStatus)
	assert.Equal(t, "gate starved", failed.Gates[1].Error.Message)

	r.run("BROKE", "task_auto_pipeline", "", nil, nil, events.StateFailed)
	assert.Equal(t, shipping.StatusFailed, status("BROKE").WorkflowStatus, "it failed before it dispatched anything")
}
