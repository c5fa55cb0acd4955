package events_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

// TestIdentitiesAreTheirOwnersOnly: the creds directory and its seeds are
// made readable by their owner only, narrowed back when widened, and never
// replaced.
func TestIdentitiesAreTheirOwnersOnly(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "state", "creds")
	c, err := events.EnsureCreds(dir)
	require.NoError(t, err)
	mode := func(path string) os.FileMode {
		fi, err := os.Stat(path)
		require.NoError(t, err)
		return fi.Mode().Perm()
	}
	assert.Equal(t, os.FileMode(0o700), mode(dir))
	for _, id := range events.Identities {
		assert.Equal(t, os.FileMode(0o600), mode(c.File(id)), id)
		assert.Regexp(t, `^U[A-Z2-7]{55}$`, c.Public[id], id)
	}
	assert.NotEqual(t, c.Public[events.IdentityClient], c.Public[events.IdentityReader])

	require.NoError(t, os.Chmod(dir, 0o755))
	require.NoError(t, os.Chmod(c.File(events.IdentityClient), 0o644))
	again, err := events.EnsureCreds(dir)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), mode(dir), "widened, narrowed back")
	assert.Equal(t, os.FileMode(0o600), mode(c.File(events.IdentityClient)), "widened, narrowed back")
	assert.Equal(t, c.Public, again.Public, "an existing seed is kept")
}

// helloLog starts a log served on a loopback port, holding one event
// (run R1 requested), with an engine.info endpoint that answers "hello".
func helloLog(ctx context.Context, t *testing.T) *events.Log {
	t.Helper()
	l := testkit.StartLog(t, events.Config{Listen: "127.0.0.1:0"})
	stop, err := l.Serve("", "test", "0.0.1", 10*time.Second, map[string]events.Handler{
		"engine.info": func(context.Context, json.RawMessage) (any, error) { return "hello", nil },
	})
	require.NoError(t, err)
	t.Cleanup(stop.Stop)
	_, err = l.Append(ctx, events.Event{Type: events.RunRequested, RunID: "R1"}, events.RunRequestedData{})
	require.NoError(t, err)
	return l
}

// TestAReaderReadsTheLogAndNothingElse: with the reader's key a process
// follows the log and reads blobs, but cannot call the engine's API; the
// client's key can.
func TestAReaderReadsTheLogAndNothingElse(t *testing.T) {
	t.Parallel()
	ctx := testkit.Context(t)
	l := helloLog(ctx, t)
	ref, err := l.PutBlob(ctx, []byte("a blob"))
	require.NoError(t, err)

	reader := dialAs(ctx, t, l, events.IdentityReader)
	evs, err := reader.Read(ctx, events.FollowOptions{})
	require.NoError(t, err)
	require.Len(t, evs, 1)
	assert.Equal(t, "R1", evs[0].RunID)
	f, err := reader.Follow(ctx, events.FollowOptions{})
	require.NoError(t, err)
	assert.Equal(t, "R1", (<-f.Events()).RunID)
	f.Stop()
	blob, err := reader.GetBlob(ctx, ref.Digest)
	require.NoError(t, err)
	assert.Equal(t, "a blob", string(blob))
	short, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	var answer string
	assert.ErrorIs(t, reader.Request(short, "engine.info", nil, &answer), events.ErrNotPermitted, "a reader may not call the API, and hears so before its timeout")

	client := dialAs(ctx, t, l, events.IdentityClient)
	require.NoError(t, client.Request(ctx, "engine.info", nil, &answer))
	assert.Equal(t, "hello", answer)
	short, cancel = context.WithTimeout(ctx, time.Second)
	defer cancel()
	_, err = client.Append(short, events.Event{Type: events.RunRequested, RunID: "R2"}, events.RunRequestedData{})
	assert.ErrorIs(t, err, events.ErrNotPermitted, "a client may not append, and hears so before its timeout")
	last, err := l.LastSeq(ctx)
	require.NoError(t, err)
	assert.Equal(t, uint64(1), last, "nothing but the engine's event is in the log")
}

// TestARefusedBatchOfAppendsFailsAtOnce: appends the server refuses fail
// with ErrNotPermitted when the refusal comes, whether published on their
// own or gathered into an atomic batch, and closing the log does not wait
// for answers that cannot come.
func TestARefusedBatchOfAppendsFailsAtOnce(t *testing.T) {
	t.Parallel()
	ctx := testkit.Context(t)
	l := helloLog(ctx, t)
	client := dialAs(ctx, t, l, events.IdentityClient)
	var pending []*events.PendingAppend
	for i := range 30 {
		p, err := client.AppendAsync(ctx, events.Event{Type: events.RunRequested, RunID: fmt.Sprintf("R%d", i+2)}, events.RunRequestedData{})
		require.NoError(t, err)
		pending = append(pending, p)
	}
	short, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for i, p := range pending {
		_, err := p.Wait(short)
		assert.ErrorIs(t, err, events.ErrNotPermitted, "append %d", i)
	}
	closed := make(chan struct{})
	go func() {
		client.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-short.Done():
		t.Fatal("closing the client's log waits for refused appends")
	}
	last, err := l.LastSeq(ctx)
	require.NoError(t, err)
	assert.Equal(t, uint64(1), last, "nothing but the engine's event is in the log")
}
