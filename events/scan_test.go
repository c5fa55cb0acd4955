package events_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

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

// appendSteps appends n step.started events of run R1 to l, of attempts
// 1 to n.
func appendSteps(t testing.TB, ctx context.Context, l *events.Log, n int) {
	t.Helper()
	for i := range n {
		_, err := l.Append(ctx, events.Event{Type: events.StepStarted, RunID: "R1", StepKey: "s"}, events.StepStartedData{Attempt: i + 1})
		require.NoError(t, err)
	}
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
	appendSteps(t, ctx, l, n)

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
	appendSteps(t, ctx, l, 50)
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
	appendSteps(t, ctx, l, n)
	seqs, _ := scanAll(t, l, 1, n, 64)
	assert.Equal(t, seqRange(1, n), seqs)
}

// BenchmarkScan reads 20,000 events of about 600 bytes with Scan, from a
// log that signs them and from one that does not: what verifying each
// event's MAC adds to a view rebuild's read. It reports the CPU time per
// event too, which a busy machine does not inflate as it does wall time.
func BenchmarkScan(b *testing.B) {
	const n = 20_000
	for _, signed := range []bool{false, true} {
		name := "unsigned"
		cfg := events.Config{Durability: events.DurabilityRelaxed}
		if signed {
			name = "signed"
			cfg.LogKeyFile = filepath.Join(b.TempDir(), events.LogKeyFile)
			cfg.MakeLogKey = true
		}
		b.Run(name, func(b *testing.B) {
			l := testkit.StartLog(b, cfg)
			ctx := context.Background()
			output := strings.Repeat("x", 400)
			for i := range n {
				_, err := l.Append(ctx, events.Event{Type: events.StepFinished, RunID: fmt.Sprintf("R%d", i/800), StepKey: fmt.Sprintf("s%d", i%800)},
					events.StepFinishedData{State: events.StateSuccess, Output: output, DurationMS: int64(i)})
				if err != nil {
					b.Fatal(err)
				}
			}
			var cpu time.Duration
			b.ResetTimer()
			for range b.N {
				start := processCPU(b)
				got := 0
				err := l.Scan(ctx, 1, n, 4096, func(evs []events.Event) error {
					got += len(evs)
					return nil
				})
				if err != nil || got != n {
					b.Fatalf("scanned %d of %d: %v", got, n, err)
				}
				cpu += processCPU(b) - start
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/event")
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N*n), "cpu-ns/event")
		})
	}
}

// processCPU is the CPU time the process has used so far.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestScanOnAClusterReadsThroughTheLeadersLastEvent: a replica that
// was down and catches up holds the log's first events only, and a scan's
// consumer may be placed there. A scan through the last sequence the
// stream's leader knows hands over every event or fails saying so; it
// never ends short as if the log ended there (a rebuild that stopped
// before a run's run.finished, which the live views held).
func TestScanOnAClusterReadsThroughTheLeadersLastEvent(t *testing.T) {
	t.Parallel()
	ctx, c, l, follower := laggingFollower(t, 3000)
	last, err := l.LastSeq(ctx)
	require.NoError(t, err)
	c.Restart(follower)

	short := 0
	for round := range 12 {
		n := uint64(0)
		err := l.Scan(ctx, 1, last, 512, func(evs []events.Event) error {
			n += uint64(len(evs))
			return nil
		})
		if err != nil {
			t.Logf("round %d: %v", round, err)
			continue
		}
		if n != last {
			short++
			t.Errorf("round %d: the scan handed over %d events of %d and said nothing", round, n, last)
		}
	}
	t.Logf("%d of 12 scans ended short", short)
}
