package projector

import (
	"fmt"
	"log/slog"

	bolt "go.etcd.io/bbolt"

	"github.com/orbitrun/orbit/events"
)

// batchCache holds the records of one bucket that a batch touches, by bbolt
// key. Each record is read and decoded on first use, and flush encodes and
// writes each changed one once: a batch of a hundred events about one record
// decodes it once and encodes it once, not a hundred times.
type batchCache[T any] struct {
	b *bolt.Bucket
	// name names the record under a key in errors ("memory of task T-7").
	name    func(key string) string
	entries map[string]*cached[T]
}

// cached is one record of a batchCache.
type cached[T any] struct {
	// rec is nil while the bucket holds no record under the key and the
	// batch has made none.
	rec *T
	// stored means the bucket held a record under the key when the batch
	// first read it.
	stored bool
	// dirty means the batch changed rec, so flush writes it.
	dirty bool
}

func newBatchCache[T any](b *bolt.Bucket, name func(key string) string) *batchCache[T] {
	return &batchCache[T]{b: b, name: name, entries: map[string]*cached[T]{}}
}

// get returns the entry of key, reading it from the bucket on first use. A
// stored record that does not decode is an error wrapping errDamaged.
func (c *batchCache[T]) get(key string) (*cached[T], error) {
	if e, ok := c.entries[key]; ok {
		return e, nil
	}
	e := &cached[T]{}
	if raw := c.b.Get([]byte(key)); raw != nil {
		e.rec, e.stored = new(T), true
		if err := decodeStored(raw, e.rec); err != nil {
			return nil, fmt.Errorf("stored %s: %w", c.name(key), err)
		}
	}
	c.entries[key] = e
	return e, nil
}

// flush writes every changed record once, in key order.
func (c *batchCache[T]) flush() error {
	return c.eachChanged(func(key string, e *cached[T]) error {
		return putJSON(c.b, []byte(key), e.rec)
	})
}

// eachChanged calls f with every changed entry, in key order: what a batch
// writes never depends on the order of a map.
func (c *batchCache[T]) eachChanged(f func(key string, e *cached[T]) error) error {
	for _, key := range sortedKeys(c.entries) {
		if e := c.entries[key]; e.dirty {
			if err := f(key, e); err != nil {
				return err
			}
		}
	}
	return nil
}

// existingTask returns the entry of ev's task in c, a cache keyed by task
// id, or nil, after a debug line, when the task was never created.
func existingTask[T any](c *batchCache[T], log *slog.Logger, ev events.Event) (*cached[T], error) {
	e, err := c.get(ev.TaskID)
	if err != nil || e.rec != nil {
		return e, err
	}
	log.Debug("ignoring an event of a task that was never created", "seq", ev.Seq, "type", ev.Type, "task", ev.TaskID)
	return nil, nil
}
