package events_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

// TestReadsOnALaggingReplicaDoNotGoBackInTime: a follower of the event
// stream that was down while 3,000 events were appended serves direct gets
// again before it has caught up (the server turns them on at 90% of the
// way). A reader connected to it — the engine or a CLI whose server that
// is — reads what the writer had acknowledged before it asked: Read every
// event of the run, LastMatching the leader's last, EventAt the last
// event, Follow caught up only past it.
func TestReadsOnALaggingReplicaDoNotGoBackInTime(t *testing.T) {
	t.Parallel()
	ctx, c, w, follower := laggingFollower(t, 3000)
	filters := []string{events.RunFilter("R1")}
	want, err := w.LastMatching(ctx, filters)
	require.NoError(t, err)
	c.Restart(follower)

	r := readerOn(ctx, t, c, follower)
	// Each read right after an acknowledged append, twice: a direct get
	// goes to any replica (the server picks one of the stream's queue
	// group at random, its own or one across a route), so a read that saw
	// the append may be followed by one that does not.
	filter2 := []string{events.RunFilter("R2")}
	stale, back := 0, 0
	for i := range 300 {
		a, err := w.Append(ctx, events.Event{Type: events.StepStarted, RunID: "R2", StepKey: "s"}, events.StepStartedData{Attempt: i + 1})
		require.NoError(t, err)
		first, err := r.LastMatching(ctx, filter2)
		require.NoError(t, err)
		evs, err := r.Read(ctx, events.FollowOptions{Filters: filter2})
		require.NoError(t, err)
		if first < a.Seq || len(evs) < i+1 {
			stale++
		}
		if _, err := r.EventAt(ctx, a.Seq); err != nil {
			stale++
		}
		if len(evs) > 0 && evs[len(evs)-1].Seq < first {
			back++
		}
	}
	missing := 0
	for i := range 300 {
		a, err := w.Append(ctx, events.Event{Type: events.StepStarted, RunID: "R3", StepKey: "s"}, events.StepStartedData{Attempt: i + 1})
		require.NoError(t, err)
		if _, err := r.EventAt(ctx, a.Seq); err != nil {
			missing++
		}
	}
	assert.Zero(t, missing, "events asked for by sequence right after their append and not found, of 300")
	assert.Zero(t, stale, "reads right after an append that missed it, of 300")
	assert.Zero(t, back, "reads that ended before the last event an earlier read saw, of 300")
	for round := range 5 {
		last, err := r.LastMatching(ctx, filters)
		require.NoError(t, err)
		assert.Equal(t, want, last, "round %d: the last event of the run", round)
		evs, err := r.Read(ctx, events.FollowOptions{Filters: filters})
		require.NoError(t, err)
		assert.Equal(t, 3010, len(evs), "round %d: the run's events", round)
		_, err = r.EventAt(ctx, want)
		assert.NoError(t, err, "round %d: the run's last event", round)
	}
}

// BenchmarkReadARunOnAFollower: a reader connected to a follower of the
// event stream reads a run of 100 events (Read), and asks for its last
// event (LastMatching), which the stream's leader answers.
func BenchmarkReadARunOnAFollower(b *testing.B) {
	ctx := testkit.Context(b)
	c := testkit.StartCluster(b, filepath.Join(b.TempDir(), "creds"))
	l, err := events.Open(ctx, events.Config{URL: c.URLs(), NKeySeedFile: c.Creds.File(events.IdentityEngine), Redactor: &events.Redactor{}})
	require.NoError(b, err)
	b.Cleanup(func() { l.Close() })
	appendSteps(b, ctx, l, 100)
	require.NoError(b, c.WaitCurrent(ctx, events.EventsStream))
	leader, err := c.StreamLeader(ctx, events.EventsStream)
	require.NoError(b, err)
	r, err := events.Open(ctx, events.Config{URL: c.Nodes[(leader+1)%len(c.Nodes)].URL(), NKeySeedFile: c.Creds.File(events.IdentityEngine),
		Redactor: &events.Redactor{}})
	require.NoError(b, err)
	b.Cleanup(func() { r.Close() })
	filters := []string{events.RunFilter("R1")}
	b.Run("Read", func(b *testing.B) {
		for b.Loop() {
			evs, err := r.Read(ctx, events.FollowOptions{Filters: filters})
			require.NoError(b, err)
			require.Len(b, evs, 100)
		}
	})
	b.Run("LastMatching", func(b *testing.B) {
		for b.Loop() {
			_, err := r.LastMatching(ctx, filters)
			require.NoError(b, err)
		}
	})
}
