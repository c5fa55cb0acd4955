package projector

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"

	bolt "go.etcd.io/bbolt"

	"github.com/orbitrun/orbit/events"
)

// RunFilter selects runs for Runs.
type RunFilter struct {
	// Job keeps runs of this job only; empty means every job.
	Job string
	// Limit bounds how many runs are returned; 0 means no limit.
	Limit int
	// States keeps runs in one of these states; empty means any state.
	States []string
	// TopLevel keeps runs that no other run started (no child runs).
	TopLevel bool
}

// RunView returns a run with its steps, in the order they were first seen.
// A run the views do not hold is an error wrapping ErrNotFound.
func (p *Projector) RunView(ctx context.Context, id string) (*RunView, error) {
	var v *RunView
	err := p.read(ctx, func(tx *bolt.Tx) (err error) {
		if v, err = getRun(tx, id); err != nil {
			return err
		}
		return loadSteps(tx, v)
	})
	if err != nil {
		return nil, err
	}
	return v, nil
}

// LatestRun returns the most recent top-level run (not a child run started
// by another), of job when it is not empty, with its steps. Runs are ordered
// by id, and run ids are ULIDs, so the most recent run is the one requested
// last. No run at all is an error wrapping
// ErrNotFound.
func (p *Projector) LatestRun(ctx context.Context, job string) (*RunView, error) {
	var v *RunView
	err := p.read(ctx, func(tx *bolt.Tx) error {
		runs, err := scanRuns(tx, RunFilter{Job: job, Limit: 1, TopLevel: true})
		if err != nil {
			return err
		}
		if len(runs) == 0 {
			if job == "" {
				return notFound("there are no runs yet")
			}
			return notFound("job %s has no runs", job)
		}
		v = &runs[0]
		return loadSteps(tx, v)
	})
	if err != nil {
		return nil, err
	}
	return v, nil
}

// Runs returns the runs f selects, newest first, without their steps.
func (p *Projector) Runs(ctx context.Context, f RunFilter) ([]RunView, error) {
	var runs []RunView
	err := p.read(ctx, func(tx *bolt.Tx) (err error) {
		runs, err = scanRuns(tx, f)
		return err
	})
	if err != nil {
		return nil, err
	}
	return runs, nil
}

// CountRuns returns how many runs f selects, its Limit aside. Without
// States or TopLevel it counts the index's keys and decodes no run.
func (p *Projector) CountRuns(ctx context.Context, f RunFilter) (int, error) {
	n := 0
	err := p.read(ctx, func(tx *bolt.Tx) error {
		if len(f.States) > 0 || f.TopLevel {
			f.Limit = 0
			runs, err := scanRuns(tx, f)
			n = len(runs)
			return err
		}
		if f.Job == "" {
			if b := tx.Bucket(bucketRuns); b != nil {
				n = b.Stats().KeyN
			}
			return nil
		}
		b := tx.Bucket(bucketRunsByJob)
		if b == nil {
			return nil
		}
		prefix := jobKey(f.Job, "")
		c := b.Cursor()
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			n++
		}
		return nil
	})
	return n, err
}

// ActiveRuns returns the runs that are pending or running, in the order they
// were requested: the order in which the orchestrator resumes them. It reads
// an index the fold maintains, not every run.
func (p *Projector) ActiveRuns(ctx context.Context) ([]ActiveRun, error) {
	var active []ActiveRun
	err := p.read(ctx, func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketRunsActive)
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, raw []byte) error {
			var a ActiveRun
			if err := unmarshal(raw, &a); err != nil {
				return fmt.Errorf("projector: active run %s: %w", k, err)
			}
			active = append(active, a)
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	return active, nil
}

func getRun(tx *bolt.Tx, id string) (*RunView, error) {
	var raw []byte
	if b := tx.Bucket(bucketRuns); b != nil {
		raw = b.Get([]byte(id))
	}
	if raw == nil {
		return nil, notFound("no run %s", id)
	}
	var v RunView
	if err := unmarshal(raw, &v); err != nil {
		return nil, fmt.Errorf("projector: run %s: %w", id, err)
	}
	return &v, nil
}

// loadSteps fills v.Steps from the steps bucket.
func loadSteps(tx *bolt.Tx, v *RunView) error {
	b := tx.Bucket(bucketSteps)
	if b == nil {
		return nil
	}
	prefix := []byte(stepKey(v.ID, ""))
	c := b.Cursor()
	for k, raw := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, raw = c.Next() {
		var s StepView
		if err := unmarshal(raw, &s); err != nil {
			return fmt.Errorf("projector: step %q of run %s: %w", k[len(prefix):], v.ID, err)
		}
		v.Steps = append(v.Steps, s)
	}
	slices.SortStableFunc(v.Steps, func(a, b StepView) int {
		return cmp.Or(cmp.Compare(a.Order, b.Order), cmp.Compare(a.Key, b.Key))
	})
	fillItemInputs(v)
	return nil
}

// fillItemInputs sets the input of each step whose step.started named its
// fan-out item's input by reference: the scope input its fan-out's
// step.started records, with the item set. The view stores the scope input
// once, with the fan-out, as the log does; a nested fan-out's is its own
// item's input, found the same way.
func fillItemInputs(v *RunView) {
	var fanOuts map[string]*StepView // by the ids of their attempts' step.started
	scopes := map[*StepView]any{}
	var scopeOf func(f *StepView, depth int) (any, bool)
	scopeOf = func(f *StepView, depth int) (any, bool) {
		if scope, ok := scopes[f]; ok {
			return scope, true
		}
		recorded, _ := f.Input.(map[string]any)
		scope, ok := recorded[events.FanOutScopeInput]
		if !ok {
			if f.Item == nil || fanOuts[f.Item.Of] == nil || depth > len(v.Steps) {
				return nil, false
			}
			outer, ok := scopeOf(fanOuts[f.Item.Of], depth+1)
			if !ok {
				return nil, false
			}
			scope = events.WithItem(outer, f.Item.Value)
		}
		scopes[f] = scope
		return scope, true
	}
	for i := range v.Steps {
		s := &v.Steps[i]
		if s.Item == nil || s.ActivityType == events.TypeFanOut {
			continue
		}
		if fanOuts == nil {
			fanOuts = map[string]*StepView{}
			for j := range v.Steps {
				if f := &v.Steps[j]; f.ActivityType == events.TypeFanOut {
					for a := 1; a <= f.Attempts; a++ {
						fanOuts[events.DecisionID(events.StepStarted, v.ID, f.Key, strconv.Itoa(a))] = f
					}
				}
			}
		}
		if f := fanOuts[s.Item.Of]; f != nil {
			if scope, ok := scopeOf(f, 0); ok {
				s.Input = events.WithItem(scope, s.Item.Value)
			}
		}
	}
}

// scanRuns walks runs newest first: the whole runs bucket, or the job index
// when f names a job.
func scanRuns(tx *bolt.Tx, f RunFilter) ([]RunView, error) {
	var runs []RunView
	keep := func(v RunView) bool {
		if (len(f.States) == 0 || slices.Contains(f.States, v.State)) && (!f.TopLevel || v.Parent == nil) {
			runs = append(runs, v)
		}
		return f.Limit <= 0 || len(runs) < f.Limit
	}
	if f.Job == "" {
		b := tx.Bucket(bucketRuns)
		if b == nil {
			return nil, nil
		}
		c := b.Cursor()
		for k, raw := c.Last(); k != nil; k, raw = c.Prev() {
			var v RunView
			if err := unmarshal(raw, &v); err != nil {
				return nil, fmt.Errorf("projector: run %s: %w", k, err)
			}
			if !keep(v) {
				break
			}
		}
		return runs, nil
	}
	b := tx.Bucket(bucketRunsByJob)
	if b == nil {
		return nil, nil
	}
	prefix := jobKey(f.Job, "")
	c := b.Cursor()
	// Start after the last key with the prefix: the first key past
	// job + "\x00" is at or after job + "\x01".
	k, _ := c.Seek(jobKeyEnd(f.Job))
	if k == nil {
		k, _ = c.Last()
	} else {
		k, _ = c.Prev()
	}
	for ; k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Prev() {
		v, err := getRun(tx, string(k[len(prefix):]))
		if err != nil {
			return nil, err
		}
		if !keep(*v) {
			break
		}
	}
	return runs, nil
}

// jobKeyEnd sorts right after every key of job in the job index.
func jobKeyEnd(job string) []byte { return []byte(job + "\x01") }
