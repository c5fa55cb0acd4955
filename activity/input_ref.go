package activity

import (
	"context"
	"errors"
	"math"
	"slices"
	"sync"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/interpreter"
)

// scopeInputs is how many fan-outs' scope inputs a worker keeps decoded:
// the items of a fan-out arrive together, so the few fan-outs running now
// are enough.
const scopeInputs = 16

// scopeCache holds the decoded scope inputs of the fan-outs whose items a
// worker ran last (see resolveInput), by run and step.started id. An entry
// is read once: the items arriving while it is read wait for it.
type scopeCache struct {
	mu      sync.Mutex
	entries map[string]*scopeEntry
	order   []string // keys, oldest first
}

type scopeEntry struct {
	done  chan struct{}
	input any
	err   error
}

// get returns the scope input of the fan-out step.started key names,
// reading it with read when it is not kept. A failed read is not kept.
func (c *scopeCache) get(key string, read func() (any, error)) (any, error) {
	c.mu.Lock()
	if c.entries == nil {
		c.entries = map[string]*scopeEntry{}
	}
	if e, ok := c.entries[key]; ok {
		c.mu.Unlock()
		<-e.done
		return e.input, e.err
	}
	e := &scopeEntry{done: make(chan struct{})}
	c.entries[key] = e
	c.order = append(c.order, key)
	if len(c.order) > scopeInputs {
		delete(c.entries, c.order[0])
		c.order = c.order[1:]
	}
	c.mu.Unlock()
	e.input, e.err = read()
	close(e.done)
	if e.err != nil {
		c.mu.Lock()
		if c.entries[key] == e {
			delete(c.entries, key)
			c.order = slices.DeleteFunc(c.order, func(k string) bool { return k == key })
		}
		c.mu.Unlock()
	}
	return e.input, e.err
}

// resolveInput puts a command's input in place of its InputRef (step
// protocol 4 on): the scope input the fan-out's step.started records, with
// the item set, as the interpreter set it (events.WithItem). The scope
// input is shared by the fan-out's items and never changed: the merge
// makes a new top level, and resolveSecrets, which runs next, copies the
// whole input before anything reads it.
//
// A reference that names no step.started of the command's run that
// records a scope input, or one the log cannot give back (one that fails
// its integrity check), fails the attempt (an interpreter.Failure); a log
// that is unavailable now, or a read cut short, is returned as it is, for a
// later delivery.
func (w *Worker) resolveInput(ctx context.Context, cmd *interpreter.StepCommand) error {
	ref := cmd.InputRef
	if ref == nil {
		return nil
	}
	scope, err := w.scopeInput(ctx, cmd.RunID, ref.Seq, ref.ID, math.MaxUint64)
	var failure *interpreter.Failure
	switch {
	case err == nil:
	case errors.As(err, &failure), errors.Is(err, events.ErrUnavailable),
		errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	default:
		return interpreter.Fail(events.KindInternal, false, "the item's input: reading step.started %s at sequence %d: %v", ref.ID, ref.Seq, err)
	}
	cmd.Input, cmd.InputRef = events.WithItem(scope, ref.Item), nil
	return nil
}

// scopeInput returns the scope input of run runID's fan-out step.started
// id, stored at seq, from the cache or the log; the event must be stored
// before the sequence before (what names it: a reference only ever names
// an earlier event, so a chain of them ends).
func (w *Worker) scopeInput(ctx context.Context, runID string, seq uint64, id string, before uint64) (any, error) {
	return w.scopes.get(runID+"\x00"+id, func() (any, error) { return w.readScopeInput(ctx, runID, seq, id, before) })
}

// readScopeInput reads the scope input the fan-out step.started id
// records: at its sequence, or, if the event there is not it (a log
// restored elsewhere), among the run's step.started events. A nested
// fan-out's is its item's input (its Item), read from its own fan-out's.
func (w *Worker) readScopeInput(ctx context.Context, runID string, seq uint64, id string, before uint64) (any, error) {
	ev, err := w.cfg.Log.EventAt(ctx, seq)
	switch {
	case err == nil && ev.ID == id && ev.RunID == runID:
		if ev, err = w.cfg.Log.Expand(ctx, ev); err != nil {
			return nil, err
		}
	case err == nil || errors.Is(err, events.ErrNotFound) || errors.Is(err, events.ErrRemoved):
		evs, err := w.cfg.Log.Read(ctx, events.FollowOptions{Filters: []string{events.EventSubject(events.AggregateRun, runID, events.StepStarted)}})
		if err != nil {
			return nil, err
		}
		ev = events.Event{}
		for _, e := range evs {
			if e.ID == id {
				ev = e
				break
			}
		}
		if ev.ID == "" {
			return nil, interpreter.Fail(events.KindInternal, false,
				"the item's input: run %s has no step.started %s (named at sequence %d) to read it from", runID, id, seq)
		}
	default:
		return nil, err
	}
	var d struct {
		ActivityType string            `json:"activity_type"`
		Input        map[string]any    `json:"input"`
		Item         *events.ItemInput `json:"item"`
	}
	if err := ev.Decode(&d); err != nil {
		return nil, interpreter.Fail(events.KindInternal, false, "the item's input: %v", err)
	}
	scope, ok := d.Input[events.FanOutScopeInput]
	switch {
	case d.ActivityType != events.TypeFanOut || ev.Seq >= before:
	case ok:
		return scope, nil
	case d.Item != nil:
		outer, err := w.scopeInput(ctx, runID, d.Item.Seq, d.Item.Of, ev.Seq)
		if err != nil {
			return nil, err
		}
		return events.WithItem(outer, d.Item.Value), nil
	}
	return nil, interpreter.Fail(events.KindInternal, false,
		"the item's input: step.started %s of run %s records no fan-out scope input", id, runID)
}
