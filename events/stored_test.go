package events_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

// An append knows the event it stored, as a reader of the log reads it
// back, when the log stored it as given: Appended.Stored is what EventAt
// returns at its sequence, strict and relaxed, Append and AppendAsync.
// It is nil where the log changed the event (a secret redacted, data over
// the inline budget) and for a duplicate, whose stored copy is the first.
func TestAnAppendKnowsTheEventItStored(t *testing.T) {
	t.Parallel()
	for _, durability := range []string{events.DurabilityStrict, events.DurabilityRelaxed} {
		t.Run(durability, func(t *testing.T) {
			t.Parallel()
			ctx := testkit.Context(t)
			redactor := &events.Redactor{}
			const secret = "s3cr3t-value-of-the-test"
			redactor.Add(secret)
			l := testkit.StartLog(t, events.Config{Durability: durability, Redactor: redactor})
			step := func(key string) events.Event {
				return events.Event{ID: "stored-" + durability + "-" + key, Type: events.StepFinished, RunID: "R", StepKey: key}
			}
			payload := func(output any) events.StepFinishedData {
				return events.StepFinishedData{Attempt: 1, State: events.StateSuccess, Output: output}
			}
			readBack := func(res events.Appended) {
				t.Helper()
				require.NotNil(t, res.Stored)
				read, err := l.EventAt(ctx, res.Seq)
				require.NoError(t, err)
				assert.Equal(t, read.ID, res.Stored.ID)
				assert.Equal(t, read.Seq, res.Stored.Seq)
				assert.True(t, read.Time.Equal(res.Stored.Time), "%v, read back %v", res.Stored.Time, read.Time)
				assert.Equal(t, string(read.Data), string(res.Stored.Data))
				read.Time = res.Stored.Time
				assert.Equal(t, read, *res.Stored)
			}

			res, err := l.Append(ctx, step("a"), payload(map[string]any{"greeting": "hello <world> & co"}))
			require.NoError(t, err)
			readBack(res)

			pending, err := l.AppendAsync(ctx, step("b"), payload([]int{1, 2, 3}))
			require.NoError(t, err)
			res, err = pending.Wait(ctx)
			require.NoError(t, err)
			readBack(res)

			res, err = l.Append(ctx, step("a"), payload("another"))
			require.NoError(t, err)
			assert.True(t, res.Duplicate)
			assert.Nil(t, res.Stored, "a duplicate stored nothing: its copy is the first")

			res, err = l.Append(ctx, step("c"), payload("the token is "+secret))
			require.NoError(t, err)
			assert.Nil(t, res.Stored, "a redacted event is not the one given")
			read, err := l.EventAt(ctx, res.Seq)
			require.NoError(t, err)
			assert.NotContains(t, string(read.Data), secret)

			res, err = l.Append(ctx, step("d"), payload(strings.Repeat("x", 300<<10)))
			require.NoError(t, err)
			assert.Nil(t, res.Stored, "data over the inline budget may be stored in blobs")
		})
	}
}
