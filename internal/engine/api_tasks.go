package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
)

// Task and Groundhog endpoints.
const (
	EndpointTaskCreate      = "tasks.create"
	EndpointTask            = "tasks.get"
	EndpointTasks           = "tasks.list"
	EndpointGroundhogMemory = "groundhog.memory"
	EndpointGroundhogAudit  = "groundhog.audit"
)

// TaskCreate asks for a new task. The plan has been validated by the
// caller; the engine checks it again and picks the task id.
type TaskCreate struct {
	Title     string `json:"title"`
	Workspace string `json:"workspace"`
	Branch    string `json:"branch"`
	Plan      string `json:"plan"`
}

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

// apiTaskCreate records task.created under the next free id T-<n>. The
// event must be the first on its subject, so two creations racing for the
// same id cannot both win: the loser takes the next one.
func (e *Engine) apiTaskCreate(ctx context.Context, req json.RawMessage) (any, error) {
	var t TaskCreate
	if err := decode(req, &t); err != nil {
		return nil, err
	}
	if _, err := assets.ParsePlan("plan", []byte(t.Plan)); err != nil {
		return nil, fmt.Errorf("%w: %v", events.ErrInvalidRequest, err)
	}
	if strings.TrimSpace(t.Title) == "" || t.Workspace == "" || t.Branch == "" {
		return nil, fmt.Errorf("%w: a task needs a title, a workspace and a branch", events.ErrInvalidRequest)
	}
	last, err := e.log.LastSeq(ctx)
	if err != nil {
		return nil, err
	}
	if err := e.proj.WaitFor(ctx, last); err != nil {
		return nil, err
	}
	tasks, err := e.proj.Tasks(ctx)
	if err != nil {
		return nil, err
	}
	n := 0
	for _, task := range tasks {
		if k, err := strconv.Atoi(strings.TrimPrefix(task.ID, "T-")); err == nil && k > n {
			n = k
		}
	}
	data := events.TaskCreatedData{Title: strings.TrimSpace(t.Title), Workspace: t.Workspace, Branch: t.Branch,
		Plan: t.Plan, PlanVersion: 1, PlanDigest: assets.PlanDigest([]byte(t.Plan)), Signer: events.RequestSigner(ctx)}
	for try := 0; try < 100; try++ {
		id := "T-" + strconv.Itoa(n+1+try)
		a, err := e.log.AppendFirst(ctx, events.Event{Type: events.TaskCreated, TaskID: id}, data)
		if errors.Is(err, events.ErrConflict) {
			continue
		}
		if err != nil {
			return nil, err
		}
		return TaskCreated{TaskID: id, Seq: a.Seq}, nil
	}
	return nil, fmt.Errorf("no free task id after T-%d", n)
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
