package events_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

// runTypes are the registered event types of runs, sorted.
func runTypes(t *testing.T) []string {
	t.Helper()
	var types []string
	for _, typ := range events.Types() {
		info, _ := events.Lookup(typ)
		if info.Aggregate == events.AggregateRun {
			types = append(types, typ)
		}
	}
	require.NotEmpty(t, types)
	return types
}

// A feed of a run's events without some types delivers every event of
// every other registered type of that run, in order, and nothing of another
// run; the last event it matches is the last of those.
func TestRunFilterExceptFollowsEveryOtherType(t *testing.T) {
	t.Parallel()
	ctx := testkit.Context(t)
	l := testkit.StartLog(t, events.Config{})
	except := []string{events.ActivityStarted, events.ActivityFinished}
	var want []string
	for _, run := range []string{"R1", "R2"} {
		for _, typ := range runTypes(t) {
			_, err := l.Append(ctx, events.Event{Type: typ, RunID: run, StepKey: "s"}, nil)
			require.NoError(t, err, typ)
			if run == "R1" && !slices.Contains(except, typ) {
				want = append(want, typ)
			}
		}
	}
	// The last event of R1 is one the filters leave out.
	_, err := l.Append(ctx, events.Event{Type: events.ActivityStarted, RunID: "R1", StepKey: "s"}, nil)
	require.NoError(t, err)

	filters := events.RunFilterExcept("R1", except...)
	assert.True(t, slices.IsSorted(filters), "%v", filters)
	assert.Contains(t, filters, "orbit.events.run.R1.step.>", "a prefix with no type left out is followed whole")
	for _, f := range filters {
		assert.False(t, strings.Contains(f, ".activity."), "%s follows a type left out", f)
	}

	f, err := l.Follow(ctx, events.FollowOptions{Filters: filters})
	require.NoError(t, err)
	defer f.Stop()
	<-f.CaughtUp()
	var got []string
	var lastSeq uint64
	for len(got) < len(want) {
		ev := <-f.Events()
		assert.Greater(t, ev.Seq, lastSeq)
		lastSeq = ev.Seq
		assert.Equal(t, "R1", ev.RunID)
		got = append(got, ev.Type)
	}
	assert.Equal(t, want, got)

	last, err := l.LastMatching(ctx, filters)
	require.NoError(t, err)
	assert.Equal(t, lastSeq, last)
}

// With nothing left out it is the run's filter.
func TestRunFilterExceptNothingIsTheRunFilter(t *testing.T) {
	t.Parallel()
	assert.Equal(t, []string{events.RunFilter("R.1")}, events.RunFilterExcept("R.1"))
	for _, f := range events.RunFilterExcept("R.1", events.StepStarted) {
		assert.True(t, strings.HasPrefix(f, "orbit.events.run.R_1."), f)
	}
}
