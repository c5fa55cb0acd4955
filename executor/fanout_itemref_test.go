package executor_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/executor"
	"github.com/orbitrun/orbit/internal/runrig"
	"github.com/orbitrun/orbit/internal/testkit"
	"github.com/orbitrun/orbit/interpreter"
)

// itemRefJob fans out over input.items, each item running a parallel of
// an echo action (whose output is its input, as its worker got it, merged
// with its config) and a shell step reading the item and the input; and
// over input.groups, each group fanning out again over its members.
const itemRefJob = `
schemaVersion: 2
kind: Job
metadata: {name: itemref}
spec:
  steps:
    - id: fan
      fan_out:
        items: "{{ input.items }}"
        max_workers: 3
        worker:
          id: w
          parallel:
            branches:
              - id: echo
                spec: {type: deterministic, action: echo, config: {seen: "{{ item }}"}}
              - id: sh
                spec:
                  type: shell
                  program: sh
                  args: ["-c", "printf '%s|%s' \"$1\" \"$2\"", "sh", "{{ item }}", "{{ input.extra.k }}"]
                  allowed_programs: [sh]
      fan_in: {join: {mode: all}}
    - id: outer
      fan_out:
        items: "{{ input.groups }}"
        worker:
          id: inner
          fan_out:
            items: "{{ item }}"
            worker:
              id: e
              spec: {type: deterministic, action: echo}
          fan_in: {join: {mode: all}}
      fan_in: {join: {mode: all}}
`

var itemRefInput = map[string]any{
	"items":  []any{"a", 2.5, map[string]any{"z": 1, "a": []any{true, nil}}, "é<&>"},
	"groups": []any{[]any{"x", "y"}, []any{"z"}},
	"extra":  map[string]any{"k": "v w"},
	"item":   "the job's own, replaced in each item",
}

// startedOf decodes the run's step.started events by step key (the last
// attempt's).
func startedOf(t *testing.T, hist []events.Event) map[string]events.StepStartedData {
	t.Helper()
	out := map[string]events.StepStartedData{}
	for _, ev := range runrig.Starts(hist) {
		d, ok := events.StepStart(ev)
		require.True(t, ok)
		out[ev.StepKey] = d
	}
	return out
}

// outputsOf is the outputs of the run's activity steps by step key.
func outputsOf(t *testing.T, hist []events.Event, started map[string]events.StepStartedData) map[string]any {
	t.Helper()
	out := map[string]any{}
	for _, ev := range runrig.OfType(hist, events.StepFinished) {
		if k := started[ev.StepKey].ActivityType; k == assets.TypeDeterministic || k == assets.TypeShell {
			var d events.StepFinishedData
			require.NoError(t, ev.Decode(&d))
			out[ev.StepKey] = d.Output
		}
	}
	return out
}

// TestFanOutItemInputsByReference runs one job under step protocol 3 and
// under 4: under 4 the items' steps record a reference instead of their
// input, yet their workers get the same inputs (the echo action's outputs
// are the same), their shell steps see the same items, and the views show
// the same inputs; a parallel inside an item and a fan-out inside an item
// take the reference too (the inner fan-out names its item's input in
// turn, so its step.started does not hold the outer list either).
func TestFanOutItemInputsByReference(t *testing.T) {
	t.Parallel()
	ctx := testkit.Context(t)
	log := testkit.StartLog(t, events.Config{Durability: events.DurabilityRelaxed})
	job := runrig.ParseJob(t, itemRefJob)
	old := runrig.RequestUnder(t, log, job, itemRefInput, 3)
	runrig.StartEngine(t, log, t.TempDir(), resuming(old))
	require.Equal(t, events.StateSuccess, runrig.WaitFinished(t, log, old).State)
	runID, fin := runrig.RunJob(t, log, job, itemRefInput)
	require.Equal(t, events.StateSuccess, fin.State, "%+v", fin.Error)

	oldHist, hist := runrig.History(t, log, old), runrig.History(t, log, runID)
	oldStarted, started := startedOf(t, oldHist), startedOf(t, hist)
	require.Equal(t, len(oldStarted), len(started))

	// The workers got the same inputs and items.
	oldOut, out := outputsOf(t, oldHist, oldStarted), outputsOf(t, hist, started)
	assert.Len(t, out, 4*2+3)
	assert.Equal(t, oldOut, out)
	assert.Equal(t, map[string]any{"stdout": "é<&>|v w", "stderr": "", "exit_code": 0.0}, out["fan/4/sh"])

	// What protocol 4 records: the fan-outs their scope input, the items'
	// steps a reference to it.
	byKey := map[string]events.Event{}
	for _, ev := range runrig.OfType(hist, events.StepStarted) {
		byKey[ev.StepKey] = ev
	}
	decoded := func(v any) any {
		raw, err := json.Marshal(v)
		require.NoError(t, err)
		var out any
		require.NoError(t, json.Unmarshal(raw, &out))
		return out
	}
	assert.Equal(t, decoded(itemRefInput), started["fan"].Input.(map[string]any)[events.FanOutScopeInput])
	assert.NotContains(t, oldStarted["fan"].Input, events.FanOutScopeInput, "protocol 3 records what it did")
	// A fan-out's scope input: recorded, or, for one inside another's
	// item, that item's input by reference.
	var scopeOf func(key string) any
	scopeOf = func(key string) any {
		d := started[key]
		if scope, ok := d.Input.(map[string]any)[events.FanOutScopeInput]; ok {
			assert.Nil(t, d.Item, key)
			return scope
		}
		require.NotNil(t, d.Item, "%s records its scope input or names it", key)
		outer := key[:strings.LastIndexByte(key, '/')]
		assert.Equal(t, byKey[outer].ID, d.Item.Of, key)
		assert.Equal(t, byKey[outer].Seq, d.Item.Seq, key)
		return events.WithItem(scopeOf(outer), d.Item.Value)
	}
	require.NotNil(t, started["outer/1"].Item, "a fan-out inside an item names the item's input")
	refs := 0
	for key, d := range started {
		o := oldStarted[key]
		if d.ActivityType != assets.TypeDeterministic && d.ActivityType != assets.TypeShell {
			continue
		}
		require.NotNil(t, d.Item, key)
		assert.Nil(t, d.Input, key)
		assert.Nil(t, o.Item, key)
		// An item's step is the fan-out's key and the item's number, or
		// that and a branch.
		segs := strings.Split(key, "/")
		fanKey := strings.Join(segs[:len(segs)-1], "/")
		if strings.HasSuffix(key, "/echo") || strings.HasSuffix(key, "/sh") {
			fanKey = strings.Join(segs[:len(segs)-2], "/")
		}
		assert.Equal(t, byKey[fanKey].ID, d.Item.Of, key)
		want := events.WithItem(scopeOf(fanKey), d.Item.Value)
		assert.Equal(t, o.Input, want, "%s: the reference stands for the input protocol 3 records", key)
		refs++
	}
	assert.Equal(t, 4*2+3, refs)

	// The views show the items' inputs as before.
	proj := runrig.Views(t, log, filepath.Join(t.TempDir(), "views.db"))
	last, err := log.LastSeq(ctx)
	require.NoError(t, err)
	require.NoError(t, proj.WaitFor(ctx, last))
	inputs := func(id string) map[string]any {
		v, err := proj.RunView(ctx, id)
		require.NoError(t, err)
		out := map[string]any{}
		for _, s := range v.Steps {
			if s.ActivityType != events.TypeFanOut {
				out[s.Key] = s.Input
			}
		}
		return out
	}
	oldInputs, newInputs := inputs(old), inputs(runID)
	assert.Len(t, newInputs, 4*3+3)
	assert.Equal(t, oldInputs, newInputs)
}

// TestFanOutRecordsItsListOnce: under step protocol 4 the events of a
// fan-out of n items over a list of n grow with n, not n²: the list is in
// the fan-out's step.started (twice: its items and its scope input) and in
// no item's.
func TestFanOutRecordsItsListOnce(t *testing.T) {
	t.Parallel()
	log := runrig.EngineLog(t)
	const n = 200
	items := make([]any, n)
	for i := range items {
		items[i] = fmt.Sprintf("item-%04d-%s", i, strings.Repeat("x", 20))
	}
	list, err := json.Marshal(items)
	require.NoError(t, err)
	runID, fin := runrig.RunJob(t, log, jobSpec(t, "itemref_bytes", `
  steps:
    - id: fan
      fan_out:
        items: "{{ input.items }}"
        max_workers: 16
        worker:
          id: w
          spec: {type: deterministic, action: sleep, config: {ms: 0}}
      fan_in: {join: {mode: all}}
`), map[string]any{"items": items})
	require.Equal(t, events.StateSuccess, fin.State, "%+v", fin.Error)
	hist := runrig.History(t, log, runID)
	total, started := 0, 0
	for _, ev := range hist {
		total += len(ev.Data)
		if ev.Type == events.StepStarted {
			started += len(ev.Data)
		}
	}
	// Under protocol 3 each item's step.started held the list: n × its
	// size, 200 × 6 KB = 1.2 MB, at least.
	t.Logf("%d items, list %d bytes: events %d bytes, step.started %d bytes", n, len(list), total, started)
	assert.Less(t, started, 3*len(list)+n*300, "step.started bytes")
	assert.Less(t, total, 4*len(list)+n*1200, "the run's event bytes")
}

// TestFanOutItemCommandsCarryAReference: the commands of a fan-out's items
// carry the reference to the fan-out's step.started and the item, not the
// list.
func TestFanOutItemCommandsCarryAReference(t *testing.T) {
	t.Parallel()
	ctx := testkit.Context(t)
	log := testkit.StartLog(t, events.Config{Durability: events.DurabilityRelaxed})
	octx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		assert.NoError(t, executor.NewOrchestrator(executor.Config{Log: log, Root: t.TempDir()}).Run(octx))
	}()
	t.Cleanup(func() { stop(); <-done })
	const n = 50
	items := make([]any, n)
	for i := range items {
		items[i] = fmt.Sprintf("item-%03d-%s", i, strings.Repeat("x", 40))
	}
	runID := runrig.Submit(t, log, jobSpec(t, "itemref_commands", `
  steps:
    - id: fan
      fan_out:
        items: "{{ input.items }}"
        max_workers: 64
        worker:
          id: w
          spec: {type: shell, program: echo, args: ["{{ item }}"], allowed_programs: [echo]}
      fan_in: {join: {mode: all}}
`), map[string]any{"items": items})
	got := make(chan *events.Command, n)
	consumer, err := log.Consume(ctx, events.ConsumerSpec{Durable: "worker-" + assets.TypeShell,
		Command: interpreter.CmdStepPrefix + assets.TypeShell + ".>", Concurrency: n},
		func(c *events.Command) { got <- c })
	require.NoError(t, err)
	defer consumer.Stop()
	fanID := interpreter.StepEventID(events.StepStarted, runID, "fan", 1)
	var fanSeq uint64
	runrig.WaitFor(t, "the fan-out's step.started", func() bool {
		for _, ev := range runrig.History(t, log, runID) {
			if ev.ID == fanID {
				fanSeq = ev.Seq
			}
		}
		return fanSeq > 0
	})
	seen := map[int]bool{}
	for len(seen) < n {
		select {
		case c := <-got:
			var cmd interpreter.StepCommand
			require.NoError(t, c.Decode(&cmd))
			assert.Less(t, len(c.Data), 2000, "a command's size does not grow with the list")
			assert.Nil(t, cmd.Input)
			require.NotNil(t, cmd.InputRef)
			var i int
			require.True(t, scan(cmd.StepKey, "fan/%d", &i), cmd.StepKey)
			assert.Equal(t, interpreter.InputRef{Seq: fanSeq, ID: fanID, Item: items[i-1]}, *cmd.InputRef)
			seen[i] = true
			_ = c.Term()
		case <-ctx.Done():
			t.Fatalf("%d of %d commands", len(seen), n)
		}
	}
}

// TestAFanOutByReferenceResumes stops the engine in the middle of a
// fan-out under step protocol 4 and starts a new one: the items it
// dispatched again, and those it dispatches for the first time, name the
// fan-out's step.started (which the new engine's history holds), and
// every item's worker gets its input.
func TestAFanOutByReferenceResumes(t *testing.T) {
	t.Parallel()
	r := newRestartRig(t)
	log := r.log
	job := jobSpec(t, "itemref_resume", `
  steps:
    - id: fan
      fan_out:
        items: "{{ input.items }}"
        max_workers: 2
        worker:
          id: w
          parallel:
            branches:
              - id: slow
                spec: {type: shell, program: sh, args: ["-c", "sleep 0.4"], allowed_programs: [sh]}
              - id: echo
                spec: {type: deterministic, action: echo}
      fan_in: {join: {mode: all}}
`)
	input := map[string]any{"items": []any{"a", "b", "c", "d", "e", "f"}, "extra": "kept"}
	runID := r.submit(t, job, input)
	runrig.WaitFor(t, "two items to finish", func() bool {
		done := 0
		for _, ev := range runrig.OfType(runrig.History(t, log, runID), events.StepFinished) {
			if scan(ev.StepKey, "fan/%d/slow", new(int)) {
				done++
			}
		}
		return done >= 2
	})
	r.restart(t)
	fin := runrig.WaitFinished(t, log, runID)
	require.Equal(t, events.StateSuccess, fin.State, "%+v", fin.Error)

	hist := runrig.History(t, log, runID)
	assert.Len(t, runrig.OfType(hist, events.RunResumed), 1)
	started := startedOf(t, hist)
	outputs := outputsOf(t, hist, started)
	items := input["items"].([]any)
	for i, item := range items {
		key := fmt.Sprintf("fan/%d/echo", i+1)
		require.NotNil(t, started[key].Item, key)
		assert.Nil(t, started[key].Input, key)
		assert.Equal(t, map[string]any{"items": items, "extra": "kept", "item": item}, outputs[key], "%s: its worker got its input", key)
	}
}
