package events

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// KV is a key-value bucket with compare-and-set writes.
type KV struct {
	name string
	kv   jetstream.KeyValue
}

// Entry is the current value of a key and its revision.
type Entry struct {
	Key      string
	Value    []byte
	Revision uint64
}

// Leases returns the orbit_leases bucket (run ownership). On a Log made by
// Dial, which does not bind the buckets, its methods return ErrNotEngine.
func (l *Log) Leases() *KV { return &KV{name: LeasesBucket, kv: l.leases} }

// Locks returns the orbit_locks bucket (task lock reservations); on a Log
// made by Dial its methods return ErrNotEngine.
func (l *Log) Locks() *KV { return &KV{name: LocksBucket, kv: l.locks} }

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
// the new revision; ErrConflict when it exists.
func (k *KV) Create(ctx context.Context, key string, value []byte) (uint64, error) {
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	if err := k.bound(); err != nil {
		return 0, err
	}
	rev, err := k.kv.Create(ctx, key, value)
	return rev, k.writeErr(key, err)
}

// Update writes key only if its revision is still rev; ErrConflict otherwise.
func (k *KV) Update(ctx context.Context, key string, value []byte, rev uint64) (uint64, error) {
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	if err := k.bound(); err != nil {
		return 0, err
	}
	newRev, err := k.kv.Update(ctx, key, value, rev)
	return newRev, k.writeErr(key, err)
}

// Delete removes key if its revision is still rev; ErrConflict otherwise.
func (k *KV) Delete(ctx context.Context, key string, rev uint64) error {
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	if err := k.bound(); err != nil {
		return err
	}
	return k.writeErr(key, k.kv.Delete(ctx, key, jetstream.LastRevision(rev)))
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

func (k *KV) writeErr(key string, err error) error {
	if err == nil {
		return nil
	}
	var apiErr *jetstream.APIError
	if errors.Is(err, jetstream.ErrKeyExists) ||
		(errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence) {
		return fmt.Errorf("%w: %s/%s", ErrConflict, k.name, key)
	}
	return publishError(k.name+"/"+key, err)
}
