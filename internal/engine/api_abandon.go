package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/executor"
	"github.com/orbitrun/orbit/groundhog"
)

// EndpointGroundhogAbandon closes a task's open attempt for good (see
// groundhog.Abandon); it answers a groundhog.Abandonment.
const EndpointGroundhogAbandon = "groundhog.abandon"

// GroundhogAbandon asks the engine to abandon a task's open attempt.
type GroundhogAbandon struct {
	TaskID string `json:"task_id"`
	Reason string `json:"reason,omitempty"`
	// By names who asks, for the record.
	By string `json:"by,omitempty"`
}

// abandonTTL bounds the workspace reservation an abandon takes: it is not
// a run, so nothing else would make it stale if the engine died holding
// it. An abandon's git work is bounded well below it.
const abandonTTL = 5 * time.Minute

// workspaceHold returns the reserve and release functions with which a
// person's act on a task (abandon, approve, rewind: verb) holds the task's
// workspace, as a run holds it, under an owner of its own.
func (e *Engine) workspaceHold(verb, taskID string) (reserve func(context.Context, string) (string, error), release func(context.Context, string) error) {
	owner := verb + "-" + events.NewID()
	what := "groundhog " + verb + " " + taskID
	reserve = func(ctx context.Context, path string) (string, error) {
		return executor.ReserveWorkspace(ctx, e.log, owner, what, path, abandonTTL)
	}
	release = func(ctx context.Context, path string) error {
		return executor.ReleaseWorkspace(ctx, e.log, owner, path)
	}
	return reserve, release
}

// apiGroundhogAbandon abandons under the task's workspace reservation, as
// a run holds it: refused (an AbandonRefused answer) while a run works
// there.
func (e *Engine) apiGroundhogAbandon(ctx context.Context, req json.RawMessage) (any, error) {
	var q GroundhogAbandon
	if err := decode(req, &q); err != nil {
		return nil, err
	}
	if strings.TrimSpace(q.TaskID) == "" {
		return nil, fmt.Errorf("%w: abandon needs a task id", events.ErrInvalidRequest)
	}
	reserve, release := e.workspaceHold("abandon", q.TaskID)
	return groundhog.Abandon(ctx, groundhog.ControlConfig{
		Log:              e.log,
		TaskID:           q.TaskID,
		By:               q.By,
		Reason:           strings.TrimSpace(q.Reason),
		ReserveWorkspace: reserve,
		ReleaseWorkspace: release,
		Logger:           e.logger,
	})
}
