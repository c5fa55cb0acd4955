package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/executor"
	"github.com/orbitrun/orbit/projector"
)

// Pause and bulk control (DESIGN §12).
const (
	// EndpointRunPause pauses (or with Unpause unpauses) a run, or the
	// runs a selector picks; it answers a Bulk.
	EndpointRunPause = "runs.pause"
)

// StatePaused selects, in a Selector's States, the runs that are paused.
const StatePaused = "paused"

// Selector picks runs for a bulk operation by the views: every field set
// must hold. States may name paused, for the paused runs.
type Selector struct {
	Job       string   `json:"job,omitempty"`
	States    []string `json:"states,omitempty"`
	SinceMS   int64    `json:"since_ms,omitempty"` // requested at most this long ago
	Requester string   `json:"requester,omitempty"`
}

// Empty reports whether s selects by nothing.
func (s *Selector) Empty() bool {
	return s == nil || (s.Job == "" && len(s.States) == 0 && s.SinceMS == 0 && s.Requester == "")
}

// Bulk answers an operation on runs: the runs it touched (or with DryRun
// would touch), and the id the touched runs record (empty for one run
// named by id, and for a dry run).
type Bulk struct {
	ID     string   `json:"id,omitempty"`
	Runs   []string `json:"runs"`
	DryRun bool     `json:"dry_run,omitempty"`
	// Refused are the runs the operation could not touch, with why.
	Refused map[string]string `json:"refused,omitempty"`
}

// RunPause asks to pause or unpause a run or the runs Selector picks.
type RunPause struct {
	RunID    string    `json:"run_id,omitempty"`
	Selector *Selector `json:"selector,omitempty"`
	Unpause  bool      `json:"unpause,omitempty"`
	// Now stops the runs' running steps too; they run again on unpause.
	Now bool `json:"now,omitempty"`
	// Tree pauses (or unpauses) RunID if it is live and every live run
	// below it, as one bulk operation: how a tree of detached child runs
	// is held still. It takes a run id, not a selector.
	Tree      bool   `json:"tree,omitempty"`
	DryRun    bool   `json:"dry_run,omitempty"`
	Requester string `json:"requester,omitempty"`
	Reason    string `json:"reason,omitempty"`
}

// selectRuns returns the runs s picks, newest first; live only keeps
// those that have not finished, and finished only those that have.
func (e *Engine) selectRuns(ctx context.Context, s *Selector, keep func(*projector.RunView) bool) ([]string, error) {
	if s.Empty() {
		return nil, fmt.Errorf("%w: a selector needs a job, state, since or requester", events.ErrInvalidRequest)
	}
	last, err := e.log.LastSeq(ctx)
	if err != nil {
		return nil, err
	}
	if err := e.proj.WaitFor(ctx, last); err != nil {
		return nil, err
	}
	runs, err := e.proj.Runs(ctx, projector.RunFilter{Job: s.Job})
	if err != nil {
		return nil, err
	}
	since := time.Now().Add(-time.Duration(s.SinceMS) * time.Millisecond)
	var ids []string
	for i := range runs {
		r := &runs[i]
		switch {
		case len(s.States) > 0 && !slices.Contains(s.States, r.State) && !(r.Paused && slices.Contains(s.States, StatePaused)):
		case s.SinceMS > 0 && (r.RequestedAt == nil || r.RequestedAt.Before(since)):
		case s.Requester != "" && r.Requester != s.Requester:
		case !keep(r):
		default:
			ids = append(ids, r.ID)
		}
	}
	return ids, nil
}

func live(r *projector.RunView) bool { return !events.Terminal(r.State) }

// bulkEach applies do to each of ids, under one new bulk id, and answers
// what it touched and what it could not.
func bulkEach(ids []string, dryRun bool, do func(id, bulk string) error) Bulk {
	b := Bulk{Runs: ids, DryRun: dryRun}
	if b.Runs == nil {
		b.Runs = []string{}
	}
	if dryRun || len(ids) == 0 {
		return b
	}
	b.ID = events.NewID()
	b.Runs = []string{}
	for _, id := range ids {
		if err := do(id, b.ID); err != nil {
			if b.Refused == nil {
				b.Refused = map[string]string{}
			}
			b.Refused[id] = err.Error()
			continue
		}
		b.Runs = append(b.Runs, id)
	}
	return b
}

func (e *Engine) apiRunPause(ctx context.Context, raw json.RawMessage) (any, error) {
	var q RunPause
	if err := decode(raw, &q); err != nil {
		return nil, err
	}
	d := events.RunPausedData{Requester: q.Requester, Reason: q.Reason, Now: q.Now && !q.Unpause}
	if q.Tree {
		return e.treePause(ctx, q, d)
	}
	if q.Selector.Empty() {
		if strings.TrimSpace(q.RunID) == "" {
			return nil, fmt.Errorf("%w: pause needs a run id or a selector", events.ErrInvalidRequest)
		}
		if q.DryRun {
			return Bulk{Runs: []string{q.RunID}, DryRun: true}, nil
		}
		if err := executor.PauseRun(ctx, e.log, q.RunID, !q.Unpause, d); err != nil {
			return nil, err
		}
		return Bulk{Runs: []string{q.RunID}}, nil
	}
	keep := func(r *projector.RunView) bool { return live(r) && r.Paused == q.Unpause }
	ids, err := e.selectRuns(ctx, q.Selector, keep)
	if err != nil {
		return nil, err
	}
	return bulkEach(ids, q.DryRun, func(id, bulk string) error {
		d.Bulk = bulk
		return executor.PauseRun(ctx, e.log, id, !q.Unpause, d)
	}), nil
}

// treePause is apiRunPause with Tree: the run named, if it is live, and
// the live runs below it (executor.TreeTargets, as cancel --tree has
// them) that are not yet as asked, under one bulk id.
func (e *Engine) treePause(ctx context.Context, q RunPause, d events.RunPausedData) (any, error) {
	if strings.TrimSpace(q.RunID) == "" || !q.Selector.Empty() {
		return nil, fmt.Errorf("%w: a tree pause takes a run id, not selectors", events.ErrInvalidRequest)
	}
	last, err := e.log.LastMatching(ctx, []string{events.RunFilter(q.RunID)})
	if err != nil {
		return nil, err
	}
	if last == 0 {
		return nil, events.NotFoundf("no run %s", quote(q.RunID))
	}
	if last, err = e.log.LastSeq(ctx); err != nil {
		return nil, err
	}
	if err := e.proj.WaitFor(ctx, last); err != nil {
		return nil, err
	}
	targets, err := executor.TreeTargets(ctx, e.log, q.RunID)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, id := range targets {
		v, err := e.proj.RunView(ctx, id)
		if err != nil {
			return nil, err
		}
		if v.Paused == q.Unpause {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		state := "not paused"
		if q.Unpause {
			state = "paused"
		}
		return nil, fmt.Errorf("%w: neither run %s nor any run below it is live and %s", events.ErrInvalidRequest, q.RunID, state)
	}
	return bulkEach(ids, q.DryRun, func(id, bulk string) error {
		d.Bulk = bulk
		return executor.PauseRun(ctx, e.log, id, !q.Unpause, d)
	}), nil
}

// bulkCancel is apiCancel with a selector: the live runs it picks.
func (e *Engine) bulkCancel(ctx context.Context, req CancelRequest) (any, error) {
	ids, err := e.selectRuns(ctx, req.Selector, live)
	if err != nil {
		return nil, err
	}
	b := bulkEach(ids, req.DryRun, func(id, bulk string) error {
		return executor.RequestCancelOf(ctx, e.log, id, events.RunCancelRequestedData{Requester: req.Requester, Reason: req.Reason, Bulk: bulk})
	})
	return Cancelled{Runs: b.Runs, Bulk: b}, nil
}

// bulkRetry is apiRunRetry with a selector: a retry of each finished run
// it picks.
func (e *Engine) bulkRetry(ctx context.Context, q RunRetry, opts executor.RetryOptions) (any, error) {
	ids, err := e.selectRuns(ctx, q.Selector, func(r *projector.RunView) bool { return events.Terminal(r.State) })
	if err != nil {
		return nil, err
	}
	var retries []string
	b := bulkEach(ids, q.DryRun, func(id, bulk string) error {
		r, err := executor.NewRetryRequest(ctx, e.log, id, opts)
		if err != nil {
			return err
		}
		r.Signer = events.RequestSigner(ctx)
		r.Bulk = bulk
		if err := executor.Submit(ctx, e.log, r); err != nil {
			return err
		}
		retries = append(retries, r.RunID)
		return nil
	})
	return BulkRetried{Bulk: b, Retries: retries}, nil
}

// BulkRetried answers a retry with a selector: the runs retried (Bulk.Runs)
// and their retries, in the same order.
type BulkRetried struct {
	Bulk    Bulk     `json:"bulk"`
	Retries []string `json:"retries,omitempty"`
}
