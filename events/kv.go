package events

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// KV is a key-value bucket with compare-and-set writes (see kvcas.go for
// what a refused one means).
type KV struct {
	name string
	kv   jetstream.KeyValue
	nc   *nats.Conn // for Latest, which the bucket's leader answers
}

// Entry is the current value of a key and its revision.
type Entry struct {
	Key      string
	Value    []byte
	Revision uint64
}

// Leases returns the orbit_leases bucket (run ownership). On a Log made by
// Dial, which does not bind the buckets, its methods return ErrNotEngine.
func (l *Log) Leases() *KV { return &KV{name: LeasesBucket, kv: l.leases, nc: l.nc} }

// Locks returns the orbit_locks bucket (task lock reservations); on a Log
// made by Dial its methods return ErrNotEngine.
func (l *Log) Locks() *KV { return &KV{name: LocksBucket, kv: l.locks, nc: l.nc} }

// Get returns the current entry of key, or ErrNotFound.
func (k *KV) Get(ctx context.Context, key string) (Entry, error) {
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	if err := k.bound(); err != nil {
		return Entry{}, err
	}
	e, err := k.kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return Entry{}, fmt.Errorf("%w: %s/%s", ErrNotFound, k.name, key)
	}
	if err != nil {
		return Entry{}, fmt.Errorf("%w: %s/%s: %v", ErrUnavailable, k.name, key, err)
	}
	return Entry{Key: key, Value: e.Value(), Revision: e.Revision()}, nil
}

// Create writes key only if it does not exist (or was deleted), returning
// the new revision; ErrConflict when it exists. A write of the key in
// flight is waited out, and a create whose answer was lost but that holds
// is recognised by its value (see cas).
//
// A key that was written and deleted is created over its delete marker,
// at the marker's revision, which only the bucket's leader is asked for:
// nats.go's Create asks whichever replica answers a direct get first, and
// one that lags still holds the value the delete removed, which would
// refuse a create sent right after the delete through another node as a
// conflict.
func (k *KV) Create(ctx context.Context, key string, value []byte) (uint64, error) {
	return k.cas(ctx, key, value, func(ctx context.Context) (uint64, error) {
		rev, err := k.kv.Update(ctx, key, value, 0)
		if refusalOf(err) != refusedStale {
			return rev, err
		}
		marker, deleted, lerr := k.latest(ctx, key)
		if lerr != nil || !deleted {
			return 0, err
		}
		return k.kv.Update(ctx, key, value, marker.Revision)
	})
}

// Update writes key only if its revision is still rev; ErrConflict
// otherwise, as for Create.
func (k *KV) Update(ctx context.Context, key string, value []byte, rev uint64) (uint64, error) {
	return k.cas(ctx, key, value, func(ctx context.Context) (uint64, error) {
		return k.kv.Update(ctx, key, value, rev)
	})
}

// Delete removes key if its revision is still rev; ErrConflict otherwise.
func (k *KV) Delete(ctx context.Context, key string, rev uint64) error {
	_, err := k.cas(ctx, key, nil, func(ctx context.Context) (uint64, error) {
		return 0, k.kv.Delete(ctx, key, jetstream.LastRevision(rev))
	})
	return err
}

// Keys returns every live key of the bucket.
func (k *KV) Keys(ctx context.Context) ([]string, error) {
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	if err := k.bound(); err != nil {
		return nil, err
	}
	keys, err := k.kv.Keys(ctx)
	if errors.Is(err, jetstream.ErrNoKeysFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s keys: %v", ErrUnavailable, k.name, err)
	}
	return keys, nil
}

// bound returns ErrNotEngine for a bucket of a Log made by Dial.
func (k *KV) bound() error {
	if k.kv == nil {
		return fmt.Errorf("events: bucket %s on a dialled log: %w", k.name, ErrNotEngine)
	}
	return nil
}
