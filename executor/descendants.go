package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/interpreter"
)

// The live descendants of a root run (engine.max_descendants). Key
// tree.<root> of the orbit_leases bucket lists the runs below root that
// are live, at any depth: a job.invoke adds its child once the child's id
// is recorded in step.started and before the child is requested, and the
// child's engine removes it when the child ends. Each change is a
// compare-and-set of the whole key, so the engines of a NATS server never
// admit more than the limit between them, and a replayed job.invoke finds
// its child listed already. (Why a key and not a view or the log: see
// docs/architecture/runs.md, "Live descendants".)
//
// IMPORTANT: an entry can outlive its run: its engine died between the
// run's end and the removal, or the run was refused as unstorable, or its
// job.invoke's run request was never sent. Such an entry is stale — its
// run has ended (run.finished since its last budget raise), or it has no
// run.requested long after it was listed — and is dropped when the list is
// full (see pruneTree), at most once per pruneEvery per root and engine.

// treeRecord is the value of a tree key.
type treeRecord struct {
	Runs []treeEntry `json:"runs"`
	// Engine and At name the write, so that a write whose answer was lost
	// is recognised by its value (see events.KV).
	Engine string    `json:"engine"`
	At     time.Time `json:"at"`
}

// treeEntry is one live descendant.
type treeEntry struct {
	Run    string `json:"run"`
	Parent string `json:"parent"`
	At     int64  `json:"at"` // when it was listed, in Unix seconds
}

const (
	// pruneEvery bounds how often one engine looks for stale entries of
	// one full tree: each look reads the log once per entry.
	pruneEvery = 10 * time.Second
	// unrequestedAfter is how long an entry may wait for its run's
	// run.requested before it is taken for one whose request was never
	// sent: far longer than a run request waits in the queue.
	unrequestedAfter = 5 * time.Minute
	// treeTries bounds the compare-and-set rounds of one change.
	treeTries = 50
)

func treeKey(root string) string { return "tree." + events.Token(root) }

// readTree returns the tree of root and its revision (0: no key).
func readTree(ctx context.Context, kv *events.KV, root string, latest bool) (treeRecord, uint64, error) {
	get := kv.Get
	if latest {
		get = kv.Latest
	}
	e, err := get(ctx, treeKey(root))
	if errors.Is(err, events.ErrNotFound) {
		return treeRecord{}, 0, nil
	}
	if err != nil {
		return treeRecord{}, 0, err
	}
	var rec treeRecord
	if err := json.Unmarshal(e.Value, &rec); err != nil {
		return treeRecord{}, 0, fmt.Errorf("tree of %s: %w", root, err)
	}
	return rec, e.Revision, nil
}

// changeTree applies change to the tree of root by compare-and-set until a
// write holds or change says there is nothing to write (false). An empty
// list deletes the key. A bucket that does not answer (its stream electing
// a leader on a cluster) is asked again for up to events.ElectionWindow.
func (o *Orchestrator) changeTree(ctx context.Context, root string, change func(*treeRecord) (bool, error)) error {
	kv := o.cfg.Log.Leases()
	latest := false
	deadline := time.Now().Add(events.ElectionWindow)
	for conflicts := 0; conflicts < treeTries; {
		rec, rev, err := readTree(ctx, kv, root, latest)
		if err == nil {
			var write bool
			if write, err = change(&rec); err != nil || !write {
				return err
			}
			err = o.writeTree(ctx, kv, root, rec, rev)
			if err == nil {
				return nil
			}
		}
		switch {
		case errors.Is(err, events.ErrConflict):
			// Another engine changed the tree: read it again, at its leader.
			conflicts++
			latest = true
		case errors.Is(err, events.ErrUnavailable) && time.Now().Before(deadline):
			select {
			case <-time.After(250 * time.Millisecond):
			case <-ctx.Done():
				return err
			}
		default:
			return err
		}
	}
	return fmt.Errorf("%w: tree of %s: changed by others %d times in a row", events.ErrConflict, root, treeTries)
}

// writeTree writes rec as the tree of root at revision rev (0: no key).
func (o *Orchestrator) writeTree(ctx context.Context, kv *events.KV, root string, rec treeRecord, rev uint64) error {
	switch {
	case len(rec.Runs) == 0 && rev == 0:
		return nil
	case len(rec.Runs) == 0:
		return kv.Delete(ctx, treeKey(root), rev)
	}
	rec.Engine, rec.At = o.cfg.Engine, time.Now().UTC()
	value, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	if rev == 0 {
		_, err = kv.Create(ctx, treeKey(root), value)
	} else {
		_, err = kv.Update(ctx, treeKey(root), value, rev)
	}
	return err
}

// holdDescendant lists child, started by parent, among the live runs below
// root, unless limit runs are listed already (interpreter.ErrTreeFull); limit 0 lists
// it whatever the count (a run that lives again). A child listed already
// is left as it is.
func (o *Orchestrator) holdDescendant(ctx context.Context, root, parent, child string, limit int) error {
	pruned := false
	for {
		full := false
		err := o.changeTree(ctx, root, func(rec *treeRecord) (bool, error) {
			if slices.ContainsFunc(rec.Runs, func(e treeEntry) bool { return e.Run == child }) {
				return false, nil
			}
			if limit > 0 && len(rec.Runs) >= limit {
				full = true
				return false, nil
			}
			rec.Runs = append(rec.Runs, treeEntry{Run: child, Parent: parent, At: time.Now().Unix()})
			return true, nil
		})
		if err != nil || !full {
			return err
		}
		if pruned || !o.pruneTree(ctx, root) {
			return interpreter.ErrTreeFull
		}
		pruned = true
	}
}

// dropDescendant removes run from the live runs below root.
func (o *Orchestrator) dropDescendant(ctx context.Context, root, run string) error {
	return o.changeTree(ctx, root, func(rec *treeRecord) (bool, error) {
		n := len(rec.Runs)
		rec.Runs = slices.DeleteFunc(rec.Runs, func(e treeEntry) bool { return e.Run == run })
		return len(rec.Runs) < n, nil
	})
}

// pruneTree drops the stale entries of root's tree (see the top of this
// file) and reports whether it dropped any. It looks at most once per
// pruneEvery per root.
func (o *Orchestrator) pruneTree(ctx context.Context, root string) bool {
	o.mu.Lock()
	if time.Since(o.pruned[root]) < pruneEvery {
		o.mu.Unlock()
		return false
	}
	o.pruned[root] = time.Now()
	o.mu.Unlock()

	rec, _, err := readTree(ctx, o.cfg.Log.Leases(), root, true)
	if err != nil {
		o.log.Warn("reading a run tree", "root", root, "err", err)
		return false
	}
	stale := map[string]bool{}
	for _, e := range rec.Runs {
		ended, err := o.ended(ctx, e)
		if err != nil {
			o.log.Warn("checking a run of a tree", "root", root, "run", e.Run, "err", err)
			return false
		}
		if ended {
			stale[e.Run] = true
		}
	}
	if len(stale) == 0 {
		return false
	}
	err = o.changeTree(ctx, root, func(rec *treeRecord) (bool, error) {
		n := len(rec.Runs)
		rec.Runs = slices.DeleteFunc(rec.Runs, func(e treeEntry) bool { return stale[e.Run] })
		return len(rec.Runs) < n, nil
	})
	if err != nil {
		o.log.Warn("dropping ended runs of a tree", "root", root, "err", err)
		return false
	}
	o.log.Info("dropped runs that ended from a run tree", "root", root, "runs", len(stale))
	return true
}

// ended reports whether a listed run no longer counts: it has finished
// since its last budget raise, or it was never requested although listed
// long ago.
func (o *Orchestrator) ended(ctx context.Context, e treeEntry) (bool, error) {
	finished, err := o.sinceRaise(ctx, e.Run, events.RunFinished)
	if err != nil || finished {
		return finished, err
	}
	if time.Since(time.Unix(e.At, 0)) < unrequestedAfter {
		return false, nil
	}
	requested, err := o.cfg.Log.LastMatching(ctx, []string{events.EventSubject(events.AggregateRun, e.Run, events.RunRequested)})
	return requested == 0, err
}

// releaseDescendant removes a run that ended from its root's tree. A
// failure is logged: the entry is then dropped as stale when the tree is
// full.
func (o *Orchestrator) releaseDescendant(ctx context.Context, rc *runCtl) {
	if rc.root == "" {
		return
	}
	if err := o.dropDescendant(ctx, rc.root, rc.id); err != nil && ctx.Err() == nil {
		o.log.Warn("removing a run that ended from its tree", "run", rc.id, "root", rc.root, "err", err)
	}
}
