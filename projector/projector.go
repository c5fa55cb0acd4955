// Package projector folds the events of ORBIT_EVENTS into bbolt views
// (DESIGN §4): it applies every event exactly once, rebuilds the views from
// the log when they no longer match it, and answers queries about them.
//
// The views are a cache of the log. Each batch of events is applied in one
// bbolt transaction together with the sequence and id of its last event, so
// after a crash the views hold exactly the events up to that cursor; at start
// the cursor and the log's recorded identity are checked against the log,
// and views the log no longer supports are refused (ErrLogMismatch), never
// rebuilt from another log silently. Views are encoded deterministically,
// so views built live and views rebuilt by Replay compare byte for byte.
package projector

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/orbitrun/orbit/events"
)

// Projector maintains the views in one bbolt file. Run applies events;
// queries may be called concurrently with Run and with each other, and see
// the views as of the last committed batch. Only one Projector (in one
// process) can have a given file open.
type Projector struct {
	cfg Config
	log *slog.Logger

	// IMPORTANT: the lock order is applyMu, then dbMu, then stateMu.
	//
	// applyMu serialises everything that writes the file or replaces it:
	// Run's batches and anchor check, Replay's final catch-up and swap, and
	// Close. Replay holding it is what pauses the apply loop.
	applyMu sync.Mutex
	// beforeCommit is a failpoint run just before each batch commits;
	// replayBuilt runs between Replay's two phases. Both are set only by
	// tests, under applyMu.
	beforeCommit func(seq uint64) error
	replayBuilt  func()

	// dbMu guards the db pointer: queries read under RLock, and Replay's
	// swap and Close replace it under Lock (while also holding applyMu, so
	// writers that hold applyMu may read it without dbMu).
	dbMu sync.RWMutex
	db   *bolt.DB // nil once closed

	// snapAt is the last event of the latest snapshot, under applyMu;
	// snapping is true while one is written, by a goroutine snapWG counts.
	snapAt   uint64
	snapping atomic.Bool
	snapWG   sync.WaitGroup

	stateMu  sync.Mutex
	src      Source
	applied  uint64
	advanced chan struct{} // closed and replaced whenever applied grows
	// hurry ends a batch's linger: WaitFor signals it when it has to wait.
	hurry chan struct{}

	running   atomic.Bool
	closeOnce sync.Once
	closed    chan struct{}
}

// Open opens (or creates) the views file. It waits up to cfg.LockTimeout for
// the file lock and fails with an error wrapping ErrLocked when another
// process keeps it. Open reads nothing from the log; Run does.
//
// Before it serves anything, Open reads the whole file: the structure of
// its pages, bbolt's consistency check, and every record of every view,
// decoded. A file that is damaged (truncated, bit-flipped, not a bbolt
// file) is set aside as <Path>.corrupt-<unix time>, with a warning naming
// it and the damage, and an empty file takes its place, which Run rebuilds
// from the log. The three newest damaged files are kept for inspection.
// The check costs what decoding every record does: with 10,000 runs (a
// 34 MB file), about 0.3 to 0.5 s of CPU, spread over the CPUs; the page
// checks alone take some 20 ms.
func Open(ctx context.Context, cfg Config) (*Projector, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	log := cfg.Logger.With("component", "projector")
	db, err := openViews(cfg.Path, cfg.LockTimeout, log)
	if err != nil {
		return nil, err
	}
	if err := db.Update(initViews); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("projector: preparing %s: %w", cfg.Path, err)
	}
	removeStaleReplays(cfg.Path, log)
	return &Projector{
		cfg:      cfg,
		log:      log,
		db:       db,
		snapAt:   snapshotSeq(cfg.Path),
		src:      cfg.Source,
		advanced: make(chan struct{}),
		hurry:    make(chan struct{}, 1),
		closed:   make(chan struct{}),
	}, nil
}

// SetSource gives the Projector its event log when Config.Source was nil;
// it must be called before Run. It lets an engine open (and so lock) the
// views file before it opens the log's store.
func (p *Projector) SetSource(src Source) {
	p.stateMu.Lock()
	defer p.stateMu.Unlock()
	p.src = src
}

func (p *Projector) source() (Source, error) {
	p.stateMu.Lock()
	defer p.stateMu.Unlock()
	if p.src == nil {
		return nil, ErrNoSource
	}
	return p.src, nil
}

// Run applies events until ctx ends, then returns nil. It first checks the
// views' anchor: if the stream is not the one the views were folded from,
// or the first or last event they applied is no longer in the log, has a
// different id there, or lies beyond the log's end, Run returns a
// *MismatchError (ErrLogMismatch) and leaves the views alone; if a view's
// format changed, the views are emptied and rebuilt from sequence 1. Then it
// follows the log from the event after the last applied one, applying what
// the feed has buffered (up to BatchSize events) in each transaction.
//
// A batch that finds the views file damaged (a stored record that does not
// decode, or bbolt panicking on a page) is not committed: the file is set
// aside as Open does it, and the views are rebuilt from sequence 1 in a
// fresh one. If the rebuild meets damage again before it gets past that
// batch, the fault is not the file's, and Run returns the error.
//
// Run returns an error when the views cannot be written or the log stops
// delivering; calling it again resumes from the last committed batch. It
// returns ErrRunning if Run is already running, ErrNoSource without a
// source, and ErrClosed after Close.
func (p *Projector) Run(ctx context.Context) error {
	if p.isClosed() {
		return ErrClosed
	}
	src, err := p.source()
	if err != nil {
		return err
	}
	if !p.running.CompareAndSwap(false, true) {
		return ErrRunning
	}
	defer p.running.Store(false)

	var (
		repaired        bool
		repairedThrough uint64 // the last event of the batch that found the damage
	)
	for {
		from, through, err := p.follow(ctx, src)
		if !errors.Is(err, errDamaged) {
			return err
		}
		if repaired && from < repairedThrough {
			return fmt.Errorf("%w (again, in views rebuilt from the log: the fault is not the file's)", err)
		}
		if err := p.replaceDamaged(err); err != nil {
			return p.ended(ctx, err)
		}
		repaired, repairedThrough = true, through
	}
}

// follow checks the anchor, then applies the log's events until Run must
// stop. When it stops on damage, from is the sequence the views had applied
// and through the last sequence of the batch that found it.
func (p *Projector) follow(ctx context.Context, src Source) (from, through uint64, err error) {
	if err := p.checkAnchor(ctx, src); err != nil {
		return 0, 0, p.ended(ctx, err)
	}
	feed, err := src.Follow(ctx, events.FollowOptions{FromSeq: p.Applied() + 1, Placeholders: true, BlobRefs: true})
	if err != nil {
		return 0, 0, p.ended(ctx, fmt.Errorf("projector: following the log: %w", err))
	}
	defer feed.Stop()
	for {
		batch, err := p.nextBatch(ctx, feed)
		if batch == nil || err != nil {
			return 0, 0, err
		}
		from := p.Applied()
		if err := p.apply(batch); err != nil {
			return from, batch[len(batch)-1].Seq, err
		}
	}
}

// nextBatch blocks for one event, then takes whatever else the feed has
// buffered, up to BatchSize; a batch that is not full waits up to Linger
// for more, unless a caller waits for the views meanwhile. It returns no
// batch when Run must stop, with the error Run returns.
func (p *Projector) nextBatch(ctx context.Context, feed *events.Feed) ([]events.Event, error) {
	var first events.Event
	select {
	case <-ctx.Done():
		return nil, p.ended(ctx, nil)
	case <-p.closed:
		return nil, ErrClosed
	case ev, ok := <-feed.Events():
		if !ok {
			return nil, feedEnded(feed)
		}
		first = ev
	}
	batch := []events.Event{first}
	var linger <-chan time.Time
	if p.cfg.Linger > 0 {
		t := time.NewTimer(p.cfg.Linger)
		defer t.Stop()
		linger = t.C
	}
	// A hurry signalled before this batch was for an earlier one.
	select {
	case <-p.hurry:
	default:
	}
	for len(batch) < p.cfg.BatchSize {
		select {
		case ev, ok := <-feed.Events():
			if !ok {
				return batch, nil // the next call reports why the feed ended
			}
			batch = append(batch, ev)
			continue
		default:
		}
		if linger == nil {
			return batch, nil
		}
		select {
		case ev, ok := <-feed.Events():
			if !ok {
				return batch, nil
			}
			batch = append(batch, ev)
		case <-linger:
			return batch, nil
		case <-p.hurry:
			return batch, nil
		case <-p.closed:
			return batch, nil
		case <-ctx.Done():
			return batch, nil
		}
	}
	return batch, nil
}

// ended is what Run returns for err once it has to stop: ErrClosed after
// Close (even if ctx ended too), nil when ctx ended, err otherwise.
func (p *Projector) ended(ctx context.Context, err error) error {
	switch {
	case p.isClosed():
		return ErrClosed
	case ctx.Err() != nil:
		return nil
	}
	return err
}

func feedEnded(feed *events.Feed) error {
	if err := feed.Err(); err != nil {
		return fmt.Errorf("projector: following the log: %w", err)
	}
	return errors.New("projector: the log's feed ended")
}

// apply commits one batch to the live file and publishes the new cursor.
// A panic while applying (bbolt meeting a damaged page) is damage. The
// places of messages that did not decode count as applied, so that WaitFor
// a sequence at or past them returns, but the file's cursor stays on the
// last event it holds: that is what the anchor check finds in the log.
func (p *Projector) apply(batch []events.Event) error {
	p.applyMu.Lock()
	defer p.applyMu.Unlock()
	if p.db == nil {
		return ErrClosed
	}
	through := batch[len(batch)-1].Seq
	batch = slices.DeleteFunc(batch, events.Event.Placeholder)
	if len(batch) > 0 {
		err := guard(func() error {
			_, _, err := applyBatch(p.db, p.log, batch, p.beforeCommit)
			return err
		})
		if err != nil {
			return err
		}
	}
	p.setApplied(through)
	p.maybeSnapshot(through)
	return nil
}

// Applied returns the stream sequence of the last event the views hold. It
// is 0 until Run has checked the views against the log, so that WaitFor
// never trusts views that are about to be rebuilt.
func (p *Projector) Applied() uint64 {
	p.stateMu.Lock()
	defer p.stateMu.Unlock()
	return p.applied
}

// WaitFor returns once the views hold every event up to seq (the sequence
// an Append returned), so that a query that follows reads its own writes.
// It returns ctx's error when ctx ends first and ErrClosed on Close.
// A caller that has to wait ends the linger of the batch in progress (see
// Config.Linger).
func (p *Projector) WaitFor(ctx context.Context, seq uint64) error {
	for {
		p.stateMu.Lock()
		applied, advanced := p.applied, p.advanced
		p.stateMu.Unlock()
		if applied >= seq {
			return nil
		}
		select {
		case p.hurry <- struct{}{}:
		default:
		}
		select {
		case <-advanced:
		case <-p.closed:
			return ErrClosed
		case <-ctx.Done():
			return fmt.Errorf("projector: waiting for sequence %d (applied %d): %w", seq, applied, ctx.Err())
		}
	}
}

func (p *Projector) setApplied(seq uint64) {
	p.stateMu.Lock()
	defer p.stateMu.Unlock()
	grew := seq > p.applied
	p.applied = seq
	if grew {
		close(p.advanced)
		p.advanced = make(chan struct{})
	}
}

// Close waits for a batch in progress, closes the views file and releases
// its lock. Run and WaitFor then return ErrClosed, as do queries. Close is
// safe to call more than once.
func (p *Projector) Close() error {
	var err error
	p.closeOnce.Do(func() {
		close(p.closed)
		p.snapWG.Wait()
		p.applyMu.Lock()
		defer p.applyMu.Unlock()
		p.dbMu.Lock()
		defer p.dbMu.Unlock()
		if p.db != nil {
			if cerr := p.db.Close(); cerr != nil {
				err = fmt.Errorf("projector: closing %s: %w", p.cfg.Path, cerr)
			}
			p.db = nil
		}
	})
	return err
}

func (p *Projector) isClosed() bool {
	select {
	case <-p.closed:
		return true
	default:
		return false
	}
}

// read runs fn in a read-only transaction of the live file. A panic of
// bbolt on a damaged page is an error, not a crash of the engine.
func (p *Projector) read(ctx context.Context, fn func(tx *bolt.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	p.dbMu.RLock()
	defer p.dbMu.RUnlock()
	if p.db == nil {
		return ErrClosed
	}
	return guard(func() error { return p.db.View(fn) })
}

// removeStaleReplays deletes fresh files a Replay left behind when its
// process died. Only the holder of the live file's lock replays, so none of
// them can be in use.
func removeStaleReplays(path string, log *slog.Logger) {
	stale, _ := filepath.Glob(replayPattern(path))
	for _, name := range stale {
		if err := os.Remove(name); err != nil {
			log.Warn("cannot remove a stale replay file", "file", name, "err", err)
			continue
		}
		log.Info("removed a stale replay file", "file", name)
	}
}
