package events_test

import (
	"fmt"
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
	for i := range 3 {
		_, err := l.Append(ctx, events.Event{Type: events.StepStarted, RunID: "R1", StepKey: "s"}, events.StepStartedData{Attempt: i + 1})
		require.NoError(t, err)
	}
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
