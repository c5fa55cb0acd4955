package executor

import (
	"context"
	"errors"
	"fmt"

	"github.com/orbitrun/orbit/events"
)

// RequestCancel records that a run should be cancelled. The orchestrator
// that owns the run stops dispatching, the workers stop the run's running
// activities (SIGTERM to their process groups, SIGKILL after a grace
// period), and the run ends cancelled. A pending run is cancelled at once.
// Cancelling twice records one request; a finished run never changes. The
// request records who signed the API request ctx serves, if any
// (events.RequestSigner).
func RequestCancel(ctx context.Context, log *events.Log, runID, requester, reason string) error {
	return requestCancel(ctx, log, runID, events.RunCancelRequestedData{Requester: requester, Reason: reason})
}

// RequestCancelOf is RequestCancel with the whole record: a cancel that
// is part of a bulk operation says so (d.Bulk).
func RequestCancelOf(ctx context.Context, log *events.Log, runID string, d events.RunCancelRequestedData) error {
	return requestCancel(ctx, log, runID, d)
}

// requestCancel is RequestCancel with the whole record: a cancel that is
// part of a tree cancel says so (d.Tree). The first request of a run is
// the one recorded (its id is derived from the run).
func requestCancel(ctx context.Context, log *events.Log, runID string, d events.RunCancelRequestedData) error {
	if d.Signer == nil {
		d.Signer = events.RequestSigner(ctx)
	}
	_, err := log.Append(ctx, events.Event{
		ID:       events.DecisionID(events.RunCancelRequested, runID),
		Type:     events.RunCancelRequested,
		RunID:    runID,
		ParentID: events.DecisionID(events.RunRequested, runID),
	}, d)
	return err
}

// cancelOf returns the cancel request recorded for a run, if any.
func cancelOf(ctx context.Context, log *events.Log, runID string) (*events.RunCancelRequestedData, error) {
	evs, err := log.Read(ctx, events.FollowOptions{Filters: []string{events.EventSubject(events.AggregateRun, runID, events.RunCancelRequested)}})
	if err != nil || len(evs) == 0 {
		return nil, err
	}
	var d events.RunCancelRequestedData
	if err := evs[0].Decode(&d); err != nil {
		return nil, err
	}
	return &d, nil
}

// CancelTree asks run id and every live run below it to cancel, whether or
// not id itself has finished, each recording that it is part of the tree
// cancel of id (events.RunCancelRequestedData.Tree) and of bulk operation
// bulk, and returns the runs it asked, id first when it was live. The runs below id are those its
// root's tree lists (see descendants.go): every run a job.invoke under
// that root started and that has not ended, requested yet or not (a run
// cancelled before its request ends cancelled when it starts). A run that
// starts below one of them while this runs is cancelled with its parent.
// It fails with events.ErrNotFound for a run the log does not know.
func CancelTree(ctx context.Context, log *events.Log, id, requester, reason, bulk string) ([]string, error) {
	targets, err := TreeTargets(ctx, log, id)
	if err != nil {
		return nil, err
	}
	d := events.RunCancelRequestedData{Requester: requester, Reason: reason, Tree: id, Bulk: bulk}
	var asked []string
	for _, run := range targets {
		if err := requestCancel(ctx, log, run, d); err != nil {
			return asked, err
		}
		asked = append(asked, run)
	}
	return asked, nil
}

// TreeTargets returns the runs CancelTree of id would ask now: id if it
// is live and the live runs below it (orbit run cancel --tree --dry-run).
func TreeTargets(ctx context.Context, log *events.Log, id string) ([]string, error) {
	req, err := requested(ctx, log, id)
	if err != nil {
		return nil, err
	}
	root := req.Root
	if root == "" {
		root = id
	}
	rec, _, err := readTree(ctx, log.Leases(), root, true)
	if err != nil {
		return nil, err
	}
	below, err := treeBelow(ctx, log, id, root, rec.Runs)
	if err != nil {
		return nil, err
	}
	var targets []string
	for _, run := range append([]string{id}, below...) {
		finished, err := sinceRaise(ctx, log, run, events.RunFinished)
		if err != nil {
			return targets, err
		}
		if !finished {
			targets = append(targets, run)
		}
	}
	return targets, nil
}

// treeBelow returns the runs of entries (root's tree) that are below id: all
// of them when id is root, else those with id among their ancestors,
// walking up through the tree's parent links and, for ancestors that have
// ended, their run.requested.
func treeBelow(ctx context.Context, log *events.Log, id, root string, entries []treeEntry) ([]string, error) {
	parent := map[string]string{}
	for _, e := range entries {
		parent[e.Run] = e.Parent
	}
	under := map[string]bool{root: false, "": false}
	under[id] = true // when id is root too
	var isUnder func(run string, visiting map[string]bool) (bool, error)
	isUnder = func(run string, visiting map[string]bool) (bool, error) {
		if v, ok := under[run]; ok {
			return v, nil
		}
		if visiting[run] {
			return false, fmt.Errorf("run %s: a cycle of parents in the tree of %s", run, root)
		}
		visiting[run] = true
		p, ok := parent[run]
		if !ok {
			d, err := requested(ctx, log, run)
			if errors.Is(err, events.ErrNotFound) {
				under[run] = false
				return false, nil
			}
			if err != nil {
				return false, err
			}
			if d.Parent != nil {
				p = d.Parent.RunID
			}
		}
		v, err := isUnder(p, visiting)
		under[run] = v
		return v, err
	}
	var out []string
	for _, e := range entries {
		v, err := isUnder(e.Run, map[string]bool{})
		if err != nil {
			return nil, err
		}
		if v && e.Run != id {
			out = append(out, e.Run)
		}
	}
	return out, nil
}

// requested returns a run's run.requested record (its job left as a blob
// reference), or events.ErrNotFound.
func requested(ctx context.Context, log *events.Log, runID string) (*events.RunRequestedData, error) {
	evs, err := log.Read(ctx, events.FollowOptions{Filters: []string{events.EventSubject(events.AggregateRun, runID, events.RunRequested)}, BlobRefs: true})
	if err != nil {
		return nil, err
	}
	if len(evs) == 0 {
		return nil, fmt.Errorf("%w: run %s", events.ErrNotFound, runID)
	}
	var d events.RunRequestedData
	if err := evs[0].Decode(&d); err != nil {
		return nil, err
	}
	return &d, nil
}
