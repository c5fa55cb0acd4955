package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/projector"
)

// API endpoints (requests go to orbit.api.<endpoint>).
const (
	EndpointInfo = "engine.info"
	EndpointRun  = "runs.get"
	EndpointRuns = "runs.list"
	// EndpointRunsCount answers how many runs a RunsQuery selects, its
	// Limit aside: a RunsCount.
	EndpointRunsCount = "runs.count"
	EndpointReplay    = "views.replay"
	EndpointMetrics   = "metrics.get"
)

// MetricsQuery asks for the metrics view, reflecting at least every event up
// to MinSeq.
type MetricsQuery struct {
	MinSeq uint64 `json:"min_seq,omitempty"`
}

// RunQuery asks for one run: by id, else the latest (of Job, if set). The
// answer reflects at least every event up to MinSeq.
type RunQuery struct {
	RunID  string `json:"run_id,omitempty"`
	Job    string `json:"job,omitempty"`
	MinSeq uint64 `json:"min_seq,omitempty"`
}

// RunsQuery asks for run history, newest first: of Job and in one of States
// when they are set.
type RunsQuery struct {
	Job    string   `json:"job,omitempty"`
	States []string `json:"states,omitempty"`
	Limit  int      `json:"limit,omitempty"`
	MinSeq uint64   `json:"min_seq,omitempty"`
}

// RunsCount answers a RunsQuery sent to EndpointRunsCount.
type RunsCount struct {
	Total int `json:"total"`
}

// ReplayRequest asks the engine to rebuild its views from the log, or with
// Verify to compare a rebuild with the live views.
type ReplayRequest struct {
	Verify bool `json:"verify"`
}

// InfoReply describes the engine and how far its views are.
type InfoReply struct {
	Info
	Version string `json:"version"`
	Applied uint64 `json:"applied"`
	Busy    int    `json:"busy"`
	// Consumers is how many consumers the event stream has (see
	// events.Log.Consumers); the server refuses new ones past its limit.
	Consumers int `json:"consumers"`
	// StoreFull says why the event store refuses writes ("" while it
	// takes them).
	StoreFull string `json:"store_full,omitempty"`
	// Signing says the engine signs its log: what it reads without a valid
	// MAC is rejected and recorded. LogKey names the key it signs with
	// (events.Log.KeyID), and LogKeyFile is where the engine reads it: a
	// client verifies what it reads with that key, or with none (see
	// events.Log.UseKey), never with another.
	Signing    bool   `json:"signing,omitempty"`
	LogKey     string `json:"log_key,omitempty"`
	LogKeyFile string `json:"log_key_file,omitempty"`
	// RestartNeeded are the settings of .orbit/config.yaml that changed
	// since the engine started and that it applies only when restarted
	// (see ConfigStatus).
	RestartNeeded []string `json:"restart_needed,omitempty"`
}

func (e *Engine) serveAPI() (events.Stopper, error) {
	endpoints := map[string]events.Handler{
		EndpointInfo:      e.handle(e.apiInfo),
		EndpointRun:       e.handle(e.apiRun),
		EndpointRuns:      e.handle(e.apiRuns),
		EndpointRunsCount: e.handle(e.apiRunsCount),
		EndpointReplay:    e.handle(e.apiReplay),
		EndpointMetrics:   e.handle(e.apiMetrics),
		// The console's view of a run: the step tree a page at a time.
		EndpointRunSteps: e.handle(e.apiRunSteps),
	}
	for name, h := range e.taskEndpoints() {
		endpoints[name] = h
	}
	for name, h := range e.auditEndpoints() {
		endpoints[name] = h
	}
	for name, h := range e.retentionEndpoints() {
		endpoints[name] = h
	}
	for name, h := range e.writeEndpoints() {
		endpoints[name] = h
	}
	endpoints[EndpointGroundhogVerb] = e.handle(e.apiGroundhogVerb)
	for name, h := range e.controlEndpoints() {
		endpoints[name] = h
	}
	for name, h := range e.engineEndpoints() {
		endpoints[name] = h
	}
	for name, h := range e.routineEndpoints() {
		endpoints[name] = h
	}
	for name, h := range e.jobPauseEndpoints() {
		endpoints[name] = h
	}
	return e.log.Serve(e.id, "orbit", Version, 5*time.Minute, endpoints)
}

// handle marks the engine busy while a request is answered.
func (e *Engine) handle(h events.Handler) events.Handler {
	return func(ctx context.Context, req json.RawMessage) (any, error) {
		e.touch()
		defer e.touch()
		return h(ctx, req)
	}
}

func decode(req json.RawMessage, v any) error {
	if len(req) == 0 {
		return nil
	}
	if err := json.Unmarshal(req, v); err != nil {
		return fmt.Errorf("%w: %v", events.ErrInvalidRequest, err)
	}
	return nil
}

func (e *Engine) apiInfo(ctx context.Context, _ json.RawMessage) (any, error) {
	consumers, err := e.log.Consumers(ctx)
	if err != nil {
		return nil, err
	}
	return InfoReply{Info: e.Info(), Version: Version, Applied: e.proj.Applied(), Busy: e.orch.Busy(),
		Consumers: consumers, StoreFull: e.log.SpaceShortage(), Signing: e.log.Signing(),
		LogKey: e.log.KeyID(), LogKeyFile: e.log.KeyFile(), RestartNeeded: e.config.Status().RestartNeeded}, nil
}

func (e *Engine) apiRun(ctx context.Context, req json.RawMessage) (any, error) {
	var q RunQuery
	if err := decode(req, &q); err != nil {
		return nil, err
	}
	if err := e.proj.WaitFor(ctx, q.MinSeq); err != nil {
		return nil, err
	}
	if q.RunID == "" {
		return e.proj.LatestRun(ctx, q.Job)
	}
	return e.proj.RunView(ctx, q.RunID)
}

func (e *Engine) apiRuns(ctx context.Context, req json.RawMessage) (any, error) {
	var q RunsQuery
	if err := decode(req, &q); err != nil {
		return nil, err
	}
	if err := e.proj.WaitFor(ctx, q.MinSeq); err != nil {
		return nil, err
	}
	return e.proj.Runs(ctx, projector.RunFilter{Job: q.Job, States: q.States, Limit: q.Limit})
}

func (e *Engine) apiRunsCount(ctx context.Context, req json.RawMessage) (any, error) {
	var q RunsQuery
	if err := decode(req, &q); err != nil {
		return nil, err
	}
	if err := e.proj.WaitFor(ctx, q.MinSeq); err != nil {
		return nil, err
	}
	n, err := e.proj.CountRuns(ctx, projector.RunFilter{Job: q.Job, States: q.States})
	return RunsCount{Total: n}, err
}

func (e *Engine) apiReplay(ctx context.Context, req json.RawMessage) (any, error) {
	var q ReplayRequest
	if err := decode(req, &q); err != nil {
		return nil, err
	}
	return e.proj.Replay(ctx, q.Verify)
}

func (e *Engine) apiMetrics(ctx context.Context, req json.RawMessage) (any, error) {
	var q MetricsQuery
	if err := decode(req, &q); err != nil {
		return nil, err
	}
	if err := e.proj.WaitFor(ctx, q.MinSeq); err != nil {
		return nil, err
	}
	return e.proj.Metrics(ctx)
}
