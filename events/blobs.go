package events

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// PutBlob stores data in the orbit_blobs object store under its SHA-256
// digest, after redacting secrets from it, and returns a reference for an
// event to carry. Storing the same bytes twice stores them once; a blob
// stored more than blobTouchAge ago is touched (its modification time
// becomes now), so that a collection (blobgc.go) does not take it before
// its new event is appended.
func (l *Log) PutBlob(ctx context.Context, data []byte) (BlobRef, error) {
	if err := l.room(ctx); err != nil {
		return BlobRef{}, err
	}
	data = l.cfg.Redactor.Bytes(data)
	sum := sha256.Sum256(data)
	ref := BlobRef{Digest: blobDigestPrefix + hex.EncodeToString(sum[:]), Size: int64(len(data))}
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	l.blobGC.RLock()
	defer l.blobGC.RUnlock()
	if info, err := l.blobs.GetInfo(ctx, ref.Digest); err == nil {
		if time.Since(info.ModTime) < l.touchAge() {
			return ref, nil
		}
		if err := l.blobs.UpdateMeta(ctx, ref.Digest, jetstream.ObjectMeta{Name: ref.Digest}); err != nil {
			return BlobRef{}, publishError("blob "+ref.Digest, err)
		}
		return ref, nil
	} else if !errors.Is(err, jetstream.ErrObjectNotFound) {
		return BlobRef{}, fmt.Errorf("%w: blob %s: %v", ErrUnavailable, ref.Digest, err)
	}
	if _, err := l.blobs.Put(ctx, jetstream.ObjectMeta{Name: ref.Digest}, bytes.NewReader(data)); err != nil {
		return BlobRef{}, publishError("blob "+ref.Digest, err)
	}
	return ref, nil
}

// GetBlob returns the bytes of a blob, or ErrNotFound; ErrTampered when
// the bytes stored under a sha256- digest are not those it names. Blobs so
// named are kept once read (see blobCache): callers must not change the
// bytes returned.
func (l *Log) GetBlob(ctx context.Context, digest string) ([]byte, error) {
	if !strings.HasPrefix(digest, blobDigestPrefix) {
		return l.getBlob(ctx, digest)
	}
	return l.blobCache.get(digest, func() ([]byte, error) { return l.getBlob(ctx, digest) })
}

// getBlob reads a blob and checks its bytes against a sha256- name.
func (l *Log) getBlob(ctx context.Context, digest string) ([]byte, error) {
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	data, err := l.readBlob(ctx, digest)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return nil, fmt.Errorf("%w: blob %s", ErrNotFound, digest)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: blob %s: %v", ErrUnavailable, digest, err)
	}
	if want, ok := strings.CutPrefix(digest, blobDigestPrefix); ok {
		sum := sha256.Sum256(data)
		if hex.EncodeToString(sum[:]) != want {
			return nil, fmt.Errorf("%w: blob %s: the content does not match its digest", ErrTampered, digest)
		}
	}
	return data, nil
}

// blobDigestPrefix starts the name of every blob PutBlob stores.
const blobDigestPrefix = "sha256-"
