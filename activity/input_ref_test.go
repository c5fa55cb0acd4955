package activity_test

import (
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/runrig"
	"github.com/orbitrun/orbit/internal/testkit"
	"github.com/orbitrun/orbit/interpreter"
)

// TestAWorkerResolvesAnItemInputByReference records a fan-out's
// step.started and its items' as an orchestrator under step protocol 4
// does, and sends the items' echo commands with references: one naming
// the right sequence, ones naming another event's or none, whose workers
// find the step.started by its id among the run's; and ones naming no
// step.started that records a scope input, which fail with a clear error,
// never run on an empty input; and one naming a fan-out inside an item,
// whose scope input is that item's, by reference again.
func TestAWorkerResolvesAnItemInputByReference(t *testing.T) {
	t.Parallel()
	log := signingLog(t)
	startWorker(t, log, 5*time.Second)
	ctx := testkit.Context(t)
	runID := events.NewID()
	scope := map[string]any{"items": []any{"a", "b"}, "extra": map[string]any{"k": "v"}, "item": "replaced"}
	fanID := interpreter.StepEventID(events.StepStarted, runID, "fan", 1)
	fan, err := log.Append(ctx, events.Event{ID: fanID, Type: events.StepStarted, RunID: runID, Job: "j", StepKey: "fan"},
		events.StepStartedData{Attempt: 1, ActivityType: events.TypeFanOut,
			Input: map[string]any{"items": scope["items"], "max_workers": 0, events.FanOutScopeInput: scope}})
	require.NoError(t, err)
	// A fan-out inside the item "g" of the first names that item's input.
	innerID := interpreter.StepEventID(events.StepStarted, runID, "fan/9", 1)
	inner, err := log.Append(ctx, events.Event{ID: innerID, Type: events.StepStarted, RunID: runID, Job: "j", StepKey: "fan/9", ParentID: fanID},
		events.StepStartedData{Attempt: 1, ActivityType: events.TypeFanOut, Input: map[string]any{"items": []any{"n"}, "max_workers": 0},
			Item: &events.ItemInput{Of: fanID, Seq: fan.Seq, Index: 9, Value: "g"}})
	require.NoError(t, err)

	cases := []struct {
		name  string
		ref   func(first uint64) interpreter.InputRef
		scope map[string]any // the item's scope input, when not scope
		fail  string
	}{
		{"at its sequence", func(uint64) interpreter.InputRef { return interpreter.InputRef{Seq: fan.Seq, ID: fanID, Item: "a"} }, nil, ""},
		{"another event at the sequence", func(first uint64) interpreter.InputRef {
			return interpreter.InputRef{Seq: first, ID: fanID, Item: map[string]any{"b": 2.0}}
		}, nil, ""},
		{"no event at the sequence", func(uint64) interpreter.InputRef { return interpreter.InputRef{Seq: 1 << 40, ID: fanID, Item: "c"} }, nil, ""},
		{"a nested fan-out's", func(uint64) interpreter.InputRef { return interpreter.InputRef{Seq: inner.Seq, ID: innerID, Item: "n"} },
			events.WithItem(scope, "g"), ""},
		{"no such step.started", func(uint64) interpreter.InputRef {
			return interpreter.InputRef{Seq: fan.Seq, ID: fanID + "x", Item: "d"}
		}, nil, "has no step.started " + fanID + "x"},
		{"a step.started without a scope input", func(first uint64) interpreter.InputRef {
			return interpreter.InputRef{Seq: first, ID: interpreter.StepEventID(events.StepStarted, runID, "fan/1", 1), Item: "e"}
		}, nil, "records no fan-out scope input"},
	}
	var first uint64
	for i, tc := range cases {
		key := "fan/" + strconv.Itoa(i+1)
		ref := tc.ref(first)
		started, err := log.Append(ctx, events.Event{ID: interpreter.StepEventID(events.StepStarted, runID, key, 1), Type: events.StepStarted,
			RunID: runID, Job: "j", StepKey: key, ParentID: fanID},
			events.StepStartedData{Attempt: 1, ActivityType: assets.TypeDeterministic, Item: &events.ItemInput{Of: ref.ID, Index: i + 1, Value: ref.Item}})
		require.NoError(t, err)
		if i == 0 {
			first = started.Seq
		}
		cmd := &interpreter.StepCommand{RunID: runID, Job: "j", StepKey: key, Attempt: 1,
			Activity:  assets.ActivitySpec{Type: assets.TypeDeterministic, Action: "echo", Config: map[string]any{"seen": i + 1}},
			StartedID: interpreter.StepEventID(events.StepStarted, runID, key, 1), Protocol: events.StepProtocol, InputRef: &ref}
		require.NoError(t, log.Send(ctx, interpreter.StepCommandName(assets.TypeDeterministic, runID, key, 1), events.NewID(), cmd))
		t.Run(tc.name, func(t *testing.T) {
			var fin events.StepFinishedData
			runrig.WaitFor(t, "the step to finish", func() bool {
				for _, ev := range runrig.OfType(runrig.History(t, log, runID), events.StepFinished) {
					if ev.StepKey == key {
						require.NoError(t, ev.Decode(&fin))
						return true
					}
				}
				return false
			})
			if tc.fail != "" {
				require.Equal(t, events.StateFailed, fin.State)
				assert.Equal(t, events.KindInternal, fin.Error.Kind)
				assert.Contains(t, fin.Error.Message, tc.fail)
				assert.Nil(t, fin.Output)
				return
			}
			require.Equal(t, events.StateSuccess, fin.State, "%+v", fin.Error)
			itemScope := scope
			if tc.scope != nil {
				itemScope = tc.scope
			}
			want := events.WithItem(itemScope, ref.Item)
			want["seen"] = i + 1
			raw, err := json.Marshal(want)
			require.NoError(t, err)
			got, err := json.Marshal(fin.Output)
			require.NoError(t, err)
			assert.JSONEq(t, string(raw), string(got), "the worker got the item's input")
		})
	}
}
