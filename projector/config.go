package projector

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/orbitrun/orbit/events"
)

// Source is the part of the event log the projector reads: a feed in stream
// order (the live projector), a scan of the log as it stands (rebuilds),
// single events by sequence and the last sequence, and the stream's
// creation time (for the anchor check, which fails with ErrLogMismatch when
// Created fails with events.ErrLogMissing). *events.Log implements it.
type Source interface {
	Follow(ctx context.Context, opts events.FollowOptions) (*events.Feed, error)
	Scan(ctx context.Context, from, upTo uint64, size int, fn func([]events.Event) error) error
	EventAt(ctx context.Context, seq uint64) (events.Event, error)
	LastSeq(ctx context.Context) (uint64, error)
	Created(ctx context.Context) (time.Time, error)
}

// Defaults of Config.
const (
	DefaultBatchSize   = 256
	DefaultLockTimeout = time.Second
	DefaultLinger      = 10 * time.Millisecond
)

// Config says where the views live and where their events come from. The
// zero value of every field but Path means its default.
type Config struct {
	// Path is the bbolt file, e.g. <root>/.orbit/state/views.db. Its
	// directory is created if missing.
	Path string
	// Source is the event log the views are folded from. It may be left
	// nil and given later with SetSource, so that an engine can lock the
	// views file before it opens the log's store (DESIGN §2).
	Source Source
	// BatchSize bounds the events applied in one bbolt transaction
	// (default 256). It changes how often the file is synced, never what
	// the views hold.
	BatchSize int
	// Linger is how long a batch that is not full waits for more events
	// before it commits, unless a caller waits for the views (WaitFor):
	// events that come one at a time, as a sequential run's do, then share
	// a commit and its two fsyncs instead of taking one each (default
	// DefaultLinger; negative: a batch commits what the feed has
	// buffered). Like BatchSize, it changes how often the file is synced,
	// never what the views hold.
	Linger time.Duration
	// SnapshotEvery is how many events the views apply between two
	// snapshots of the views file (see SnapshotPath): 0 means
	// DefaultSnapshotEvery, a negative number never.
	SnapshotEvery int
	// LockTimeout is how long Open waits for the file lock (default 1s).
	LockTimeout time.Duration
	// Logger receives operational messages. Nil discards them.
	Logger *slog.Logger
}

func (c *Config) setDefaults() {
	if c.BatchSize == 0 {
		c.BatchSize = DefaultBatchSize
	}
	if c.Linger == 0 {
		c.Linger = DefaultLinger
	}
	if c.SnapshotEvery == 0 {
		c.SnapshotEvery = DefaultSnapshotEvery
	}
	if c.LockTimeout == 0 {
		c.LockTimeout = DefaultLockTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// Validate reports a configuration that cannot work.
func (c *Config) Validate() error {
	var errs []error
	if c.Path == "" {
		errs = append(errs, errors.New("projector: a views file path is required"))
	}
	if c.BatchSize < 0 {
		errs = append(errs, fmt.Errorf("projector: batch size %d: want at least 1", c.BatchSize))
	}
	if c.LockTimeout < 0 {
		// bbolt reads a zero timeout as "wait forever"; a negative one is
		// certainly a mistake.
		errs = append(errs, fmt.Errorf("projector: lock timeout %s: want a positive duration", c.LockTimeout))
	}
	return errors.Join(errs...)
}
