package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/groundhog"
)

// Endpoints of a person's control over a task's commits (DESIGN §12); each
// answers a groundhog.Control.
const (
	// EndpointGroundhogApprove fast-forwards a task's branch to its held
	// checkpoint commits (see groundhog.Approve).
	EndpointGroundhogApprove = "groundhog.approve"
	// EndpointGroundhogRewind takes a task back to before a committed
	// checkpoint (see groundhog.RewindTo).
	EndpointGroundhogRewind = "groundhog.rewind"
)

// GroundhogControl asks the engine to approve a task's held commits, or to
// rewind it to before Checkpoint.
type GroundhogControl struct {
	TaskID     string `json:"task_id"`
	Checkpoint string `json:"checkpoint,omitempty"` // rewind only
	Reason     string `json:"reason,omitempty"`
	// By names who asks, for the record.
	By string `json:"by,omitempty"`
}

// apiGroundhogApprove approves under the task's workspace reservation.
func (e *Engine) apiGroundhogApprove(ctx context.Context, req json.RawMessage) (any, error) {
	return e.groundhogControl(ctx, req, "approve", groundhog.Approve)
}

// apiGroundhogRewind rewinds under the task's workspace reservation.
func (e *Engine) apiGroundhogRewind(ctx context.Context, req json.RawMessage) (any, error) {
	return e.groundhogControl(ctx, req, "rewind", groundhog.RewindTo)
}

// groundhogControl does one approve or rewind as abandon does its work:
// holding the task's workspace, refused (a groundhog.ControlRefused
// answer) while a run works there.
func (e *Engine) groundhogControl(ctx context.Context, req json.RawMessage, verb string,
	do func(context.Context, groundhog.ControlConfig) (*groundhog.Control, error)) (any, error) {
	var q GroundhogControl
	if err := decode(req, &q); err != nil {
		return nil, err
	}
	if strings.TrimSpace(q.TaskID) == "" {
		return nil, fmt.Errorf("%w: %s needs a task id", events.ErrInvalidRequest, verb)
	}
	if verb == "rewind" && strings.TrimSpace(q.Checkpoint) == "" {
		return nil, fmt.Errorf("%w: rewind needs a checkpoint (--to)", events.ErrInvalidRequest)
	}
	reserve, release := e.workspaceHold(verb, q.TaskID)
	return do(ctx, groundhog.ControlConfig{
		Log:              e.log,
		TaskID:           q.TaskID,
		Checkpoint:       strings.TrimSpace(q.Checkpoint),
		By:               q.By,
		Reason:           strings.TrimSpace(q.Reason),
		ReserveWorkspace: reserve,
		ReleaseWorkspace: release,
		Logger:           e.logger,
	})
}
