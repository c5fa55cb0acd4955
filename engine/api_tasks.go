package engine

import (
	"context"
	"encoding/json"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/shipping"
)

// Task and Groundhog endpoints.
const (
	EndpointTaskCreate      = "tasks.create"
	EndpointTask            = "tasks.get"
	EndpointTasks           = "tasks.list"
	EndpointGroundhogMemory = "groundhog.memory"
	EndpointGroundhogAudit  = "groundhog.audit"
)

// TaskCreate asks for a new task; the engine checks it and picks the
// task id (see shipping.Service.Create).
type TaskCreate = shipping.NewTask

// TaskCreated answers a TaskCreate.
type TaskCreated struct {
	TaskID string `json:"task_id"`
	Seq    uint64 `json:"seq"`
}

// TaskQuery asks for one task's record or view, reflecting at least every
// event up to MinSeq.
type TaskQuery struct {
	TaskID string `json:"task_id"`
	MinSeq uint64 `json:"min_seq,omitempty"`
}

func (e *Engine) taskEndpoints() map[string]events.Handler {
	endpoints := map[string]events.Handler{
		EndpointTaskCreate:      e.handle(e.apiTaskCreate),
		EndpointTask:            e.handle(e.taskQuery(func(ctx context.Context, id string) (any, error) { return e.proj.Task(ctx, id) })),
		EndpointTasks:           e.handle(e.taskQuery(func(ctx context.Context, _ string) (any, error) { return e.proj.Tasks(ctx) })),
		EndpointGroundhogMemory: e.handle(e.taskQuery(func(ctx context.Context, id string) (any, error) { return e.proj.GroundhogMemory(ctx, id) })),
		EndpointGroundhogAudit:  e.handle(e.taskQuery(func(ctx context.Context, id string) (any, error) { return e.proj.GroundhogRun(ctx, id) })),
	}
	for name, h := range e.shipEndpoints() {
		endpoints[name] = h
	}
	endpoints[EndpointGroundhogAbandon] = e.handle(e.apiGroundhogAbandon)
	endpoints[EndpointGroundhogApprove] = e.handle(e.apiGroundhogApprove)
	endpoints[EndpointGroundhogRewind] = e.handle(e.apiGroundhogRewind)
	return endpoints
}

func (e *Engine) taskQuery(get func(ctx context.Context, id string) (any, error)) events.Handler {
	return func(ctx context.Context, req json.RawMessage) (any, error) {
		var q TaskQuery
		if err := decode(req, &q); err != nil {
			return nil, err
		}
		if err := e.proj.WaitFor(ctx, q.MinSeq); err != nil {
			return nil, err
		}
		return get(ctx, q.TaskID)
	}
}

// apiTaskCreate records a new task under the next free id T-<n>.
func (e *Engine) apiTaskCreate(ctx context.Context, req json.RawMessage) (any, error) {
	var t TaskCreate
	if err := decode(req, &t); err != nil {
		return nil, err
	}
	id, seq, err := e.ship.Create(ctx, t)
	if err != nil {
		return nil, taskError(err)
	}
	return TaskCreated{TaskID: id, Seq: seq}, nil
}

// groundhogMemory is the workers' view of GroundhogMemory.
func (e *Engine) groundhogMemory(ctx context.Context, taskID string, minSeq uint64) (json.RawMessage, error) {
	if err := e.proj.WaitFor(ctx, minSeq); err != nil {
		return nil, err
	}
	m, err := e.proj.GroundhogMemory(ctx, taskID)
	if err != nil {
		return nil, err
	}
	return json.Marshal(m)
}
