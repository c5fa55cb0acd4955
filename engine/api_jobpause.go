package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/executor"
)

// Job pause endpoints (DESIGN §12): a paused job's new runs queue until it
// is unpaused; its running runs are not affected.
const (
	// EndpointJobPause pauses (or with Unpause unpauses) a job; it answers
	// a JobPaused.
	EndpointJobPause = "jobs.pause"
	// EndpointJobsPaused lists the paused jobs; it answers a []PausedJob.
	EndpointJobsPaused = "jobs.paused"
)

// PausedJob is a paused job: who paused it, when and why.
type PausedJob = executor.JobPause

// JobPauseRequest names the job to pause or unpause.
type JobPauseRequest struct {
	Job       string `json:"job"`
	Unpause   bool   `json:"unpause,omitempty"`
	Requester string `json:"requester,omitempty"`
	Reason    string `json:"reason,omitempty"`
}

// JobPaused answers EndpointJobPause: Changed is false when the job
// already was so.
type JobPaused struct {
	Job     string `json:"job"`
	Paused  bool   `json:"paused"`
	Changed bool   `json:"changed"`
}

func (e *Engine) jobPauseEndpoints() map[string]events.Handler {
	return map[string]events.Handler{
		EndpointJobPause:   e.handle(e.apiJobPause),
		EndpointJobsPaused: e.handle(func(ctx context.Context, _ json.RawMessage) (any, error) { return executor.PausedJobs(ctx, e.log) }),
	}
}

func (e *Engine) apiJobPause(ctx context.Context, raw json.RawMessage) (any, error) {
	var q JobPauseRequest
	if err := decode(raw, &q); err != nil {
		return nil, err
	}
	if strings.TrimSpace(q.Job) == "" {
		return nil, fmt.Errorf("%w: job pause needs a job name", events.ErrInvalidRequest)
	}
	// Pause takes only a job of the catalog; unpause also a paused name
	// that left it, so a job removed while paused can be let go.
	_, unknown := e.job(q.Job, "")
	if !q.Unpause && unknown != nil {
		return nil, jobError(unknown)
	}
	changed, err := e.orch.PauseJob(ctx, !q.Unpause, executor.JobPause{Job: q.Job, At: time.Now().UTC(), Requester: q.Requester, Reason: q.Reason})
	if err != nil {
		return nil, err
	}
	if q.Unpause && !changed && unknown != nil {
		return nil, jobError(unknown)
	}
	return JobPaused{Job: q.Job, Paused: !q.Unpause, Changed: changed}, nil
}

// jobError is the answer for a job name the catalog refused.
func jobError(err error) error {
	if errors.Is(err, assets.ErrNotFound) {
		return events.NotFoundf("%s", err)
	}
	return fmt.Errorf("%w: %v", events.ErrInvalidRequest, err)
}
