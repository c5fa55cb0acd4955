package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/orbitrun/orbit/events"
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
