package events_test

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

// scanAll scans l from from through upTo in batches of size and returns
// the sequences handed over and the size of each batch.
func scanAll(t *testing.T, l *events.Log, from, upTo uint64, size int) (seqs []uint64, batches []int) {
	t.Helper()
	err := l.Scan(testkit.Context(t), from, upTo, size, func(evs []events.Event) error {
		batches = append(batches, len(evs))
		for _, ev := range evs {
			seqs = append(seqs, ev.Seq)
		}
		return nil
	})
	require.NoError(t, err)
	return seqs, batches
}

func seqRange(from, to uint64) []uint64 {
	var out []uint64
	for s := from; s <= to; s++ {
		out = append(out, s)
	}
	return out
}

// A scan hands over every event from one sequence through another, in
// order and in batches of the size asked, across many pull requests; it
// stops at the log's end when the log ends first, and leaves no consumer
// behind.
func TestScanHandsOverARangeInBatches(t *testing.T) {
	t.Parallel()
	ctx := testkit.Context(t)
	l := testkit.StartLog(t, events.Config{})
	before, err := l.Consumers(ctx)
	require.NoError(t, err)
	const n = 1000
	for i := range n {
		_, err := l.Append(ctx, events.Event{Type: events.StepStarted, RunID: "R1", StepKey: "s"}, events.StepStartedData{Attempt: i + 1})
		require.NoError(t, err)
	}

	seqs, batches := scanAll(t, l, 0, n, 64)
	assert.Equal(t, seqRange(1, n), seqs)
	assert.Len(t, batches, 16)
	assert.Equal(t, 64, batches[0])
	assert.Equal(t, n-15*64, batches[15])

	seqs, _ = scanAll(t, l, 250, 731, 100)
	assert.Equal(t, seqRange(250, 731), seqs)

	seqs, _ = scanAll(t, l, 990, 5000, 7) // the log ends at n
	assert.Equal(t, seqRange(990, n), seqs)

	seqs, _ = scanAll(t, l, n+1, n+10, 7)
	assert.Empty(t, seqs)

	var got []events.Event
	require.NoError(t, l.Scan(ctx, 3, 3, 10, func(evs []events.Event) error {
		got = append(got, evs...)
		return nil
	}))
	require.Len(t, got, 1)
	var d events.StepStartedData
	require.NoError(t, got[0].Decode(&d))
	assert.Equal(t, events.StepStartedData{Attempt: 3}, d)
	assert.Equal(t, "R1", got[0].RunID)

	after, err := l.Consumers(ctx)
	require.NoError(t, err)
	assert.Equal(t, before, after)
}

// fn's error ends the scan and is returned; a batch size below one is
// refused.
func TestScanStopsOnItsCallersError(t *testing.T) {
	t.Parallel()
	ctx := testkit.Context(t)
	l := testkit.StartLog(t, events.Config{})
	for i := range 50 {
		_, err := l.Append(ctx, events.Event{Type: events.StepStarted, RunID: "R1", StepKey: "s"}, events.StepStartedData{Attempt: i + 1})
		require.NoError(t, err)
	}
	stop := errors.New("enough")
	calls := 0
	err := l.Scan(ctx, 1, 50, 10, func([]events.Event) error {
		calls++
		return stop
	})
	assert.ErrorIs(t, err, stop)
	assert.Equal(t, 1, calls)

	assert.Error(t, l.Scan(ctx, 1, 50, 0, func([]events.Event) error { return nil }))
}

// A scan checks every event as a feed does: forged ones (unsigned, or
// with a wrong MAC, or dressed as the server's answer at the log's end) are
// left out and recorded as rejected; the real events around them are all
// handed over.
func TestScanLeavesForgedEventsOut(t *testing.T) {
	t.Parallel()
	ctx := testkit.Context(t)
	l, _ := signedLog(t)
	js := outsider(t, l)

	first, err := l.Append(ctx, events.Event{Type: events.StepStarted, RunID: "R", StepKey: "s"}, events.StepStartedData{Attempt: 1})
	require.NoError(t, err)
	finished := events.Event{ID: "forged", Type: events.StepFinished, RunID: "R", StepKey: "s"}
	unsigned := forge(t, js, finished, events.StepFinishedData{State: events.StateSuccess, Output: "forged"})
	data, _ := json.Marshal(events.StepFinishedData{State: events.StateSuccess, Output: "forged too"})
	finished.ID, finished.Data = "forged-mac", data
	body, _ := json.Marshal(finished)
	subject, _ := finished.Subject()
	ack, err := js.PublishMsg(ctx, &nats.Msg{Subject: subject, Data: body, Header: nats.Header{events.MACHeader: []string{"00ff"}}})
	require.NoError(t, err)
	badMAC := ack.Sequence
	// An empty message that says what the server's answer at the log's
	// end says, to end the scan early.
	ack, err = js.PublishMsg(ctx, &nats.Msg{Subject: subject, Header: nats.Header{"Status": []string{"404"}, "Description": []string{"No Messages"}}})
	require.NoError(t, err)
	endForged := ack.Sequence
	last, err := l.Append(ctx, events.Event{Type: events.StepFinished, RunID: "R", StepKey: "s"}, events.StepFinishedData{State: events.StateSuccess, Output: "real"})
	require.NoError(t, err)

	seqs, _ := scanAll(t, l, 1, last.Seq, 2)
	assert.Equal(t, []uint64{first.Seq, last.Seq}, seqs)

	rej := rejections(t, l, "R")
	require.Len(t, rej, 3)
	assert.Equal(t, unsigned, rej[0].Seq)
	assert.Equal(t, events.ReasonUnsigned, rej[0].Reason)
	assert.Equal(t, badMAC, rej[1].Seq)
	assert.Equal(t, events.ReasonBadMAC, rej[1].Reason)
	assert.Equal(t, endForged, rej[2].Seq)
}

// On a three-server cluster, connected to a server that does not lead the
// event stream, a scan reads the replicated log whole.
func TestScanReadsAReplicatedLog(t *testing.T) {
	t.Parallel()
	ctx := testkit.Context(t)
	c := testkit.StartCluster(t, filepath.Join(t.TempDir(), "creds"))
	l1, err := openOnCluster(t, c, c.Nodes[0].URL(), 0)
	require.NoError(t, err)
	leader, err := c.StreamLeader(ctx, events.EventsStream)
	require.NoError(t, err)
	l1.Close()
	l, err := openOnCluster(t, c, c.Nodes[(leader+1)%len(c.Nodes)].URL(), 0)
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	require.Equal(t, 3, l.Replicas())
	const n = 300
	for i := range n {
		_, err := l.Append(ctx, events.Event{Type: events.StepStarted, RunID: "R1", StepKey: "s"}, events.StepStartedData{Attempt: i + 1})
		require.NoError(t, err)
	}
	seqs, _ := scanAll(t, l, 1, n, 64)
	assert.Equal(t, seqRange(1, n), seqs)
}
