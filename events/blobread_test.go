package events_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

// TestBlobsOfOneChunkAndOfManyReadBack stores a blob of one chunk (read by
// a direct get of it) and one of several (read through the object store's
// reader): both come back as stored, and a blob that is not there is
// ErrNotFound.
func TestBlobsOfOneChunkAndOfManyReadBack(t *testing.T) {
	t.Parallel()
	ctx := testkit.Context(t)
	l := testkit.StartLog(t, events.Config{})
	small := []byte(`{"items":[1,2,3]}`)
	large := bytes.Repeat([]byte("0123456789abcdef"), 3<<16) // 3 MiB: 24 chunks
	for _, data := range [][]byte{small, large} {
		ref, err := l.PutBlob(ctx, data)
		require.NoError(t, err)
		got, err := l.GetBlob(ctx, ref.Digest)
		require.NoError(t, err)
		assert.True(t, bytes.Equal(data, got), "blob of %d bytes read back as %d bytes", len(data), len(got))
	}
	_, err := l.GetBlob(ctx, "sha256-"+string(bytes.Repeat([]byte("0"), 64)))
	assert.ErrorIs(t, err, events.ErrNotFound)
}

// TestABlobReadAtOnceByManyIsReadOnce reads one blob from 32 goroutines
// at once, then removes it from the store behind the log's back: every
// reader got its bytes, and the log still answers from what it kept.
func TestABlobReadAtOnceByManyIsReadOnce(t *testing.T) {
	t.Parallel()
	ctx := testkit.Context(t)
	l, _ := signedLog(t)
	data := []byte("the input a fan-out's items share")
	ref, err := l.PutBlob(ctx, data)
	require.NoError(t, err)

	var wg sync.WaitGroup
	got := make([][]byte, 32)
	errs := make([]error, 32)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], errs[i] = l.GetBlob(ctx, ref.Digest)
		}()
	}
	wg.Wait()
	for i := range got {
		require.NoError(t, errs[i])
		assert.Equal(t, data, got[i])
	}

	obs, err := outsider(t, l).ObjectStore(ctx, events.BlobsStore)
	require.NoError(t, err)
	require.NoError(t, obs.Delete(ctx, ref.Digest))
	again, err := l.GetBlob(ctx, ref.Digest)
	require.NoError(t, err, "a blob read before is kept")
	assert.Equal(t, data, again)
}

// TestABlobNotFoundIsAskedForAgain: a miss is not kept, so a blob stored
// after a reader looked for it is found by the next look.
func TestABlobNotFoundIsAskedForAgain(t *testing.T) {
	t.Parallel()
	ctx := testkit.Context(t)
	l := testkit.StartLog(t, events.Config{})
	data := []byte("stored late")
	sum := sha256.Sum256(data)
	digest := "sha256-" + hex.EncodeToString(sum[:])
	_, err := l.GetBlob(ctx, digest)
	require.ErrorIs(t, err, events.ErrNotFound)
	_, err = l.PutBlob(ctx, data)
	require.NoError(t, err)
	got, err := l.GetBlob(ctx, digest)
	require.NoError(t, err)
	assert.Equal(t, data, got)
}
