package activity

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
	"github.com/orbitrun/orbit/interpreter"
)

// TestScopeCacheReadsAFanOutOnce: items arriving together read their
// fan-out's scope input once; a failed read is not kept; the cache keeps
// the last scopeInputs fan-outs.
func TestScopeCacheReadsAFanOutOnce(t *testing.T) {
	var c scopeCache
	var reads atomic.Int32
	release := make(chan struct{})
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := c.get("run\x00fan", func() (any, error) {
				reads.Add(1)
				<-release
				return "scope", nil
			})
			assert.NoError(t, err)
			assert.Equal(t, "scope", v)
		}()
	}
	close(release)
	wg.Wait()
	assert.Equal(t, int32(1), reads.Load())

	_, err := c.get("run\x00broken", func() (any, error) { return nil, errors.New("unavailable") })
	require.Error(t, err)
	v, err := c.get("run\x00broken", func() (any, error) { return "now", nil })
	require.NoError(t, err)
	assert.Equal(t, "now", v, "a failed read is read again")

	for i := range scopeInputs + 5 {
		_, _ = c.get(strconv.Itoa(i), func() (any, error) { return i, nil })
	}
	assert.Len(t, c.entries, scopeInputs)
	assert.Len(t, c.order, scopeInputs)
}

// TestItemInputsShareNothingAnActionCanChange: two items resolved from one
// scope input; what one item's action does to its input (after
// resolveSecrets, as every activity gets it) is not seen by the other.
func TestItemInputsShareNothingAnActionCanChange(t *testing.T) {
	w := &Worker{cfg: WorkerConfig{Env: func(string) (string, bool) { return "", false }}}
	scope := map[string]any{"extra": map[string]any{"k": "v"}, "list": []any{"a"}}
	_, err := w.scopes.get("run\x00fan", func() (any, error) { return scope, nil })
	require.NoError(t, err)
	resolved := func(item string) *interpreter.StepCommand {
		cmd := &interpreter.StepCommand{RunID: "run", InputRef: &interpreter.InputRef{ID: "fan", Item: item}}
		require.NoError(t, w.resolveInput(t.Context(), cmd))
		w.resolveSecrets(cmd)
		return cmd
	}
	one := resolved("one").Input.(map[string]any)
	one["extra"].(map[string]any)["k"] = "changed"
	one["list"].([]any)[0] = "changed"
	one["item"] = "changed"
	two := resolved("two").Input.(map[string]any)
	assert.Equal(t, map[string]any{"extra": map[string]any{"k": "v"}, "list": []any{"a"}, "item": "two"}, two)
	assert.Equal(t, map[string]any{"extra": map[string]any{"k": "v"}, "list": []any{"a"}}, scope, "the scope input is unchanged")
}

// TestALargeScopeInputIsReadBackFromItsBlob: a scope input too large for
// an event's inline budget is stored as a blob; the worker reads the value,
// not the reference.
func TestALargeScopeInputIsReadBackFromItsBlob(t *testing.T) {
	log := testkit.StartLog(t, events.Config{})
	ctx := testkit.Context(t)
	big := strings.Repeat("x", 300<<10)
	id := interpreter.StepEventID(events.StepStarted, "run", "fan", 1)
	fan, err := log.Append(ctx, events.Event{ID: id, Type: events.StepStarted, RunID: "run", StepKey: "fan"},
		events.StepStartedData{Attempt: 1, ActivityType: events.TypeFanOut,
			Input: map[string]any{"items": []any{"a"}, events.FanOutScopeInput: map[string]any{"big": big}}})
	require.NoError(t, err)
	stored, err := log.EventAt(ctx, fan.Seq)
	require.NoError(t, err)
	require.Less(t, len(stored.Data), 300<<10, "the scope input is stored as a blob")
	w := &Worker{cfg: WorkerConfig{Log: log}}
	scope, err := w.readScopeInput(ctx, "run", fan.Seq, id, math.MaxUint64)
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"big": big}, scope)
}
