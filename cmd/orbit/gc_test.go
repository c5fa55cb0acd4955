package main_test

import (
	"crypto/sha256"
	"encoding/hex"
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
	"github.com/orbitrun/orbit/shipping"
)

// noisyJob's step prints the 401 numbers from input.from and fails, so
// that the run keeps its stdout as a blob.
const noisyJob = `schemaVersion: 2
kind: Job
metadata: {name: noisy}
spec:
  steps:
    - id: bad
      spec: {type: shell, program: sh, args: ["-c", "seq $1 $(($1 + 400)); exit 3", "sh", "{{ input.from }}"], allowed_programs: [sh]}
`

// TestGCCollectsTheBlobsNoEventNames, on a fresh root: a run keeps a failed
// step's stdout as a blob its shell.exited names, and a blob is stored
// that no event names (its event was never appended). orbit gc lists the
// second only, and only once it is older than the grace; --apply removes
// it and records gc.collected; a second pass finds nothing; the run's
// stdout still reads whole. The reader's key can neither call the
// endpoint nor delete from the blob store; the client's key can ask.
func TestGCCollectsTheBlobsNoEventNames(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	p.WriteFile(".orbit/jobs/noisy.yaml", noisyJob)
	r := p.Orbit("job", "run", "noisy", "--input", `{"from":1000}`)
	require.Equal(t, 1, r.Code, r.String())
	run := strings.TrimSpace(r.Stdout)

	js := outsideJetStream(t, p)
	ctx := testkit.Context(t)
	store, err := js.ObjectStore(ctx, events.BlobsStore)
	require.NoError(t, err)
	orphan := []byte("the output of a step whose event was never appended")
	sum := sha256.Sum256(orphan)
	digest := "sha256-" + hex.EncodeToString(sum[:])
	_, err = store.PutBytes(ctx, digest, orphan)
	require.NoError(t, err)

	gc := func(args ...string) engine.CollectReport {
		t.Helper()
		return orbitJSON[engine.CollectReport](t, p, append([]string{"--json", "gc", "--blobs"}, args...)...)
	}
	fresh := gc()
	assert.Empty(t, fresh.Blobs, "within the default grace of an hour, nothing is garbage")
	require.NotNil(t, fresh.BlobCounts)
	assert.Equal(t, 2, fresh.BlobCounts.Stored)

	time.Sleep(1100 * time.Millisecond)
	dry := gc("--grace", "1s")
	require.Len(t, dry.Blobs, 1, "%+v", dry)
	assert.Equal(t, digest, dry.Blobs[0].Digest)
	assert.Equal(t, shipping.GCWouldRemove, dry.Blobs[0].Outcome)
	assert.Equal(t, blobCounts(2, 1, 1, int64(len(orphan))), *dry.BlobCounts)
	r = p.Orbit("gc", "--grace", "1s")
	require.Equal(t, 0, r.Code, r.String())
	assert.Contains(t, r.Stdout, "blobs: 2 stored, 1 kept (named by the log or a queued command, or younger than 1s), would remove 1")
	assert.Contains(t, r.Stdout, "would_remove  "+digest)
	assert.Contains(t, r.Stdout, "(a dry run: orbit gc --apply removes those marked would_remove)")
	_, err = store.GetInfo(ctx, digest)
	require.NoError(t, err, "a dry run removes nothing")

	// The reader may not ask for a collection, nor delete a blob itself;
	// the client may ask.
	reader, err := testkit.DialOutsider(t, engineURL(t, p), credsFile(p, events.IdentityReader))
	require.NoError(t, err)
	reply, refused := reader.Ask(&nats.Msg{Subject: events.APISubject(engine.EndpointGC), Data: []byte(`{"apply":true,"grace":"0s"}`)})
	assert.True(t, refused || reply == nil, "the reader's request reached the engine: %v", reply)
	reply, _ = reader.Ask(&nats.Msg{Subject: "$JS.API.STREAM.PURGE.OBJ_" + events.BlobsStore, Data: []byte(`{}`)})
	assert.False(t, answered(reply), "the reader purged the blob store")
	_, err = store.GetInfo(ctx, digest)
	require.NoError(t, err, "the reader removed nothing")
	r = p.Orbit("--nkey", credsFile(p, events.IdentityReader), "gc", "--apply", "--grace", "0s")
	assert.Equal(t, 2, r.Code, r.String())
	assert.Contains(t, r.Stderr, "this key may not ask the engine for ", "refused at once")
	client, err := testkit.DialOutsider(t, engineURL(t, p), credsFile(p, events.IdentityClient))
	require.NoError(t, err)
	reply, refused = client.Ask(&nats.Msg{Subject: events.APISubject(engine.EndpointGC), Data: []byte(`{"blobs":true}`)})
	require.False(t, refused)
	require.NotNil(t, reply)
	assert.Contains(t, string(reply.Data), `"dry_run":true`)

	applied := gc("--grace", "1s", "--apply")
	require.Len(t, applied.Blobs, 1)
	assert.Equal(t, shipping.GCRemoved, applied.Blobs[0].Outcome)
	assert.NotZero(t, applied.Seq, "recorded")
	_, err = store.GetInfo(ctx, digest)
	assert.ErrorIs(t, err, jetstream.ErrObjectNotFound)

	logStream, err := js.Stream(ctx, events.EventsStream)
	require.NoError(t, err)
	msg, err := logStream.GetMsg(ctx, applied.Seq)
	require.NoError(t, err)
	assert.True(t, strings.HasSuffix(msg.Subject, ".gc.collected"), msg.Subject)
	assert.Contains(t, string(msg.Data), digest)
	assert.Contains(t, string(msg.Data), `"identity":"client"`, "the signer of the request")

	again := gc("--grace", "1s", "--apply")
	assert.Empty(t, again.Blobs, "a second pass finds nothing")
	assert.Zero(t, again.Seq, "and records nothing")
	r = p.Orbit("gc", "--blobs", "--grace", "1s", "--apply")
	require.Equal(t, 0, r.Code, r.String())
	assert.Contains(t, r.Stdout, "nothing to collect")

	r = p.Orbit("run", "logs", run, "-s", "bad")
	require.Equal(t, 0, r.Code, r.String())
	assert.Equal(t, seq(1000, 1400), r.Stdout, "the blob an event names is kept")
	r = p.Orbit("run", "history")
	require.Equal(t, 0, r.Code, r.String())
	assert.NotContains(t, r.Stdout, "gc-", "a collection is no run")
	r = p.Orbit("audit")
	assert.Equal(t, 0, r.Code, r.String())
	r = p.Orbit("replay", "--verify")
	assert.Equal(t, 0, r.Code, r.String())

	r = p.Orbit("gc", "--grace", "soon")
	assert.Equal(t, 2, r.Code, r.String())
	assert.Contains(t, r.Stderr, `grace "soon"`)
}

// blobCounts is an engine.BlobCounts.
func blobCounts(stored, kept, collected int, bytes int64) engine.BlobCounts {
	return engine.BlobCounts{Stored: stored, Kept: kept, Collected: collected, Bytes: bytes}
}
