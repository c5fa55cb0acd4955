package events_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

// TestValuesPastAMessageGoToBlobsAndComeBack: an event whose payload is
// larger than a message is stored with its largest values as blob
// references, the same bytes each time, and read back whole; a feed or a
// read that asks for the log as stored gets the references.
func TestValuesPastAMessageGoToBlobsAndComeBack(t *testing.T) {
	t.Parallel()
	ctx := testkit.Context(t)
	l := testkit.StartLog(t, events.Config{})
	items := make([]any, 12)
	for i := range items {
		items[i] = map[string]any{"n": i, "text": strings.Repeat(string(rune('a'+i)), 150_000)}
	}
	out := map[string]any{"items": items, "small": "kept", "number": 12345678901234567}
	for _, id := range []string{"one", "two"} {
		_, err := l.Append(ctx, events.Event{ID: id, Type: events.StepFinished, RunID: "R1", StepKey: "s"},
			events.StepFinishedData{Attempt: 1, State: events.StateSuccess, Output: out})
		require.NoError(t, err)
	}

	stored, err := l.Read(ctx, events.FollowOptions{Filters: []string{events.RunFilter("R1")}, BlobRefs: true})
	require.NoError(t, err)
	require.Len(t, stored, 2)
	assert.Less(t, len(stored[0].Data), 300<<10)
	assert.Contains(t, string(stored[0].Data), `"$blob"`)
	assert.Contains(t, string(stored[0].Data), `"small":"kept"`)
	assert.Equal(t, string(stored[0].Data), string(stored[1].Data), "the same value is stored as the same bytes")

	whole, err := l.Read(ctx, events.FollowOptions{Filters: []string{events.RunFilter("R1")}})
	require.NoError(t, err)
	var d struct {
		Output struct {
			Items []struct {
				N    int    `json:"n"`
				Text string `json:"text"`
			} `json:"items"`
			Small  string `json:"small"`
			Number int64  `json:"number"`
		} `json:"output"`
	}
	require.NoError(t, whole[0].Decode(&d))
	require.Len(t, d.Output.Items, 12)
	assert.Equal(t, strings.Repeat("l", 150_000), d.Output.Items[11].Text)
	assert.Equal(t, "kept", d.Output.Small)
	assert.Equal(t, int64(12345678901234567), d.Output.Number, "numbers keep their digits")

	f, err := l.Follow(ctx, events.FollowOptions{Filters: []string{events.RunFilter("R1")}})
	require.NoError(t, err)
	defer f.Stop()
	ev := <-f.Events()
	assert.Equal(t, string(whole[0].Data), string(ev.Data), "a feed reads the values back too")
}

// TestAnswersPastAMessageArriveWhole: an API answer larger than the
// server's max_payload travels through the replies store, where a client
// (which may read it but not delete it) fetches it.
func TestAnswersPastAMessageArriveWhole(t *testing.T) {
	t.Parallel()
	ctx := testkit.Context(t)
	l := testkit.StartLog(t, events.Config{Listen: "127.0.0.1:0", MaxPayload: 1 << 20})
	c := dialAs(ctx, t, l, events.IdentityClient)
	big := strings.Repeat("x", 3<<20)
	stop, err := l.Serve("", "test", "0.0.1", 10*time.Second, map[string]events.Handler{
		"big.get": func(context.Context, json.RawMessage) (any, error) { return map[string]string{"text": big}, nil },
	})
	require.NoError(t, err)
	defer stop.Stop()
	var got map[string]string
	require.NoError(t, c.Request(ctx, "big.get", nil, &got))
	assert.Equal(t, big, got["text"])
}
