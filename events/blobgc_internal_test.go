package events

import (
	"bytes"
	"testing"
	"time"
)

// TestABlobStoredAgainIsNotCollected: a blob stored long ago (longer than
// the touch age, here a nanosecond) and named by nothing is stored again
// for an event about to be appended: the second PutBlob touches it, so a
// collection whose cut-off was set before keeps it, both when it lists
// and when it deletes. A blob stored again within the touch age (the
// default, a minute) is left as it is: no write for each copy.
func TestABlobStoredAgainIsNotCollected(t *testing.T) {
	t.Parallel()
	l := openStrict(t)
	ctx := t.Context()
	data := []byte("stdout a later step prints again")
	ref, err := l.PutBlob(ctx, data)
	if err != nil {
		t.Fatal(err)
	}
	first, err := l.blobs.GetInfo(ctx, ref.Digest)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.PutBlob(ctx, data); err != nil {
		t.Fatal(err)
	}
	if again, err := l.blobs.GetInfo(ctx, ref.Digest); err != nil || !again.ModTime.Equal(first.ModTime) {
		t.Fatalf("stored again within a minute: modified %v, was %v (%v)", again.ModTime, first.ModTime, err)
	}

	l.blobTouch = time.Nanosecond
	time.Sleep(50 * time.Millisecond)
	cutoff := time.Now()
	time.Sleep(50 * time.Millisecond)
	garbage, err := l.UnreferencedBlobs(ctx, cutoff)
	if err != nil || len(garbage) != 1 {
		t.Fatalf("old and named by nothing: %v, %v", garbage, err)
	}
	again, err := l.PutBlob(ctx, data)
	if err != nil || again != ref {
		t.Fatalf("stored again: %v, %v", again, err)
	}
	removed, err := l.DeleteBlob(ctx, ref.Digest, cutoff)
	if err != nil || removed {
		t.Fatalf("touched since the listing, yet deleted: %v, %v", removed, err)
	}
	if garbage, err = l.UnreferencedBlobs(ctx, cutoff); err != nil || len(garbage) != 0 {
		t.Fatalf("touched, yet garbage: %v, %v", garbage, err)
	}
	got, err := l.GetBlob(ctx, ref.Digest)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read back: %q, %v", got, err)
	}
}
