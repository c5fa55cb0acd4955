package projector_test

import (
	"log/slog"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
	"github.com/orbitrun/orbit/projector"
)

// TestMessagesThatDoNotDecodeAreSteppedOver: a log whose last messages do not
// decode (a foreign publisher's bytes, an event type from a newer Orbit)
// still lets WaitFor reach its end, which is what an engine waits for
// before it starts work, and the views are kept across a restart rather
// than rebuilt because their last event is not a valid one.
func TestMessagesThatDoNotDecodeAreSteppedOver(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.log = testkit.StartLog(t, events.Config{Listen: "127.0.0.1:0"})
	// The foreign publisher holds the engine's key: no other may publish.
	key, err := nats.NkeyOptionFromSeed(events.CredsFile(e.log.CredsDir(), events.IdentityEngine))
	require.NoError(t, err)
	nc, err := nats.Connect(e.log.ClientURL(), key)
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	publish := func(body string) uint64 {
		ack, err := js.Publish(e.ctx, events.EventsRoot+".run.foreign.x", []byte(body))
		require.NoError(t, err)
		return ack.Sequence
	}

	valid := e.history(runID(1), runID(2))
	publish(`{"oops"`)
	last := publish(`{"id":"01JFUTURE","type":"run.teleported","run_id":"R","data":{}}`)

	var logs testkit.SyncBuffer
	p := e.open(projector.Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	stop := e.start(p)
	require.NoError(t, p.WaitFor(e.ctx, last))
	assert.Equal(t, last, p.Applied())
	require.NoError(t, stop())
	require.NoError(t, p.Close())
	assert.Equal(t, e.rebuild(valid), testkit.DumpBolt(t, e.path), "the views hold what a replay of the valid events holds")

	p = e.open(projector.Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	e.start(p)
	require.NoError(t, p.WaitFor(e.ctx, last))
	next := e.append(events.Event{Type: events.RunRequested, RunID: runID(3)}, events.RunRequestedData{JobName: "ci"})
	require.NoError(t, p.WaitFor(e.ctx, next))
	v, err := p.RunView(e.ctx, runID(3))
	require.NoError(t, err)
	assert.Equal(t, "ci", v.Job)
	assert.NotContains(t, logs.String(), "rebuilding")
}
