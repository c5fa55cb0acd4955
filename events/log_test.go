package events_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

func TestAppendAndReadBackInOrder(t *testing.T) {
	t.Parallel()
	ctx := testkit.Context(t)
	l := testkit.StartLog(t, events.Config{})

	for i := 1; i <= 5; i++ {
		_, err := l.Append(ctx, events.Event{Type: events.StepStarted, RunID: "R1", StepKey: "s"}, events.StepStartedData{Attempt: i})
		require.NoError(t, err)
	}
	_, err := l.Append(ctx, events.Event{Type: events.RunStarted, RunID: "R2"}, events.RunStartedData{Engine: "e"})
	require.NoError(t, err)

	got, err := l.Read(ctx, events.FollowOptions{Filters: []string{events.RunFilter("R1")}})
	require.NoError(t, err)
	require.Len(t, got, 5)
	for i, ev := range got {
		var d events.StepStartedData
		require.NoError(t, ev.Decode(&d))
		assert.Equal(t, i+1, d.Attempt)
		assert.Equal(t, uint64(i+1), ev.Seq)
	}
}

func TestDecisionIDsAreStoredOnce(t *testing.T) {
	t.Parallel()
	ctx := testkit.Context(t)
	l := testkit.StartLog(t, events.Config{})
	id := events.DecisionID(events.StepFinished, "R1", "build", "1")
	ev := events.Event{ID: id, Type: events.StepFinished, RunID: "R1", StepKey: "build"}

	first, err := l.Append(ctx, ev, events.StepFinishedData{Attempt: 1, State: events.StateSuccess})
	require.NoError(t, err)
	second, err := l.Append(ctx, ev, events.StepFinishedData{Attempt: 1, State: events.StateSuccess})
	require.NoError(t, err)
	assert.False(t, first.Duplicate)
	assert.True(t, second.Duplicate)
	assert.Equal(t, first.Seq, second.Seq)
	last, err := l.LastSeq(ctx)
	require.NoError(t, err)
	assert.Equal(t, uint64(1), last)
}

func TestUnregisteredTypesAndWrongPayloadsAreRefused(t *testing.T) {
	t.Parallel()
	ctx := testkit.Context(t)
	l := testkit.StartLog(t, events.Config{})

	_, err := l.Append(ctx, events.Event{Type: "no.such.type", RunID: "R"}, nil)
	assert.ErrorIs(t, err, events.ErrUnknownType)
	_, err = l.Append(ctx, events.Event{Type: events.RunStarted, RunID: "R"}, events.StepStartedData{})
	assert.ErrorIs(t, err, events.ErrPayloadType)
	last, err := l.LastSeq(ctx)
	require.NoError(t, err)
	assert.Zero(t, last, "a refused event must leave the log as it was")
}

func TestEveryRegisteredTypeHasASubject(t *testing.T) {
	t.Parallel()
	for _, typ := range events.Types() {
		ev := events.Event{Type: typ, ID: "I", RunID: "R", TaskID: "T"}
		subject, err := ev.Subject()
		require.NoError(t, err, typ)
		assert.Contains(t, subject, "."+typ)
		_, err = ev.Payload()
		assert.NoError(t, err, typ)
	}
	_, err := events.Event{Type: "nope"}.Payload()
	assert.True(t, errors.Is(err, events.ErrUnknownType))
}

// TestPayloadsHaveNoShadowedFields: encoding/json silently drops a field
// name that two embedded structs share, so every registered payload must
// round-trip every field it has.
func TestPayloadsHaveNoShadowedFields(t *testing.T) {
	t.Parallel()
	for _, typ := range events.Types() {
		p, err := events.Event{Type: typ}.Payload()
		require.NoError(t, err)
		assertNoDuplicateJSONNames(t, typ, reflect.TypeOf(p).Elem())
	}
}

func assertNoDuplicateJSONNames(t *testing.T, typ string, rt reflect.Type) {
	t.Helper()
	seen := map[string]string{}
	var walk func(rt reflect.Type, path string)
	walk = func(rt reflect.Type, path string) {
		for i := 0; i < rt.NumField(); i++ {
			f := rt.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if f.Anonymous && name == "" {
				walk(f.Type, path+f.Name+".")
				continue
			}
			if name == "" {
				name = f.Name
			}
			if other, dup := seen[name]; dup {
				t.Errorf("%s: JSON field %q is both %s and %s", typ, name, other, path+f.Name)
			}
			seen[name] = path + f.Name
		}
	}
	walk(rt, "")
}

func TestAppendFirstRefusesASecondCreation(t *testing.T) {
	t.Parallel()
	ctx := testkit.Context(t)
	l := testkit.StartLog(t, events.Config{})
	ev := events.Event{Type: events.TaskCreated, TaskID: "T-1"}
	_, err := l.AppendFirst(ctx, ev, events.TaskCreatedData{Title: "first"})
	require.NoError(t, err)
	_, err = l.AppendFirst(ctx, ev, events.TaskCreatedData{Title: "second"})
	assert.ErrorIs(t, err, events.ErrConflict)
	_, err = l.AppendFirst(ctx, events.Event{Type: events.TaskCreated, TaskID: "T-2"}, events.TaskCreatedData{Title: "other"})
	require.NoError(t, err)
}
