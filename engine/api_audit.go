package engine

import (
	"context"
	"encoding/json"

	"github.com/orbitrun/orbit/events"
)

// EndpointAudit checks the whole event log (see events.Log.Audit) and
// answers an events.AuditReport. It has no request fields.
const EndpointAudit = "log.audit"

func (e *Engine) auditEndpoints() map[string]events.Handler {
	return map[string]events.Handler{EndpointAudit: e.handle(e.apiAudit)}
}

func (e *Engine) apiAudit(ctx context.Context, _ json.RawMessage) (any, error) {
	return e.log.Audit(ctx)
}
