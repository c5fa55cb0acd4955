package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/executor"
)

// EndpointRunResume raises the budget of a run that ended budget_exhausted
// so that it goes on; it answers an executor.Raised.
const EndpointRunResume = "runs.resume"

// RunResume asks for a run's budget to be raised (see executor.ResumeRun).
// A bound left at zero keeps the run's current one.
type RunResume struct {
	RunID      string  `json:"run_id"`
	MaxTokens  int64   `json:"max_tokens,omitempty"`
	MaxCostUSD float64 `json:"max_cost_usd,omitempty"`
	Requester  string  `json:"requester,omitempty"`
}

// apiRunResume checks the raise against the log and records it; the
// orchestrators watching for raises admit the run. A refused raise writes
// nothing.
func (e *Engine) apiRunResume(ctx context.Context, req json.RawMessage) (any, error) {
	var q RunResume
	if err := decode(req, &q); err != nil {
		return nil, err
	}
	if strings.TrimSpace(q.RunID) == "" {
		return nil, fmt.Errorf("%w: resume needs a run id", events.ErrInvalidRequest)
	}
	return executor.ResumeRun(ctx, e.log, q.RunID, executor.Raise{MaxTokens: q.MaxTokens, MaxCostUSD: q.MaxCostUSD}, q.Requester)
}
