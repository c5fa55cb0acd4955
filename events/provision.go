package events

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// provision creates the streams, buckets and object store, or corrects their
// configuration where it drifted. A difference JetStream cannot change in
// place (a retention policy, say) is reported as an error rather than ignored.
func (l *Log) provision(ctx context.Context) error {
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	replicas := l.cfg.Replicas
	if err := l.awaitJetStream(ctx); err != nil {
		return err
	}
	if l.cfg.RequireLog {
		if err := l.requireEvents(ctx); err != nil {
			return err
		}
	}
	var err error
	l.events, err = l.ensureStream(ctx, jetstream.StreamConfig{
		Name:        EventsStream,
		Description: "Orbit's append-only event log",
		Subjects:    []string{EventsRoot + ".>"},
		Retention:   jetstream.LimitsPolicy,
		Storage:     jetstream.FileStorage,
		Discard:     jetstream.DiscardNew,
		Duplicates:  l.cfg.DuplicateWindow,
		Replicas:    replicas,
		AllowDirect: true,
		// Messages are never deleted one by one; a purge by subject is
		// how retention removes archived runs (removal.go), and only the
		// engine's identity may ask for one (Permissions).
		DenyDelete: true,
		// The group commit's atomic batches (DESIGN §10); added to a
		// stream provisioned before them by the drift correction below.
		AllowAtomicPublish: true,
	})
	if err != nil {
		return err
	}
	l.cmds, err = l.ensureStream(ctx, jetstream.StreamConfig{
		Name:        CommandsStream,
		Description: "Orbit's run requests",
		Subjects:    []string{CommandsRoot + ".>"},
		Retention:   jetstream.WorkQueuePolicy,
		Storage:     jetstream.FileStorage,
		Duplicates:  l.cfg.DuplicateWindow,
		Replicas:    replicas,
		// The group commit of commands, as for events.
		AllowAtomicPublish: true,
		// The queue's keeper replaces itself by a roll-up (keeper.go).
		AllowRollup: true,
	})
	if err != nil {
		return err
	}
	steps := l.stepsConfig()
	if l.steps, err = l.ensureStepsStream(ctx, steps); err != nil {
		return err
	}
	l.stepsAsync = steps.PersistMode == jetstream.AsyncPersistMode
	if l.leases, err = l.ensureBucket(ctx, jetstream.KeyValueConfig{
		Bucket:      LeasesBucket,
		Description: "run ownership",
		History:     1,
		Storage:     jetstream.FileStorage,
		Replicas:    replicas,
	}); err != nil {
		return err
	}
	if l.locks, err = l.ensureBucket(ctx, jetstream.KeyValueConfig{
		Bucket:      LocksBucket,
		Description: "task lock reservations",
		History:     1,
		Storage:     jetstream.FileStorage,
		Replicas:    replicas,
	}); err != nil {
		return err
	}
	if l.blobs, err = l.ensureObjectStore(ctx, jetstream.ObjectStoreConfig{
		Bucket:      BlobsStore,
		Description: "large outputs, transcripts and diffs referenced from events",
		Storage:     jetstream.FileStorage,
		Replicas:    replicas,
	}); err != nil {
		return err
	}
	if l.replies, err = l.ensureObjectStore(ctx, jetstream.ObjectStoreConfig{
		Bucket:      RepliesStore,
		Description: "API answers too large for one message, until their requester fetched them",
		TTL:         repliesTTL,
		Storage:     jetstream.FileStorage,
		Replicas:    replicas,
	}); err != nil {
		return err
	}
	return nil
}

// ensureBucket creates the KV bucket cfg describes, or corrects one made
// with another configuration.
//
// IMPORTANT: an update is sent only for a bucket that differs. Engines
// started together all provision at once, and an update that meets
// another engine's create of the same bucket in flight can leave both
// unanswered (measured on the three-node harness: two CreateOrUpdateKeyValue
// at once timed out both in 6 of 8 rounds, two creates in none of 8).
func (l *Log) ensureBucket(ctx context.Context, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	create, cancel := l.createContext(ctx)
	defer cancel()
	kv, err := l.js.CreateKeyValue(create, cfg)
	if errors.Is(err, jetstream.ErrBucketExists) {
		l.log.Warn("correcting bucket configuration", "bucket", cfg.Bucket, "want_replicas", cfg.Replicas)
		kv, err = l.js.UpdateKeyValue(create, cfg)
	}
	if err != nil {
		return nil, fmt.Errorf("events: bucket %s: %w", cfg.Bucket, err)
	}
	return kv, nil
}

// ensureObjectStore creates the object store cfg describes, or corrects
// one made with another configuration; as for buckets, an update is sent
// only for one that differs.
func (l *Log) ensureObjectStore(ctx context.Context, cfg jetstream.ObjectStoreConfig) (jetstream.ObjectStore, error) {
	create, cancel := l.createContext(ctx)
	defer cancel()
	obs, err := l.js.CreateObjectStore(create, cfg)
	if errors.Is(err, jetstream.ErrBucketExists) {
		l.log.Warn("correcting object store configuration", "store", cfg.Bucket, "want_replicas", cfg.Replicas)
		obs, err = l.js.UpdateObjectStore(create, cfg)
	}
	if err != nil {
		return nil, fmt.Errorf("events: object store %s: %w", cfg.Bucket, err)
	}
	return obs, nil
}

func (l *Log) ensureStream(ctx context.Context, want jetstream.StreamConfig) (jetstream.Stream, error) {
	lookup, cancel := l.lookupContext(ctx)
	s, err := l.js.Stream(lookup, want.Name)
	cancel()
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		create, cancel := l.createContext(ctx)
		s, err = l.js.CreateStream(create, want)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("events: creating stream %s: %w", want.Name, err)
		}
		return s, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: stream %s: %v", ErrUnavailable, want.Name, err)
	}
	have := s.CachedInfo().Config
	if have.Retention != want.Retention || have.Storage != want.Storage {
		return nil, fmt.Errorf("events: stream %s has retention %s and storage %s, want %s and %s; it cannot be changed in place",
			want.Name, have.Retention, have.Storage, want.Retention, want.Storage)
	}
	if have.DenyPurge && !want.DenyPurge {
		// A stream made before retention: JetStream cannot lift
		// deny_purge, so it keeps it, and retention archives without
		// removing (ErrPurgeDenied).
		want.DenyPurge = true
	}
	if drifted(have, want) {
		l.log.Warn("correcting stream configuration", "stream", want.Name, "replicas", have.Replicas, "want_replicas", want.Replicas)
		update, cancel := l.createContext(ctx)
		s, err = l.js.UpdateStream(update, want)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("events: correcting stream %s: %w", want.Name, err)
		}
	}
	return s, nil
}

// drifted reports whether the mutable settings Orbit relies on differ.
func drifted(have, want jetstream.StreamConfig) bool {
	if len(have.Subjects) != len(want.Subjects) {
		return true
	}
	for i := range want.Subjects {
		if have.Subjects[i] != want.Subjects[i] {
			return true
		}
	}
	return have.Duplicates != want.Duplicates || have.MaxAge != want.MaxAge ||
		limit(have.MaxBytes) != limit(want.MaxBytes) || limit(have.MaxMsgs) != limit(want.MaxMsgs) ||
		have.Replicas != want.Replicas || have.AllowDirect != want.AllowDirect ||
		have.DenyDelete != want.DenyDelete || have.DenyPurge != want.DenyPurge ||
		have.Discard != want.Discard || have.AllowAtomicPublish != want.AllowAtomicPublish ||
		have.AllowRollup != want.AllowRollup
}

// limit normalises "no limit": the server stores -1 where a config said 0.
func limit(n int64) int64 {
	if n <= 0 {
		return -1
	}
	return n
}
