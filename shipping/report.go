package shipping

import (
	"context"
	"encoding/json"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/projector"
)

// Workflow statuses of an auto run (the upstream system's labels), beside
// its run state.
const (
	// StatusEmptyBacklog: nothing to ship, nothing left out.
	StatusEmptyBacklog = "empty_backlog"
	// StatusGatedNoop: nothing dispatched, tasks left out for held files.
	StatusGatedNoop = "gated_noop"
	// StatusGateWaiting: a gate (or the run) has not ended.
	StatusGateWaiting = "gate_waiting"
	// StatusGateFailed: a gate failed, was cancelled or timed out.
	StatusGateFailed = "gate_failed"
	// StatusCompleted: every gate succeeded.
	StatusCompleted = "completed"
	// StatusFailed: the run failed before it dispatched a gate (Orbit's
	// addition: none of the others says it).
	StatusFailed = "failed"
)

// AutoReport says how an auto run (task_auto_pipeline) went: its state,
// its workflow status, what it dispatched and what it left out.
type AutoReport struct {
	RunID          string            `json:"run_id"`
	State          string            `json:"state"`
	WorkflowStatus string            `json:"workflow_status"`
	Listed         int               `json:"listed"`
	Dispatched     int               `json:"dispatched"`
	Excluded       []Excluded        `json:"excluded"`
	Gates          []GateReport      `json:"gates"`
	Error          *events.ErrorInfo `json:"error,omitempty"`
}

// Excluded is a backlog task an auto run left out, and why.
type Excluded struct {
	ID        string `json:"id"`
	Reason    string `json:"reason"`
	Conflicts []struct {
		RequestedFile string `json:"requested_file"`
		LockingTaskID string `json:"locking_task_id"`
	} `json:"conflicts,omitempty"`
}

// GateReport is one gate run of an auto run: its tasks, its state, and
// what its child pipeline did.
type GateReport struct {
	RunID   string   `json:"run_id"`
	TaskIDs []string `json:"task_ids"`
	State   string   `json:"state"`
	// Child is the pipeline run the gate dispatched and ChildStatus how
	// it ended (succeeded, failed, cancelled, timeout), or Skipped.
	Child       string            `json:"child,omitempty"`
	ChildStatus string            `json:"child_status,omitempty"`
	Skipped     string            `json:"skipped,omitempty"`
	Error       *events.ErrorInfo `json:"error,omitempty"`
}

// Report builds the AutoReport of auto run runID from the views, as they
// are at least at minSeq.
func (s *Service) Report(ctx context.Context, runID string, minSeq uint64) (*AutoReport, error) {
	run, err := s.cfg.Run(ctx, runID, minSeq)
	if err != nil {
		return nil, err
	}
	rep := &AutoReport{RunID: run.ID, State: run.State, Error: run.Error, Excluded: []Excluded{}, Gates: []GateReport{}}
	if step := stepOf(run, "list_backlog"); step != nil {
		var out struct {
			TaskCount int        `json:"task_count"`
			Excluded  []Excluded `json:"excluded"`
		}
		if decodeAs(step.Output, &out) {
			rep.Listed = out.TaskCount
			if out.Excluded != nil {
				rep.Excluded = out.Excluded
			}
		}
	}
	for _, id := range run.Children {
		gate, err := s.cfg.Run(ctx, id, minSeq)
		if err != nil {
			return nil, err
		}
		rep.Gates = append(rep.Gates, gateReport(gate))
	}
	rep.Dispatched = len(rep.Gates)
	rep.WorkflowStatus = workflowStatus(rep)
	return rep, nil
}

func workflowStatus(rep *AutoReport) string {
	waiting, failed := !events.Terminal(rep.State), false
	for _, g := range rep.Gates {
		switch {
		case !events.Terminal(g.State):
			waiting = true
		case g.State != events.StateSuccess:
			failed = true
		}
	}
	switch {
	case waiting:
		return StatusGateWaiting
	case failed:
		return StatusGateFailed
	case rep.Dispatched == 0 && rep.State != events.StateSuccess:
		return StatusFailed
	case rep.Dispatched == 0 && len(rep.Excluded) > 0:
		return StatusGatedNoop
	case rep.Dispatched == 0:
		return StatusEmptyBacklog
	case rep.State != events.StateSuccess:
		return StatusGateFailed
	}
	return StatusCompleted
}

func gateReport(gate *projector.RunView) GateReport {
	g := GateReport{RunID: gate.ID, State: gate.State, Error: gate.Error}
	var in struct {
		TaskIDs []string `json:"task_ids"`
	}
	if decodeAs(gate.Input, &in) {
		g.TaskIDs = in.TaskIDs
	}
	if step := stepOf(gate, "dispatch_child"); step != nil {
		var out struct {
			Status  string `json:"status"`
			RunID   string `json:"run_id"`
			Skipped bool   `json:"skipped"`
			Reason  string `json:"reason"`
		}
		if decodeAs(step.Output, &out) {
			g.Child, g.ChildStatus = out.RunID, out.Status
			if out.Skipped {
				g.Skipped = out.Reason
			}
		}
	}
	if g.Child == "" && len(gate.Children) > 0 {
		g.Child = gate.Children[len(gate.Children)-1]
	}
	return g
}

// stepOf returns a run's top-level step id, if the views have it.
func stepOf(run *projector.RunView, id string) *projector.StepView {
	for i := range run.Steps {
		if run.Steps[i].Key == id {
			return &run.Steps[i]
		}
	}
	return nil
}

// decodeAs decodes a view's JSON value into v, reporting whether it did.
func decodeAs(value any, v any) bool {
	raw, err := json.Marshal(value)
	return err == nil && value != nil && json.Unmarshal(raw, v) == nil
}
