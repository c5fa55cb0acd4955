package interpreter

import (
	"context"
	"fmt"
	"strconv"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
)

// loop runs its steps once per item, or up to max_iterations times, in one
// pipeline context shared by the iterations; after each iteration it
// evaluates break_when. Iteration i's steps have keys <key>/<i>/<id>
// (1-based) and see {{ iteration }} and input.iteration (and item when the
// loop is over items). More items than max_iterations is a structural
// failure, not a truncation. A loop that never breaks ends successfully
// after its last iteration. The output is an object of the last
// iteration's outputs by step id.
func (x *Interpreter) loop(ctx context.Context, sc *scope, st *assets.Step, key string, attempt int) (assets.StepResult, *events.ErrorInfo) {
	lp := st.Loop
	var items []any
	if lp.OverItems() {
		var err error
		if items, err = x.renderItems(sc, lp.Items, lp.ItemList); err != nil {
			failed := &events.ErrorInfo{Kind: events.KindValidation, Message: "loop.items: " + err.Error(), StepKey: key}
			return x.finishStructural(ctx, key, attempt, sc.parent, assets.StepResult{}, failed)
		}
		if len(items) > lp.MaxIterations {
			failed := &events.ErrorInfo{Kind: events.KindStructural, StepKey: key,
				Message: fmt.Sprintf("loop.items has %d items but max_iterations is %d", len(items), lp.MaxIterations)}
			return x.finishStructural(ctx, key, attempt, sc.parent, assets.StepResult{}, failed)
		}
	}
	input := map[string]any{"max_iterations": lp.MaxIterations}
	if items != nil {
		input["items"] = items
	}
	startedID, err := x.structural(ctx, sc, key, attempt, events.TypeLoop, input)
	if err != nil {
		return failedResult(key, internal(ctx, err))
	}
	iterations := lp.MaxIterations
	if items != nil {
		iterations = len(items)
	}
	prefix := childPrefix(key, attempt)
	shared := sc.fork(prefix, startedID)
	for i := 1; i <= iterations; i++ {
		isc := shared.within(prefix+strconv.Itoa(i)+"/", startedID)
		extra := map[string]any{"iteration": float64(i)}
		isc.iteration = i
		var item any
		if items != nil {
			item = items[i-1]
			extra["item"] = item
			isc.itemValue, isc.hasItem = item, true
		}
		isc.setInput(with(sc.input, extra))

		_, failed := x.steps(ctx, isc, lp.Steps)
		iterID := events.DecisionID(events.LoopIteration, x.runID, key, strconv.Itoa(attempt), strconv.Itoa(i))
		it := events.LoopIterationData{Attempt: attempt, Iteration: i, Item: item, State: events.StateSuccess}
		if failed != nil {
			if ctx.Err() != nil {
				return failedResult(key, failed)
			}
			it.State = FailedState(failed)
			if err := x.record(ctx, events.Event{ID: iterID, Type: events.LoopIteration, StepKey: key, ParentID: startedID}, it); err != nil {
				return failedResult(key, internal(ctx, err))
			}
			publishResults(sc, shared, lp.Steps)
			return x.finishStructural(ctx, key, attempt, startedID, assets.StepResult{}, failed)
		}
		brk, failed := x.breakWhen(isc, lp, iterID)
		if failed != nil {
			failed.StepKey = key
			publishResults(sc, shared, lp.Steps)
			return x.finishStructural(ctx, key, attempt, startedID, assets.StepResult{}, failed)
		}
		it.Break = brk
		if err := x.record(ctx, events.Event{ID: iterID, Type: events.LoopIteration, StepKey: key, ParentID: startedID}, it); err != nil {
			return failedResult(key, internal(ctx, err))
		}
		if brk {
			break
		}
	}
	out := publishResults(sc, shared, lp.Steps)
	return x.finishStructural(ctx, key, attempt, startedID, assets.StepResult{State: events.StateSuccess, Output: out}, nil)
}

// breakWhen evaluates a loop's break_when after an iteration, or reads the
// decision back from the iteration's record.
func (x *Interpreter) breakWhen(isc *scope, lp *assets.Loop, iterID string) (bool, *events.ErrorInfo) {
	if ev, ok := x.hist.Get(iterID); ok {
		var d events.LoopIterationData
		if err := ev.Decode(&d); err != nil {
			return false, &events.ErrorInfo{Kind: events.KindInternal, Message: err.Error()}
		}
		return d.Break, nil
	}
	if lp.BreakWhen == "" {
		return false, nil
	}
	cond, err := assets.ParseCondition(lp.BreakWhen)
	if err != nil {
		return false, &events.ErrorInfo{Kind: events.KindValidation, Message: "break_when: " + err.Error()}
	}
	brk, err := cond.Eval(isc.templates(isc.input, x.env))
	if err != nil {
		return false, &events.ErrorInfo{Kind: events.KindValidation, Message: "break_when: " + err.Error()}
	}
	return brk, nil
}

// publishResults makes the loop body's last results visible after the loop
// under their ids, and returns them as the loop's output.
func publishResults(sc, shared *scope, steps []assets.Step) map[string]any {
	out := map[string]any{}
	for i := range steps {
		id := steps[i].ID
		if res, ok := shared.results[id]; ok {
			sc.record(id, res)
			out[id] = res.Output
		}
	}
	return out
}
