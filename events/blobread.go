package events

import (
	"container/list"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"math"
	"sync"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// readBlob reads the stored bytes of the blob named digest.
func (l *Log) readBlob(ctx context.Context, digest string) ([]byte, error) {
	stream, err := l.blobStream(ctx)
	if err != nil {
		return nil, err
	}
	return readObject(ctx, l, l.blobs, stream, BlobsStore, digest)
}

// readObject reads the object name of the object store bucket (whose
// stream is stream) with direct gets of its chunks, and checks them
// against the object's size and digest. A chunk (128 KiB) is one message:
// nearly every blob is read with one direct get, which any replica answers
// at once, and a larger object with batched ones. It uses no consumer: the
// object store's own reader pushes the chunks over an ordered push
// consumer, which a client may not make (consumer_gate.go), and which was
// seen, about once in a hundred fan-outs, to deliver nothing until the
// read's timeout.
func readObject(ctx context.Context, l *Log, store jetstream.ObjectStore, stream jetstream.Stream, bucket, name string) ([]byte, error) {
	info, err := store.GetInfo(ctx, name)
	if err != nil {
		return nil, err
	}
	subject := "$O." + bucket + ".C." + info.NUID
	if info.Chunks == 1 {
		msg, err := stream.GetLastMsgForSubject(ctx, subject)
		if err != nil {
			return nil, err
		}
		return msg.Data, nil
	}
	// Until every chunk is read: a replica behind the stream's leader
	// ends its answer short, and the scan goes on from there.
	data := make([]byte, 0, info.Size)
	var at uint64
	err = l.scanUntil(ctx, stream.CachedInfo().Config.Name, subject, 1, math.MaxUint64, func(seq uint64, msg *nats.Msg) error {
		data, at = append(data, msg.Data...), seq
		return nil
	}, func() (uint64, bool) { return at, uint64(len(data)) >= info.Size })
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(data)
	if uint64(len(data)) != info.Size || info.Digest != "SHA-256="+base64.URLEncoding.EncodeToString(sum[:]) {
		return nil, fmt.Errorf("%w: object %s of %s: %d bytes read of %d, or not the digest it was stored with", ErrTampered, name, bucket, len(data), info.Size)
	}
	return data, nil
}

// blobStream returns the object store's stream, looked up on first use.
func (l *Log) blobStream(ctx context.Context) (jetstream.Stream, error) {
	l.blobsMu.Lock()
	defer l.blobsMu.Unlock()
	if l.blobsStream != nil {
		return l.blobsStream, nil
	}
	s, err := l.js.Stream(ctx, "OBJ_"+BlobsStore)
	if err != nil {
		return nil, err
	}
	l.blobsStream = s
	return s, nil
}

// blobCacheBytes bounds the bytes of the blobs a Log keeps; a blob larger
// than a quarter of it is not kept.
const blobCacheBytes = 32 << 20

// A blobCache keeps the blobs a Log read last, by digest. A blob's name is
// the digest of its bytes, checked when they were read, so what it holds
// never goes stale. It also makes the readers of one blob at one moment
// (the items of a fan-out expanding the input they share) wait for a
// single read.
type blobCache struct {
	mu     sync.Mutex
	byName map[string]*list.Element // of *cachedBlob
	order  list.List                // most recently used first
	size   int
}

type cachedBlob struct {
	digest string
	ready  chan struct{} // closed when data and err are set
	data   []byte
	err    error
}

// get returns the blob named digest, from the cache or from read, whose
// bytes it keeps if read succeeds. The bytes are shared: callers must not
// change them.
func (c *blobCache) get(digest string, read func() ([]byte, error)) ([]byte, error) {
	c.mu.Lock()
	if c.byName == nil {
		c.byName = map[string]*list.Element{}
	}
	if el, ok := c.byName[digest]; ok {
		c.order.MoveToFront(el)
		b := el.Value.(*cachedBlob)
		c.mu.Unlock()
		<-b.ready
		return b.data, b.err
	}
	b := &cachedBlob{digest: digest, ready: make(chan struct{})}
	c.byName[digest] = c.order.PushFront(b)
	c.mu.Unlock()

	b.data, b.err = read()
	close(b.ready)

	c.mu.Lock()
	defer c.mu.Unlock()
	if b.err != nil || len(b.data) > blobCacheBytes/4 {
		c.remove(digest)
		return b.data, b.err
	}
	c.size += len(b.data)
	for c.size > blobCacheBytes {
		c.remove(c.order.Back().Value.(*cachedBlob).digest)
	}
	return b.data, nil
}

// forget drops the blob named digest from the cache: it was deleted.
func (c *blobCache) forget(digest string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.remove(digest)
}

// remove forgets the blob named digest.
func (c *blobCache) remove(digest string) {
	el, ok := c.byName[digest]
	if !ok {
		return
	}
	b := el.Value.(*cachedBlob)
	delete(c.byName, digest)
	c.order.Remove(el)
	select {
	case <-b.ready:
		c.size -= len(b.data)
	default:
	}
}
