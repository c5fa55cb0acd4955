package events_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

// signedLog starts a log that signs with a key made in a temp directory,
// listening on a loopback port so that an outside client can reach it.
func signedLog(t *testing.T) (*events.Log, string) {
	t.Helper()
	key := filepath.Join(t.TempDir(), "creds", events.LogKeyFile)
	l := testkit.StartLog(t, events.Config{Listen: "127.0.0.1:0", LogKeyFile: key, MakeLogKey: true})
	require.True(t, l.Signing())
	return l, key
}

// outsider connects to l's server with the engine's own NATS identity but
// without the log key: the worst a stolen seed allows.
func outsider(t *testing.T, l *events.Log) jetstream.JetStream {
	t.Helper()
	js, err := jetstream.New(testkit.DialEngine(t, l.ClientURL(), l.CredsDir()))
	require.NoError(t, err)
	return js
}

// forge publishes a well-formed envelope the way an outsider would.
func forge(t *testing.T, js jetstream.JetStream, ev events.Event, payload any, opts ...jetstream.PublishOpt) uint64 {
	t.Helper()
	data, err := json.Marshal(payload)
	require.NoError(t, err)
	ev.Data = data
	if ev.Time.IsZero() {
		ev.Time = time.Now().UTC()
	}
	subject, err := ev.Subject()
	require.NoError(t, err)
	body, err := json.Marshal(ev)
	require.NoError(t, err)
	msg := &nats.Msg{Subject: subject, Data: body, Header: nats.Header{}}
	if len(opts) == 0 {
		opts = []jetstream.PublishOpt{jetstream.WithMsgID(ev.ID)}
	}
	ack, err := js.PublishMsg(testkit.Context(t), msg, opts...)
	require.NoError(t, err)
	return ack.Sequence
}

func rejections(t *testing.T, l *events.Log, run string) []events.IntegrityRejectedData {
	t.Helper()
	evs, err := l.Read(testkit.Context(t), events.FollowOptions{Filters: []string{events.EventSubject(events.AggregateRun, run, events.IntegrityRejected)}})
	require.NoError(t, err)
	var out []events.IntegrityRejectedData
	for _, ev := range evs {
		var d events.IntegrityRejectedData
		require.NoError(t, ev.Decode(&d))
		out = append(out, d)
	}
	return out
}

func TestForgedEventsAreNeverDelivered(t *testing.T) {
	t.Parallel()
	ctx := testkit.Context(t)
	l, _ := signedLog(t)
	js := outsider(t, l)

	finished := events.Event{ID: events.DecisionID(events.StepFinished, "R", "build", "1"), Type: events.StepFinished, RunID: "R", StepKey: "build"}
	forgedWithID := forge(t, js, finished, events.StepFinishedData{State: events.StateSuccess, Output: "forged"})
	bad := finished
	bad.ID = "other"
	msgData, _ := json.Marshal(events.StepFinishedData{State: events.StateSuccess, Output: "forged too"})
	bad.Data = msgData
	body, _ := json.Marshal(bad)
	subject, _ := bad.Subject()
	// It also carries the headers a direct get answers with, to mislead a
	// reader about where it is stored and where the batch ends.
	ack, err := js.PublishMsg(ctx, &nats.Msg{Subject: subject, Data: body, Header: nats.Header{
		events.MACHeader: []string{"00ff"}, "Nats-Sequence": []string{"999999"},
		"Nats-Subject": []string{"orbit.events.run.X.step.finished"}, "Status": []string{"404"},
	}})
	require.NoError(t, err)
	forgedMAC := ack.Sequence

	real, err := l.Append(ctx, finished, events.StepFinishedData{State: events.StateSuccess, Output: "real"})
	require.NoError(t, err)
	assert.False(t, real.Duplicate, "a forgery under the derived id does not take the real event's place")

	read := func() []events.Event {
		evs, err := l.Read(ctx, events.FollowOptions{Filters: []string{events.EventSubject(events.AggregateRun, "R", events.StepFinished)}, Placeholders: true})
		require.NoError(t, err)
		return evs
	}
	evs := read()
	require.Len(t, evs, 3)
	assert.True(t, evs[0].Placeholder(), "forged under the derived id")
	assert.True(t, evs[1].Placeholder(), "forged with a wrong MAC")
	assert.Equal(t, real.Seq, evs[2].Seq)
	var d events.StepFinishedData
	require.NoError(t, evs[2].Decode(&d))
	assert.Equal(t, "real", d.Output)
	read() // read again: rejections are recorded once

	_, err = l.EventAt(ctx, forgedWithID)
	assert.ErrorIs(t, err, events.ErrTampered)

	feed, err := l.Follow(ctx, events.FollowOptions{Filters: []string{events.RunFilter("R")}})
	require.NoError(t, err)
	defer feed.Stop()
	<-feed.CaughtUp()
	got := []string{}
	for len(got) < 1 {
		ev := <-feed.Events()
		if ev.Type == events.StepFinished {
			got = append(got, ev.ID)
			assert.Equal(t, real.Seq, ev.Seq, "the feed delivers only the real step.finished")
		}
	}

	rej := rejections(t, l, "R")
	require.Len(t, rej, 2, "one integrity.rejected per forged message, however often it is read")
	assert.Equal(t, events.IntegrityRejectedData{Stream: events.EventsStream, Subject: subject, Seq: forgedWithID, Reason: events.ReasonUnsigned}, rej[0])
	assert.Equal(t, events.IntegrityRejectedData{Stream: events.EventsStream, Subject: subject, Seq: forgedMAC, Reason: events.ReasonBadMAC}, rej[1])

	rep, err := l.Audit(ctx)
	require.NoError(t, err)
	kinds := map[uint64]string{}
	for _, p := range rep.Problems {
		kinds[p.Seq] = p.Kind
	}
	assert.Equal(t, map[uint64]string{forgedWithID: events.ProblemUnsigned, forgedMAC: events.ProblemBadMAC}, kinds)
}

func TestForgedCommandsAreNeverRun(t *testing.T) {
	t.Parallel()
	ctx := testkit.Context(t)
	l, _ := signedLog(t)
	js := outsider(t, l)

	_, err := js.PublishMsg(ctx, &nats.Msg{Subject: events.CommandSubject("step.shell.FAKE.x.1"), Data: []byte(`{"cmd":"sh -c id"}`)},
		jetstream.WithMsgID("forged"))
	require.NoError(t, err)
	require.NoError(t, l.Send(ctx, "step.shell.R.a.1", "cmd-a", map[string]string{"x": "1"}))

	got := make(chan *events.Command, 4)
	stop, err := l.Consume(ctx, events.ConsumerSpec{Durable: "t", Command: "step.>"}, func(c *events.Command) {
		got <- c
		_ = c.Ack(ctx)
	})
	require.NoError(t, err)
	defer stop.Stop()
	select {
	case c := <-got:
		assert.Equal(t, "cmd-a", c.ID, "the signed command keeps its readable id")
		assert.Equal(t, events.CommandSubject("step.shell.R.a.1"), c.Subject)
	case <-ctx.Done():
		t.Fatal("the signed command was not delivered")
	}
	require.Eventually(t, func() bool { return len(rejections(t, l, "FAKE")) == 1 }, 10*time.Second, 20*time.Millisecond)
	assert.Equal(t, events.ReasonUnsigned, rejections(t, l, "FAKE")[0].Reason)
	require.Eventually(t, func() bool {
		pending, err := l.Pending(ctx, "step.shell.FAKE.x.1")
		return err == nil && !pending
	}, 10*time.Second, 20*time.Millisecond, "the forged command is removed, not redelivered")
	select {
	case c := <-got:
		t.Fatalf("a forged command was delivered: %s", c.Subject)
	default:
	}
}

func TestALogWrittenBeforeTheKeyReadsClean(t *testing.T) {
	t.Parallel()
	ctx := testkit.Context(t)
	store := filepath.Join(t.TempDir(), "nats")
	key := filepath.Join(t.TempDir(), "creds", events.LogKeyFile)

	old, err := events.Open(ctx, events.Config{StoreDir: store, Redactor: &events.Redactor{}})
	require.NoError(t, err)
	_, err = old.Append(ctx, events.Event{Type: events.RunRequested, RunID: "R"}, events.RunRequestedData{JobName: "j"})
	require.NoError(t, err)
	require.NoError(t, old.Send(ctx, "run.request", "queued-before", map[string]string{"run": "R"}))
	require.NoError(t, old.Close())

	l, err := events.Open(ctx, events.Config{StoreDir: store, Redactor: &events.Redactor{}, LogKeyFile: key, MakeLogKey: true})
	require.NoError(t, err)
	defer l.Close()
	require.True(t, l.Signing())
	_, err = l.Append(ctx, events.Event{Type: events.RunStarted, RunID: "R"}, events.RunStartedData{Engine: "e"})
	require.NoError(t, err)

	evs, err := l.Read(ctx, events.FollowOptions{Placeholders: true})
	require.NoError(t, err)
	require.Len(t, evs, 2)
	assert.Equal(t, events.RunRequested, evs[0].Type, "the unsigned start of the log is kept")
	assert.Equal(t, events.RunStarted, evs[1].Type)
	rep, err := l.Audit(ctx)
	require.NoError(t, err)
	assert.Empty(t, rep.Problems)
	assert.Equal(t, uint64(2), rep.SignedFrom)

	got := make(chan string, 1)
	stop, err := l.Consume(ctx, events.ConsumerSpec{Durable: "t", Command: "run.request"}, func(c *events.Command) {
		got <- c.ID
		_ = c.Ack(ctx)
	})
	require.NoError(t, err)
	defer stop.Stop()
	select {
	case id := <-got:
		assert.Equal(t, "queued-before", id, "a command queued by an older engine still runs")
	case <-ctx.Done():
		t.Fatal("the command queued before the key was not delivered")
	}

	fi, err := os.Stat(key)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	di, err := os.Stat(filepath.Dir(key))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), di.Mode().Perm())
}

func TestTheLogKeyNeverReachesTheLog(t *testing.T) {
	t.Parallel()
	ctx := testkit.Context(t)
	l, key := signedLog(t)
	var f struct {
		Key string `json:"key"`
	}
	b, err := os.ReadFile(key)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &f))
	require.Len(t, f.Key, 64)

	_, err = l.Append(ctx, events.Event{Type: events.RunRequested, RunID: "R"}, events.RunRequestedData{JobName: "leak " + f.Key})
	require.NoError(t, err)
	evs, err := l.Read(ctx, events.FollowOptions{})
	require.NoError(t, err)
	require.Len(t, evs, 1)
	assert.NotContains(t, string(evs[0].Data), f.Key)
	assert.Contains(t, string(evs[0].Data), events.Redacted)
}

func TestAuditFindsRemovedEvents(t *testing.T) {
	t.Parallel()
	ctx := testkit.Context(t)
	l, _ := signedLog(t)
	for range 5 {
		_, err := l.Append(ctx, events.Event{Type: events.RunRequested, RunID: events.NewID()}, events.RunRequestedData{JobName: "j"})
		require.NoError(t, err)
	}
	js := outsider(t, l)
	// Behind the engine's back: copy the signed log into a new stream of
	// the same name that allows deletes, remove two events in the middle
	// and the last, and deny deletes again.
	stream, err := js.Stream(ctx, events.EventsStream)
	require.NoError(t, err)
	var msgs []*jetstream.RawStreamMsg
	for seq := uint64(1); seq <= 5; seq++ {
		m, err := stream.GetMsg(ctx, seq)
		require.NoError(t, err)
		msgs = append(msgs, m)
	}
	cfg := stream.CachedInfo().Config
	require.NoError(t, js.DeleteStream(ctx, events.EventsStream))
	cfg.DenyDelete, cfg.DenyPurge = false, false
	stream, err = js.CreateStream(ctx, cfg)
	require.NoError(t, err)
	for _, m := range msgs {
		hdr := nats.Header{events.MACHeader: m.Header.Values(events.MACHeader), jetstream.MsgIDHeader: m.Header.Values(jetstream.MsgIDHeader)}
		_, err := js.PublishMsg(ctx, &nats.Msg{Subject: m.Subject, Header: hdr, Data: m.Data})
		require.NoError(t, err)
	}
	for _, seq := range []uint64{2, 3, 5} {
		require.NoError(t, stream.DeleteMsg(ctx, seq))
	}
	cfg.DenyDelete, cfg.DenyPurge = true, true
	_, err = js.UpdateStream(ctx, cfg)
	require.NoError(t, err)

	rep, err := l.Audit(ctx)
	require.NoError(t, err)
	assert.Equal(t, []events.AuditProblem{
		{Kind: events.ProblemMissing, Seq: 2, Through: 3},
		{Kind: events.ProblemMissing, Seq: 5, Through: 5},
	}, rep.Problems)
	assert.Equal(t, "seq 2-3: missing", rep.Problems[0].String())
	assert.Equal(t, uint64(5), rep.LastSeq)
	assert.Equal(t, uint64(2), rep.Messages)
}

func TestAUnkeyedClientPublishesWhatASigningEngineRejects(t *testing.T) {
	t.Parallel()
	ctx := testkit.Context(t)
	l, key := signedLog(t)

	// Both sign in with the engine's identity: only an engine may publish.
	seed := events.CredsFile(l.CredsDir(), events.IdentityEngine)
	keyed, err := events.Dial(ctx, l.ClientURL(), events.Config{NKeySeedFile: seed, LogKeyFile: key, Redactor: &events.Redactor{}})
	require.NoError(t, err)
	defer keyed.Close()
	require.True(t, keyed.Signing())
	bare, err := events.Dial(ctx, l.ClientURL(), events.Config{NKeySeedFile: seed, LogKeyFile: filepath.Join(t.TempDir(), "none"), Redactor: &events.Redactor{}})
	require.NoError(t, err)
	defer bare.Close()
	require.False(t, bare.Signing())

	a, err := keyed.Append(ctx, events.Event{Type: events.RunRequested, RunID: "K"}, events.RunRequestedData{JobName: "j"})
	require.NoError(t, err)
	b, err := bare.Append(ctx, events.Event{Type: events.RunRequested, RunID: "B"}, events.RunRequestedData{JobName: "j"})
	require.NoError(t, err)
	_, err = l.EventAt(ctx, a.Seq)
	require.NoError(t, err)
	_, err = l.EventAt(ctx, b.Seq)
	require.ErrorIs(t, err, events.ErrTampered)
	require.Len(t, rejections(t, l, "B"), 1)
	assert.Empty(t, rejections(t, keyed, "K"), "a client records no rejections")
}

func BenchmarkAppendSigned(b *testing.B) {
	for _, signed := range []bool{false, true} {
		name := "unsigned"
		cfg := events.Config{}
		if signed {
			name = "signed"
			cfg = events.Config{LogKeyFile: filepath.Join(b.TempDir(), events.LogKeyFile), MakeLogKey: true}
		}
		b.Run(name, func(b *testing.B) {
			l := testkit.StartLog(b, cfg)
			ctx := context.Background()
			b.ResetTimer()
			for i := range b.N {
				_, err := l.Append(ctx, events.Event{Type: events.StepFinished, RunID: "R", StepKey: "s"}, events.StepFinishedData{State: events.StateSuccess, Output: i})
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func TestABlobReplacedBehindTheLogsBackIsRefused(t *testing.T) {
	t.Parallel()
	ctx := testkit.Context(t)
	l, _ := signedLog(t)
	ref, err := l.PutBlob(ctx, []byte("the real output"))
	require.NoError(t, err)

	obs, err := outsider(t, l).ObjectStore(ctx, events.BlobsStore)
	require.NoError(t, err)
	_, err = obs.PutBytes(ctx, ref.Digest, []byte("forged output"))
	require.NoError(t, err)
	_, err = l.GetBlob(ctx, ref.Digest)
	assert.ErrorIs(t, err, events.ErrTampered)
}

func TestAForgedCommandIsNotPending(t *testing.T) {
	t.Parallel()
	ctx := testkit.Context(t)
	l, _ := signedLog(t)
	_, err := outsider(t, l).PublishMsg(ctx, &nats.Msg{Subject: events.CommandSubject("step.shell.R.a.1"), Data: []byte(`{}`)})
	require.NoError(t, err)
	pending, err := l.Pending(ctx, "step.shell.R.a.1")
	require.NoError(t, err)
	assert.False(t, pending, "the real command is still sent")
	require.NoError(t, l.Send(ctx, "step.shell.R.a.1", "cmd-a", map[string]string{"x": "1"}))
	pending, err = l.Pending(ctx, "step.shell.R.a.1")
	require.NoError(t, err)
	assert.True(t, pending)
}

// TestAnUnsignedStartIsAcceptedOnlyFromTheOriginalStream: the key accepts
// the unsigned messages of the log it was made beside, across restarts,
// but not those of a stream deleted and made again under the same name,
// whose low sequences anyone could fill.
func TestAnUnsignedStartIsAcceptedOnlyFromTheOriginalStream(t *testing.T) {
	t.Parallel()
	ctx := testkit.Context(t)
	store := filepath.Join(t.TempDir(), "nats")
	key := filepath.Join(t.TempDir(), "creds", events.LogKeyFile)
	open := func(cfg events.Config) *events.Log {
		cfg.StoreDir, cfg.Redactor, cfg.Listen = store, &events.Redactor{}, "127.0.0.1:0"
		l, err := events.Open(ctx, cfg)
		require.NoError(t, err)
		return l
	}
	l := open(events.Config{})
	for range 3 {
		_, err := l.Append(ctx, events.Event{Type: events.RunRequested, RunID: events.NewID()}, events.RunRequestedData{JobName: "j"})
		require.NoError(t, err)
	}
	require.NoError(t, l.Close())
	l = open(events.Config{LogKeyFile: key, MakeLogKey: true})
	require.NoError(t, l.Close())

	l = open(events.Config{LogKeyFile: key, MakeLogKey: true})
	defer l.Close()
	evs, err := l.Read(ctx, events.FollowOptions{})
	require.NoError(t, err)
	assert.Len(t, evs, 3, "after a restart the unsigned start still reads")

	js := outsider(t, l)
	stream, err := js.Stream(ctx, events.EventsStream)
	require.NoError(t, err)
	cfg := stream.CachedInfo().Config
	require.NoError(t, js.DeleteStream(ctx, events.EventsStream))
	_, err = js.CreateStream(ctx, cfg)
	require.NoError(t, err)
	forge(t, js, events.Event{ID: "forged", Type: events.RunRequested, RunID: "F"}, events.RunRequestedData{JobName: "j"})

	time.Sleep(1100 * time.Millisecond) // past the cached answer about the stream
	evs, err = l.Read(ctx, events.FollowOptions{Placeholders: true})
	require.NoError(t, err)
	require.Len(t, evs, 1)
	assert.True(t, evs[0].Placeholder(), "seq 1 of a new stream is below the key's start, and still refused unsigned")
	rep, err := l.Audit(ctx)
	require.NoError(t, err)
	require.Len(t, rep.Problems, 1)
	assert.Equal(t, events.ProblemUnsigned, rep.Problems[0].Kind)
}
