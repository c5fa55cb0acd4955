package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/orbitrun/orbit/activity"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/shipping"
)

// The engine's workers run shipping's actions, and every process that
// links the engine (the CLI validates a job before it submits) knows
// their names.
func init() { activity.Declare(shipping.ActionNames()...) }

// Task-record and shipping endpoints.
const (
	EndpointTaskUpdate  = "tasks.update"
	EndpointTaskStart   = "tasks.start"
	EndpointTaskArchive = "tasks.archive"
	// EndpointTaskSummary takes an execution summary from a CLI agent's
	// process with the token its step was given (the agent identity may
	// call it: events.AgentEndpoints).
	EndpointTaskSummary = "tasks.summary"
	EndpointShipReport  = "ship.report"
)

// TaskUpdate asks for a change of a task's fields and status.
type TaskUpdate = shipping.TaskChange

// TaskStatusRequest asks to start or archive a task.
type TaskStatusRequest struct {
	TaskID string `json:"task_id"`
	By     string `json:"by,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// TaskWritten answers a task write: the sequence of its last event (0
// when nothing needed recording).
type TaskWritten struct {
	TaskID string `json:"task_id"`
	Seq    uint64 `json:"seq"`
}

// SummaryRequest is an execution summary from a CLI agent's process.
type SummaryRequest struct {
	TaskID  string `json:"task_id"` // ORBIT_TASK_ID
	Token   string `json:"token"`   // ORBIT_TASK_TOKEN
	Summary string `json:"summary"`
}

// SummaryReply answers a SummaryRequest: a refusal (a bad token, a summary
// that says nothing) is a tool error for the agent, and Message says why.
type SummaryReply struct {
	Refused bool   `json:"refused,omitempty"`
	Message string `json:"message"`
}

// ShipReportQuery asks for the report of an auto run, reflecting at least
// every event up to MinSeq.
type ShipReportQuery struct {
	RunID  string `json:"run_id"`
	MinSeq uint64 `json:"min_seq,omitempty"`
}

func (e *Engine) shipEndpoints() map[string]events.Handler {
	return map[string]events.Handler{
		EndpointTaskUpdate:  e.handle(e.apiTaskUpdate),
		EndpointTaskStart:   e.handle(e.taskStatus(e.ship.Start)),
		EndpointTaskArchive: e.handle(e.taskStatus(e.ship.Archive)),
		EndpointTaskSummary: e.handle(e.apiTaskSummary),
		EndpointShipReport:  e.handle(e.apiShipReport),
		EndpointGC:          e.handle(e.apiGC),
	}
}

// Shipping is the engine's shipping service: the actions its workers run,
// the task writes, and the tokens of the agent steps bound to a task.
func (e *Engine) Shipping() *shipping.Service { return e.ship }

// newShipping makes the engine's shipping service on its log and views.
func (e *Engine) newShipping() *shipping.Service {
	cfg := shipping.Config{
		Log:    e.log,
		Root:   e.cfg.Root,
		Forge:  e.forgeSettings,
		Redact: e.cfg.Redactor.Add,
		Logger: e.cfg.Logger,
	}
	cfg.ReadViews(e.proj)
	return shipping.New(cfg)
}

// forgeSettings are the forge the engine's configuration names now (a
// change of the file applies at the next pull request) and its token from
// the engine's environment, which the redactor is told: nothing the engine
// publishes shows it.
func (e *Engine) forgeSettings() shipping.ForgeSettings {
	cfg := e.config.get().Forge
	token, _ := os.LookupEnv(cfg.Token())
	e.cfg.Redactor.Add(token)
	return shipping.ForgeSettings{Config: cfg, Token: token}
}

// taskError makes a refused task write an invalid request (exit 2), with
// the reason as its message.
func taskError(err error) error {
	if errors.Is(err, shipping.ErrTransition) || errors.Is(err, shipping.ErrInvalidTask) || errors.Is(err, shipping.ErrSummary) {
		return fmt.Errorf("%w: %w", events.ErrInvalidRequest, err)
	}
	return err
}

func (e *Engine) apiTaskUpdate(ctx context.Context, raw json.RawMessage) (any, error) {
	var c TaskUpdate
	if err := decode(raw, &c); err != nil {
		return nil, err
	}
	seq, err := e.ship.Update(ctx, c)
	if err != nil {
		return nil, taskError(err)
	}
	return TaskWritten{TaskID: c.TaskID, Seq: seq}, nil
}

func (e *Engine) taskStatus(change func(ctx context.Context, id, by, reason string) (uint64, error)) events.Handler {
	return func(ctx context.Context, raw json.RawMessage) (any, error) {
		var q TaskStatusRequest
		if err := decode(raw, &q); err != nil {
			return nil, err
		}
		seq, err := change(ctx, q.TaskID, q.By, q.Reason)
		if err != nil {
			return nil, taskError(err)
		}
		return TaskWritten{TaskID: q.TaskID, Seq: seq}, nil
	}
}

// apiTaskSummary records a CLI agent's execution summary when its token
// scopes an open agent step of the task. A refusal is answered, not an
// error: the agent reads why.
func (e *Engine) apiTaskSummary(ctx context.Context, raw json.RawMessage) (any, error) {
	var q SummaryRequest
	if err := decode(raw, &q); err != nil {
		return nil, err
	}
	if strings.TrimSpace(q.TaskID) == "" {
		return nil, fmt.Errorf("%w: a summary needs the task id (ORBIT_TASK_ID)", events.ErrInvalidRequest)
	}
	err := e.ship.SummaryWithToken(ctx, q.TaskID, q.Token, q.Summary)
	switch {
	case err == nil:
		return SummaryReply{Message: "recorded"}, nil
	case errors.Is(err, shipping.ErrToken), errors.Is(err, shipping.ErrSummary):
		return SummaryReply{Refused: true, Message: err.Error()}, nil
	}
	return nil, err
}

func (e *Engine) apiShipReport(ctx context.Context, raw json.RawMessage) (any, error) {
	var q ShipReportQuery
	if err := decode(raw, &q); err != nil {
		return nil, err
	}
	return e.ship.Report(ctx, q.RunID, q.MinSeq)
}
