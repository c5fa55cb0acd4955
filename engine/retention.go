package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"time"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/retention"
)

// Endpoints of retention (docs/architecture/retention.md).
const (
	// EndpointCollect makes one pass of the retention policy now (a
	// CollectRequest) and answers a retention.Report.
	EndpointCollect = "log.collect"
	// EndpointExport writes an archive of finished runs and tasks without
	// removing anything (an ExportRequest) and answers an ExportReply.
	EndpointExport = "log.export"
)

// CollectRequest asks for one pass of the policy; with DryRun, what it
// would remove, removing nothing.
type CollectRequest struct {
	DryRun bool `json:"dry_run"`
}

// ExportRequest asks for an archive, at Path (absolute, on the engine's
// machine), of the run trees that finished before Before (of Job's root
// runs alone when set) and, without Job, of the tasks done or archived
// whose last change came before it.
type ExportRequest struct {
	Before time.Time `json:"before"`
	Job    string    `json:"job,omitempty"`
	Path   string    `json:"path"`
}

// ExportReply is what an export wrote.
type ExportReply struct {
	Path   string   `json:"path"`
	SHA256 string   `json:"sha256"`
	Runs   []string `json:"runs"`
	Tasks  []string `json:"tasks"`
	Events int      `json:"events"`
	Blobs  int      `json:"blobs"`
}

// newCollector is the engine's retention collector, reading the policy
// from the project's configuration at every pass.
func (e *Engine) newCollector() *retention.Collector {
	return retention.New(retention.Config{
		Log:          e.log,
		Views:        e.proj,
		Root:         e.cfg.Root,
		Policy:       func() assets.RetentionConfig { return e.config.get().Retention },
		AfterCollect: e.collectAfterRetention,
		Logger:       e.cfg.Logger.With("component", "retention"),
		Leases:       e.log.Leases(),
		Engine:       e.id,
		TakeOver:     e.log.Embedded(),
	})
}

// collectAfterRetention ends each pass of the retention policy with orbit
// gc's collection, applied, with the policy's gc_grace: the blobs the
// removed runs named (archived with them), and the worktrees and branches
// of finished work.
func (e *Engine) collectAfterRetention(ctx context.Context) error {
	grace := e.config.get().Retention.CollectGrace()
	_, err := e.Collect(ctx, CollectOptions{Apply: true, By: "retention", Grace: grace.String()})
	return err
}

func (e *Engine) retentionEndpoints() map[string]events.Handler {
	return map[string]events.Handler{
		EndpointCollect: e.handle(e.apiCollect),
		EndpointExport:  e.handle(e.apiExport),
	}
}

func (e *Engine) apiCollect(ctx context.Context, req json.RawMessage) (any, error) {
	var r CollectRequest
	if err := decode(req, &r); err != nil {
		return nil, err
	}
	return e.collector.Collect(ctx, r.DryRun)
}

func (e *Engine) apiExport(ctx context.Context, req json.RawMessage) (any, error) {
	var r ExportRequest
	if err := decode(req, &r); err != nil {
		return nil, err
	}
	if r.Before.IsZero() || !filepath.IsAbs(r.Path) {
		return nil, fmt.Errorf("%w: an export needs a time to export before and an absolute path", events.ErrInvalidRequest)
	}
	last, err := e.log.LastSeq(ctx)
	if err != nil {
		return nil, err
	}
	if err := e.proj.WaitFor(ctx, last); err != nil {
		return nil, err
	}
	sel, err := retention.SelectBefore(ctx, e.proj, r.Before, r.Job, time.Now())
	if err != nil {
		return nil, err
	}
	exp, err := e.log.Export(ctx, r.Path, events.ExportSelection{Runs: sel.Runs, Tasks: sel.Tasks, Through: last})
	if err != nil {
		return nil, err
	}
	return ExportReply{Path: exp.Path, SHA256: exp.SHA256, Runs: append([]string{}, sel.Runs...), Tasks: append([]string{}, sel.Tasks...),
		Events: exp.Events, Blobs: exp.Blobs}, nil
}
