package interpreter

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
)

// fanOut runs the worker step once per item, at most max_workers items at a
// time, each in its own pipeline context whose input has `item` set (and
// where {{ item }} is the item). Item i's worker instance key is <key>/<i>
// (1-based). The output — also visible under fan_in.collect — is the list of
// the workers' outputs in item order (null where one failed); fan_in.join
// decides whether the step succeeded.
func (x *Interpreter) fanOut(ctx context.Context, sc *scope, st *assets.Step, key string, attempt int) (assets.StepResult, *events.ErrorInfo) {
	fo := st.FanOut
	items, err := x.renderItems(sc, fo.Items, fo.ItemList)
	if err != nil {
		failed := &events.ErrorInfo{Kind: events.KindValidation, Message: "fan_out.items: " + err.Error(), StepKey: key}
		return x.finishStructural(ctx, key, attempt, sc.parent, assets.StepResult{}, failed)
	}
	// From step protocol 4 on the fan-out records its scope's input once,
	// and the steps that take an item's input as it is name it by
	// reference (see events.ItemInput): a fan-out of n items records its
	// list once, not n times.
	// A fan-out inside another's item, taking the item's input as it is,
	// names that input by reference in turn.
	byRef := x.cfg.Protocol >= 4
	started := events.StepStartedData{Attempt: attempt, ActivityType: events.TypeFanOut,
		Input: map[string]any{"items": items, "max_workers": fo.MaxWorkers}}
	switch {
	case byRef && sc.item != nil:
		started.Item = &events.ItemInput{Of: sc.item.id, Seq: sc.item.seq, Index: sc.item.index, Value: sc.item.value}
	case byRef:
		started.Input.(map[string]any)[events.FanOutScopeInput] = sc.input
	}
	startedID := StepEventID(events.StepStarted, x.runID, key, attempt)
	seq, err := x.recordSeq(ctx, events.Event{ID: startedID, Type: events.StepStarted, StepKey: key, ParentID: sc.parent}, started)
	if err != nil {
		return failedResult(key, internal(ctx, err))
	}
	prefix := childPrefix(key, attempt)
	// The members the items' inputs share, encoded once.
	shared := encodeMembers(sc.input)
	limit := max(1, fo.MaxWorkers)
	slots := make(chan struct{}, limit)
	results := make([]assets.StepResult, len(items))
	failures := make([]*events.ErrorInfo, len(items))
	var wg sync.WaitGroup
	// The items' first events are sent in item order.
	order := turns(len(items))
	for i, item := range items {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			ctx := withTurn(ctx, order[i])
			defer passTurn(ctx)
			index := i + 1
			itemKey := prefix + strconv.Itoa(index)
			if x.isCancelled() {
				results[i], failures[i] = failedResult(itemKey, x.cancelFailure(itemKey))
				return
			}
			// Under protocol 1 the item has an event of its own; from 2 on
			// its worker's step.started, which holds the item in its
			// input, is its first.
			var recorded recording
			if x.cfg.Protocol < 2 {
				var err error
				recorded, err = x.recordAsync(ctx, events.Event{ID: events.DecisionID(events.FanoutItem, x.runID, key, strconv.Itoa(attempt), strconv.Itoa(index)),
					Type: events.FanoutItem, StepKey: itemKey, ParentID: startedID},
					events.FanoutItemData{Attempt: attempt, Index: index, Item: item})
				if err != nil {
					results[i], failures[i] = failedResult(itemKey, internal(ctx, err))
					return
				}
			}
			wsc := sc.fork(itemKey+"/", startedID)
			wsc.setInput(with(sc.input, map[string]any{"item": item}))
			wsc.inputEnc = withEncoded(shared, "item", item)
			if byRef && wsc.inputEnc != nil {
				wsc.item = &itemRef{seq: seq, id: startedID, index: index, value: item}
			}
			wsc.itemValue, wsc.hasItem = item, true
			results[i], failures[i] = x.step(ctx, wsc, &fo.Worker, itemKey)
			if err := recorded.wait(ctx); err != nil && failures[i] == nil {
				results[i], failures[i] = failedResult(itemKey, internal(ctx, err))
			}
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		return failedResult(key, internal(ctx, ctx.Err()))
	}

	outputs := make([]any, len(items))
	members := make([]events.JoinMember, len(items))
	keys := make([]string, len(items))
	null := make([]bool, len(items)) // a failed or skipped item's output
	for i := range items {
		keys[i] = prefix + strconv.Itoa(i+1)
		members[i] = member(keys[i], results[i], failures[i])
		if failures[i] == nil {
			outputs[i] = results[i].Output
		}
		null[i] = outputs[i] == nil
	}
	var join assets.Join
	if st.FanIn != nil {
		join = st.FanIn.Join
	}
	failed := x.joinResult(ctx, key, attempt, startedID, join, members)
	// Recorded from the items' outputs as their events hold them, when
	// they all are known; returned as the values.
	recorded := assets.StepResult{State: events.StateSuccess, Output: outputs}
	enc, known := x.encoded.list(keys, null)
	if known {
		recorded.Output = enc
	}
	res, failed := x.finishStructural(ctx, key, attempt, startedID, recorded, failed)
	if failed == nil {
		res.Output = outputs
		if known {
			x.encoded.put(key, enc)
		}
	}
	if st.FanIn != nil && st.FanIn.Collect != "" {
		sc.record(st.FanIn.Collect, res)
	}
	return res, failed
}

// renderItems renders the items of a fan_out or loop to a list. A list
// written in YAML is rendered element by element (its strings are
// templates). A template renders to a JSON array as is, to a string that
// holds a JSON array as that array, and to any other string as a comma- or
// space-separated list of strings; to nothing as no items. A mapping, number
// or bool is not a list: that is an error, never one item.
func (x *Interpreter) renderItems(sc *scope, text string, list []any) ([]any, error) {
	src := any(text)
	if list != nil {
		src = list
	}
	v, err := assets.RenderValue(src, sc.templates(sc.input, x.env))
	if err != nil {
		return nil, err
	}
	switch t := v.(type) {
	case []any:
		return t, nil
	case string:
		var list []any
		if json.Unmarshal([]byte(t), &list) == nil {
			return list, nil
		}
		items := []any{}
		for _, f := range strings.FieldsFunc(t, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' }) {
			items = append(items, f)
		}
		return items, nil
	case nil:
		return []any{}, nil
	case map[string]any:
		return nil, fmt.Errorf("%s rendered a mapping: %w", text, ErrNotAList)
	}
	return nil, fmt.Errorf("%s rendered %v: %w", text, v, ErrNotAList)
}
