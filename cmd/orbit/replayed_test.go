package main_test

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/engine"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

// copyEvent stores the signed message at seq again, byte for byte with its
// MAC, under the message id msgID: a replay by a holder of the engine's
// NATS identity, who may read and publish but has no log key. A copy the
// server drops as a duplicate is sent again, for up to 20 s: the server
// forgets ids past its duplicate window on a timer of its own.
func copyEvent(t *testing.T, js jetstream.JetStream, seq uint64, msgID string) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	stream, err := js.Stream(ctx, events.EventsStream)
	require.NoError(t, err)
	m, err := stream.GetMsg(ctx, seq)
	require.NoError(t, err)
	hdr := nats.Header{events.MACHeader: m.Header.Values(events.MACHeader), jetstream.MsgIDHeader: []string{msgID}}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		ack, err := js.PublishMsg(ctx, &nats.Msg{Subject: m.Subject, Header: hdr, Data: m.Data})
		require.NoError(t, err)
		if !ack.Duplicate {
			return ack.Sequence
		}
		require.False(t, time.Now().After(deadline), "the server dropped every copy as a duplicate")
	}
}

// TestAReplayedEventIsRejectedAndAudited replays a finished run's signed
// step.finished after its run.finished with a raw NATS client holding the
// engine's identity: first under a message id of its own (as a copy
// published past the server's two-minute duplicate window would be
// stored), then under its own id once the window was shortened to let it
// in. The first fails verification everywhere; audit and replay --verify
// list both, and what the second breaks: a repeated id, an event after
// its run's end, the shortened window.
func TestAReplayedEventIsRejectedAndAudited(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	serve(t, p)
	r := p.Orbit("job", "run", "example")
	require.Equal(t, 0, r.Code, r.String())
	runID := strings.TrimSpace(strings.SplitN(r.Stdout, "\n", 2)[0])
	finished := runEvents(t, p, runID, "--type", events.StepFinished)
	require.Len(t, finished, 2)

	js := outsideJetStream(t, p)
	first := copyEvent(t, js, finished[1].Seq, "copy-1")
	evs := orbitJSON[[]events.Event](t, p, "run", "events", "--json", runID, "--type", events.StepFinished)
	assert.Len(t, evs, 2, "the copy is left out")
	assert.Equal(t, 2, len(runView(t, p, runID).Steps), "the views hold the run's two steps")

	r = p.Orbit("audit")
	assert.Equal(t, 1, r.Code, r.String())
	assert.Contains(t, r.Stdout, "seq "+seqText(first)+" orbit.events.run."+runID+".step.finished: bad MAC")
	r = p.Orbit("replay", "--verify")
	assert.Equal(t, 1, r.Code, r.String())

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stream, err := js.Stream(ctx, events.EventsStream)
	require.NoError(t, err)
	cfg := stream.CachedInfo().Config
	cfg.Duplicates = time.Second
	_, err = js.UpdateStream(ctx, cfg)
	require.NoError(t, err)
	orig, err := stream.GetMsg(ctx, finished[1].Seq)
	require.NoError(t, err)
	second := copyEvent(t, js, finished[1].Seq, orig.Header.Get(jetstream.MsgIDHeader))

	r = p.Orbit("audit")
	assert.Equal(t, 1, r.Code, r.String())
	for _, want := range []string{
		"seq " + seqText(second) + " orbit.events.run." + runID + ".step.finished: repeated id: " + finished[1].ID + ": a copy of the event at seq " + seqText(finished[1].Seq),
		"seq " + seqText(second) + " orbit.events.run." + runID + ".step.finished: after its run's end",
		"stream ORBIT_EVENTS: duplicate window: 1s",
	} {
		assert.Contains(t, r.Stdout, want)
	}
	r = p.Orbit("replay", "--verify")
	assert.Equal(t, 1, r.Code, r.String())
	assert.Contains(t, r.Stdout, "repeated id")
}

// TestALogOfTheFirstFormatAuditsAndReplaysAsBefore opens a log written by
// the engine before MACs were bound to their place (testdata: two runs of
// the example job, with the views, key and identities of the root that
// wrote it). It audits and replays clean as it is, takes new runs, which
// are signed in format 2, and then refuses a copy of one of its old
// events stored again.
func TestALogOfTheFirstFormatAuditsAndReplaysAsBefore(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	p.StopEngine()
	state := engine.StateDir(p.Root)
	for _, name := range []string{"nats", "creds", "views.db"} {
		require.NoError(t, os.RemoveAll(filepath.Join(state, name)))
	}
	untar(t, filepath.Join("testdata", "log-format1.tar.gz"), state)

	r := p.Orbit("audit")
	require.Equal(t, 0, r.Code, r.String())
	assert.Contains(t, r.Stdout, "audited 24 events through sequence 24 (signed from sequence 1")
	r = p.Orbit("replay", "--verify")
	require.Equal(t, 0, r.Code, r.String())
	r = p.Orbit("run", "history")
	require.Equal(t, 0, r.Code, r.String())
	assert.Equal(t, 2, strings.Count(r.Stdout, "example"), r.Stdout)

	r = p.Orbit("job", "run", "example")
	require.Equal(t, 0, r.Code, r.String())
	var key struct {
		BoundEventsFrom uint64 `json:"bound_events_from"`
	}
	data, err := os.ReadFile(engine.LogKeyPath(p.Root))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &key))
	assert.Equal(t, uint64(25), key.BoundEventsFrom, "format 2 from the first event the new engine wrote")
	r = p.Orbit("audit")
	assert.Equal(t, 0, r.Code, r.String())
	assert.Contains(t, r.Stdout, "bound from sequence 25")
	r = p.Orbit("replay", "--verify")
	assert.Equal(t, 0, r.Code, r.String())

	copied := copyEvent(t, outsideJetStream(t, p), 7, "copy-1")
	r = p.Orbit("audit")
	assert.Equal(t, 1, r.Code, r.String())
	assert.Contains(t, r.Stdout, "seq "+seqText(copied)+" ")
	assert.Contains(t, r.Stdout, ": not bound to its place")
}

// untar unpacks the gzipped tar archive at path into dir.
func untar(t *testing.T, path, dir string) {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	gz, err := gzip.NewReader(f)
	require.NoError(t, err)
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return
		}
		require.NoError(t, err)
		target := filepath.Join(dir, filepath.FromSlash(h.Name))
		switch h.Typeflag {
		case tar.TypeDir:
			require.NoError(t, os.MkdirAll(target, 0o700))
		case tar.TypeReg:
			require.NoError(t, os.MkdirAll(filepath.Dir(target), 0o700))
			out, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, os.FileMode(h.Mode).Perm())
			require.NoError(t, err)
			_, err = io.Copy(out, tr)
			require.NoError(t, err)
			require.NoError(t, out.Close())
		}
	}
}

func seqText(seq uint64) string { return strconv.FormatUint(seq, 10) }
