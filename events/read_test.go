package events_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

// Reads and feeds leave no consumer behind: the stream's count of
// consumers after hundreds of them is what it was before, so clients that
// come and go never fill a limit of consumers (a server's max_consumers)
// that only clients that are there should reach.
func TestReadsAndFeedsLeaveNoConsumers(t *testing.T) {
	t.Parallel()
	ctx := testkit.Context(t)
	l := testkit.StartLog(t, events.Config{})
	appendSteps(t, ctx, l, 3)
	before, err := l.Consumers(ctx)
	require.NoError(t, err)

	const n = 200
	for i := range n {
		evs, err := l.Read(ctx, events.FollowOptions{Filters: []string{events.RunFilter("R1")}})
		require.NoError(t, err, "read %d", i)
		require.Len(t, evs, 3)
	}
	for i := range n {
		f, err := l.Follow(ctx, events.FollowOptions{Filters: []string{events.RunFilter("R1")}})
		require.NoError(t, err, "feed %d", i)
		<-f.CaughtUp()
		f.Stop()
	}
	after, err := l.Consumers(ctx)
	require.NoError(t, err)
	assert.Equal(t, before, after)

	f, err := l.Follow(ctx, events.FollowOptions{})
	require.NoError(t, err)
	defer f.Stop()
	got := <-f.Events()
	assert.Equal(t, uint64(1), got.Seq)
}

// A read spans many batches, merges several filters in stream order and
// starts where it is told.
func TestReadAcrossBatchesAndFilters(t *testing.T) {
	t.Parallel()
	ctx := testkit.Context(t)
	l := testkit.StartLog(t, events.Config{})
	big := strings.Repeat("x", 20_000) // 1,200 of these are past one batch's byte budget
	const n = 1200
	for i := range n {
		run := fmt.Sprintf("R%d", i%3)
		_, err := l.Append(ctx, events.Event{Type: events.StepStarted, RunID: run, StepKey: "s"},
			events.StepStartedData{Attempt: i + 1, Input: big})
		require.NoError(t, err)
	}

	all, err := l.Read(ctx, events.FollowOptions{})
	require.NoError(t, err)
	require.Len(t, all, n)
	for i, ev := range all {
		require.Equal(t, uint64(i+1), ev.Seq)
	}

	two, err := l.Read(ctx, events.FollowOptions{Filters: []string{events.RunFilter("R2"), events.RunFilter("R0")}})
	require.NoError(t, err)
	require.Len(t, two, 2*n/3)
	for i := 1; i < len(two); i++ {
		require.Less(t, two[i-1].Seq, two[i].Seq)
		require.NotEqual(t, "R1", two[i].RunID)
	}

	tail, err := l.Read(ctx, events.FollowOptions{Filters: []string{events.RunFilter("R1")}, FromSeq: 1000})
	require.NoError(t, err)
	require.NotEmpty(t, tail)
	assert.GreaterOrEqual(t, tail[0].Seq, uint64(1000))
	assert.Equal(t, uint64(1199), tail[len(tail)-1].Seq)

	none, err := l.Read(ctx, events.FollowOptions{Filters: []string{events.RunFilter("NOPE")}})
	require.NoError(t, err)
	assert.Empty(t, none)
}

// TestAFilterTooLongForASubjectIsRefused: a read for a 100 KB run id is
// refused as an invalid request before it is sent; sent, it passed the
// server's control line and the server closed the reader's connection
// (the engine's own, reading for a client).
func TestAFilterTooLongForASubjectIsRefused(t *testing.T) {
	t.Parallel()
	ctx := testkit.Context(t)
	l := testkit.StartLog(t, events.Config{})
	_, err := l.Append(ctx, events.Event{Type: events.StepStarted, RunID: "R1", StepKey: "s"}, events.StepStartedData{Attempt: 1})
	require.NoError(t, err)
	long := events.RunFilter(strings.Repeat("A", 100_000))
	_, err = l.LastMatching(ctx, []string{long})
	require.ErrorIs(t, err, events.ErrInvalidRequest)
	assert.Less(t, len(err.Error()), 300, "the error quotes the filter's start")
	_, err = l.Read(ctx, events.FollowOptions{Filters: []string{events.RunFilter("R1"), long}})
	require.ErrorIs(t, err, events.ErrInvalidRequest)
	_, err = l.Follow(ctx, events.FollowOptions{Filters: []string{long}})
	require.ErrorIs(t, err, events.ErrInvalidRequest)

	evs, err := l.Read(ctx, events.FollowOptions{Filters: []string{events.RunFilter("R1")}})
	require.NoError(t, err, "the connection is still there")
	assert.Len(t, evs, 1)
	_, err = l.LastMatching(ctx, []string{events.RunFilter(strings.Repeat("B", events.MaxFilterBytes/2))})
	assert.NoError(t, err, "a long id within the bound is looked up")
}

// A feed is caught up once it has delivered the events that matched as it
// started, from where it started, and no more: Last names the last of
// them, though later ones were appended before it delivered the first.
func TestAFeedCatchesUpWithWhatMatchedAsItStarted(t *testing.T) {
	t.Parallel()
	ctx := testkit.Context(t)
	l := testkit.StartLog(t, events.Config{})
	var seqs []uint64
	for i, run := range []string{"R1", "R2", "R1", "R2", "R1"} {
		a, err := l.Append(ctx, events.Event{Type: events.StepStarted, RunID: run, StepKey: "s"}, events.StepStartedData{Attempt: i + 1})
		require.NoError(t, err)
		if run == "R1" {
			seqs = append(seqs, a.Seq)
		}
	}
	for _, from := range []int{0, 1} { // from the start, from R1's second
		matched := seqs[from:]
		fromSeq := uint64(0)
		if from > 0 {
			fromSeq = matched[0]
		}
		f, err := l.Follow(ctx, events.FollowOptions{Filters: []string{events.RunFilter("R1")}, FromSeq: fromSeq})
		require.NoError(t, err)
		a, err := l.Append(ctx, events.Event{Type: events.StepStarted, RunID: "R1", StepKey: "s"}, events.StepStartedData{Attempt: 9})
		require.NoError(t, err)
		seqs = append(seqs, a.Seq)
		var got []uint64
		for ev := range f.Events() {
			got = append(got, ev.Seq)
			if ev.Seq == a.Seq {
				break
			}
		}
		<-f.CaughtUp()
		assert.Equal(t, matched[len(matched)-1], f.Last(), "from %d", fromSeq)
		f.Stop()
		assert.Equal(t, append(slices.Clone(matched), a.Seq), got, "from %d", fromSeq)
	}

	f, err := l.Follow(ctx, events.FollowOptions{Filters: []string{events.RunFilter("R3")}})
	require.NoError(t, err)
	defer f.Stop()
	select {
	case <-f.CaughtUp():
	default:
		t.Fatal("a feed with nothing to deliver is caught up as it starts")
	}
	assert.Zero(t, f.Last())
}
