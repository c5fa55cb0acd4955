package events_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

// TestUnreferencedBlobsAreThoseNothingNames stores blobs an event names by
// reference (a shell's output), values moved to blobs by an event too
// large for a message (some inside others), a blob a pending command
// names, and two blobs nothing names, one stored before the cut-off and
// one after: only the old unreferenced blob is garbage, and deleting it
// leaves every other readable.
func TestUnreferencedBlobsAreThoseNothingNames(t *testing.T) {
	t.Parallel()
	ctx := testkit.Context(t)
	l := testkit.StartLog(t, events.Config{})

	out, err := l.PutBlob(ctx, []byte("the whole of a shell's stdout"))
	require.NoError(t, err)
	_, err = l.Append(ctx, events.Event{ID: "shell", Type: events.ShellExited, RunID: "R1", StepKey: "s"},
		events.ShellExitedData{Attempt: 1, Program: "sh", Stdout: events.OutputStream{Preview: "the whole", Size: 29, Blob: &out}})
	require.NoError(t, err)

	// 400 items of a 2,000-byte value and a 900-byte one: the large values
	// go to blobs first, and the items still do not fit, so the items go
	// too, each naming its value's blob from inside its own.
	items := make([]any, 400)
	for i := range items {
		items[i] = map[string]any{"a": fmt.Sprintf("%04d", i) + strings.Repeat("a", 2000), "b": strings.Repeat("b", 900)}
	}
	_, err = l.Append(ctx, events.Event{ID: "big", Type: events.StepFinished, RunID: "R1", StepKey: "s"},
		events.StepFinishedData{Attempt: 1, State: events.StateSuccess, Output: map[string]any{"items": items}})
	require.NoError(t, err)

	queued, err := l.PutBlob(ctx, []byte("a value only a queued command names"))
	require.NoError(t, err)
	require.NoError(t, l.Send(ctx, "run.request", "cmd-1", map[string]any{"input": map[string]any{"$blob": queued.Digest, "size": queued.Size, "preview": "a value"}}))

	orphan, err := l.PutBlob(ctx, []byte("a blob whose event was never appended"))
	require.NoError(t, err)
	time.Sleep(50 * time.Millisecond)
	cutoff := time.Now()
	time.Sleep(50 * time.Millisecond)
	fresh, err := l.PutBlob(ctx, []byte("a blob whose event is about to be appended"))
	require.NoError(t, err)

	all, err := l.Blobs(ctx)
	require.NoError(t, err)
	require.Greater(t, len(all), 400, "the items and their values are blobs")
	refs, err := l.BlobReferences(ctx)
	require.NoError(t, err)
	for _, b := range all {
		if b.Digest != orphan.Digest && b.Digest != fresh.Digest {
			assert.True(t, refs[b.Digest], "blob %s is named by the log, a command or a blob it names", b.Digest)
		}
	}

	garbage, err := l.UnreferencedBlobs(ctx, cutoff)
	require.NoError(t, err)
	require.Len(t, garbage, 1)
	assert.Equal(t, orphan.Digest, garbage[0].Digest)

	removed, err := l.DeleteBlob(ctx, orphan.Digest, cutoff)
	require.NoError(t, err)
	assert.True(t, removed)
	_, err = l.GetBlob(ctx, orphan.Digest)
	assert.ErrorIs(t, err, events.ErrNotFound)
	removed, err = l.DeleteBlob(ctx, orphan.Digest, cutoff)
	require.NoError(t, err)
	assert.False(t, removed, "a blob already gone")

	removed, err = l.DeleteBlob(ctx, fresh.Digest, cutoff)
	require.NoError(t, err)
	assert.False(t, removed, "a blob stored after the cut-off is never deleted")
	for _, d := range []string{out.Digest, queued.Digest, fresh.Digest} {
		_, err := l.GetBlob(ctx, d)
		assert.NoError(t, err, d)
	}
	whole, err := l.Read(ctx, events.FollowOptions{Filters: []string{events.RunFilter("R1")}})
	require.NoError(t, err)
	require.Len(t, whole, 2)
	assert.Contains(t, string(whole[1].Data), "0399"+strings.Repeat("a", 2000), "the moved values still expand")
}
