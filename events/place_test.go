package events_test

import (
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

// appendRun appends a whole run of one step to l and returns the sequence
// of its step.finished.
func appendRun(t *testing.T, l *events.Log, run string) uint64 {
	t.Helper()
	ctx := testkit.Context(t)
	app := func(ev events.Event, payload any) uint64 {
		ev.RunID = run
		res, err := l.Append(ctx, ev, payload)
		require.NoError(t, err)
		return res.Seq
	}
	app(events.Event{ID: events.DecisionID(events.RunRequested, run), Type: events.RunRequested}, events.RunRequestedData{JobName: "j"})
	app(events.Event{ID: events.DecisionID(events.StepStarted, run, "s", "1"), Type: events.StepStarted, StepKey: "s"}, events.StepStartedData{Attempt: 1})
	finished := app(events.Event{ID: events.DecisionID(events.StepFinished, run, "s", "1"), Type: events.StepFinished, StepKey: "s"},
		events.StepFinishedData{Attempt: 1, State: events.StateSuccess, Output: "real"})
	app(events.Event{ID: events.RunFinishedID(run, 0), Type: events.RunFinished}, events.RunFinishedData{State: events.StateSuccess})
	return finished
}

// TestACopyOfASignedEventUnderAnotherIDIsRejected replays a signed
// step.finished after its run's end, as a holder of the engine's NATS
// identity (not of the log key) can: byte for byte, MAC included, under a
// message id of its own, which the server's duplicate check does not
// know. The MAC covers the message id: every read leaves the copy out,
// and audit lists it.
func TestACopyOfASignedEventUnderAnotherIDIsRejected(t *testing.T) {
	t.Parallel()
	ctx := testkit.Context(t)
	l, _ := signedLog(t)
	seq := appendRun(t, l, "R")
	js := outsider(t, l)
	stream, err := js.Stream(ctx, events.EventsStream)
	require.NoError(t, err)
	orig, err := stream.GetMsg(ctx, seq)
	require.NoError(t, err)
	ack, err := js.PublishMsg(ctx, &nats.Msg{Subject: orig.Subject, Data: orig.Data,
		Header: nats.Header{events.MACHeader: orig.Header.Values(events.MACHeader), jetstream.MsgIDHeader: []string{"copy-1"}}})
	require.NoError(t, err)
	require.False(t, ack.Duplicate)

	evs, err := l.Read(ctx, events.FollowOptions{Filters: []string{events.EventSubject(events.AggregateRun, "R", events.StepFinished)}})
	require.NoError(t, err)
	require.Len(t, evs, 1)
	assert.Equal(t, seq, evs[0].Seq)
	assert.Equal(t, []events.IntegrityRejectedData{{Stream: events.EventsStream, Subject: orig.Subject, Seq: ack.Sequence, Reason: events.ReasonBadMAC}},
		rejections(t, l, "R"))
	rep, err := l.Audit(ctx)
	require.NoError(t, err)
	require.Len(t, rep.Problems, 1, "%v", rep.Problems)
	assert.Equal(t, events.AuditProblem{Kind: events.ProblemBadMAC, Seq: ack.Sequence, Subject: orig.Subject}, rep.Problems[0])
}

// TestAuditFindsWhatACopyBreaks: on a log without a key, where nothing is
// verified, audit still finds what an event stored a second time breaks: an
// event seen before, an event after its run's end, a time long before its
// run's earlier events. What a run may rightly get after its end (a
// cancel, twice; the end of a step still running) and a clock that
// jitters are not problems.
func TestAuditFindsWhatACopyBreaks(t *testing.T) {
	t.Parallel()
	ctx := testkit.Context(t)
	l := testkit.StartLog(t, events.Config{Listen: "127.0.0.1:0"})
	seq := appendRun(t, l, "R")
	app := func(ev events.Event, payload any) uint64 {
		res, err := l.Append(ctx, ev, payload)
		require.NoError(t, err)
		require.False(t, res.Duplicate)
		return res.Seq
	}
	// Rightly after the end: a cancel of the finished run, and another,
	// under the same decision id, as one sent past the duplicate window is.
	cancel := events.Event{ID: events.DecisionID(events.RunCancelRequested, "R"), Type: events.RunCancelRequested, RunID: "R"}
	app(cancel, events.RunCancelRequestedData{Requester: "me"})
	again, err := json.Marshal(events.RunCancelRequestedData{Requester: "me, later"})
	require.NoError(t, err)
	cancel.Data, cancel.Time = again, time.Now().UTC()
	body, err := json.Marshal(cancel)
	require.NoError(t, err)
	// A byte-for-byte copy of the step.finished, under another message id.
	js := outsider(t, l)
	_, err = js.PublishMsg(ctx, &nats.Msg{Subject: events.EventSubject(events.AggregateRun, "R", events.RunCancelRequested), Data: body}, jetstream.WithMsgID("later"))
	require.NoError(t, err)
	stream, err := js.Stream(ctx, events.EventsStream)
	require.NoError(t, err)
	orig, err := stream.GetMsg(ctx, seq)
	require.NoError(t, err)
	ack, err := js.PublishMsg(ctx, &nats.Msg{Subject: orig.Subject, Data: orig.Data}, jetstream.WithMsgID("copy-1"))
	require.NoError(t, err)

	// A second run, whose step was still running at its end, and whose
	// events jitter by a second.
	now := time.Now().UTC()
	app(events.Event{Type: events.StepStarted, RunID: "S", StepKey: "a", Time: now}, events.StepStartedData{Attempt: 1})
	app(events.Event{Type: events.RunFinished, RunID: "S", Time: now.Add(time.Second)}, events.RunFinishedData{State: events.StateCancelled})
	app(events.Event{Type: events.ShellExited, RunID: "S", StepKey: "a", Time: now}, events.ShellExitedData{})
	app(events.Event{Type: events.StepFinished, RunID: "S", StepKey: "a", Time: now.Add(2 * time.Second)}, events.StepFinishedData{Attempt: 1, State: events.StateCancelled})
	// And a third whose second event is made five minutes before its first.
	app(events.Event{Type: events.RunRequested, RunID: "T", Time: now}, events.RunRequestedData{JobName: "j"})
	back := app(events.Event{Type: events.RunStarted, RunID: "T", Time: now.Add(-5 * time.Minute)}, events.RunStartedData{})

	rep, err := l.Audit(ctx)
	require.NoError(t, err)
	got := map[uint64][]string{}
	for _, p := range rep.Problems {
		got[p.Seq] = append(got[p.Seq], p.Kind)
	}
	assert.Equal(t, map[uint64][]string{
		ack.Sequence: {events.ProblemRepeatedID, events.ProblemAfterEnd},
		back:         {events.ProblemTimeBackwards},
	}, got)
	for _, p := range rep.Problems {
		if p.Kind == events.ProblemRepeatedID {
			assert.Contains(t, p.String(), "a copy of the event at seq "+strconv.FormatUint(seq, 10))
		}
	}
}

// TestAClientVerifiesWithTheEnginesKeyOrNone: a client told which key the
// engine signs with (its KeyID) keeps its own key when it is that one,
// takes the engine's file when it is not, and verifies nothing when it
// cannot have it or the engine signs nothing; a reader that verifies says
// what it leaves out, to OnReject, once a message.
func TestAClientVerifiesWithTheEnginesKeyOrNone(t *testing.T) {
	t.Parallel()
	ctx := testkit.Context(t)
	l, key := signedLog(t)
	other, _ := signedLog(t)
	otherKey := other.KeyFile()
	seed := events.CredsFile(l.CredsDir(), events.IdentityClient)
	var left []events.Rejection
	dial := func(keyFile string) *events.Log {
		c, err := events.Dial(ctx, l.ClientURL(), events.Config{NKeySeedFile: seed, LogKeyFile: keyFile, Redactor: &events.Redactor{},
			OnReject: func(r events.Rejection) { left = append(left, r) }})
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		return c
	}
	require.NotEqual(t, l.KeyID(), other.KeyID())
	assert.Equal(t, key, dial(key).UseKey(l.KeyID(), otherKey), "its own key is the engine's")
	assert.Equal(t, key, dial(otherKey).UseKey(l.KeyID(), key), "it takes the engine's file")
	wrong := dial(otherKey)
	assert.Empty(t, wrong.UseKey(l.KeyID()), "no file with the engine's key at hand")
	assert.False(t, wrong.Signing())
	unsigned := dial(key)
	assert.Empty(t, unsigned.UseKey(""), "the engine signs nothing")
	assert.False(t, unsigned.Signing())

	_, err := l.Append(ctx, events.Event{Type: events.RunRequested, RunID: "R"}, events.RunRequestedData{JobName: "j"})
	require.NoError(t, err)
	evs, err := wrong.Read(ctx, events.FollowOptions{})
	require.NoError(t, err)
	assert.Len(t, evs, 1, "a client that cannot verify reads what is there")
	mismatched := dial(otherKey) // as a client of an engine that does not say its key
	for range 2 {
		evs, err = mismatched.Read(ctx, events.FollowOptions{})
		require.NoError(t, err)
		assert.Empty(t, evs)
	}
	require.Len(t, left, 1, "said once")
	assert.Equal(t, events.ReasonBadMAC, left[0].Reason)
}
