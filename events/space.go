package events

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"syscall"
	"time"
)

// DefaultMinFreeBytes is how much free space the embedded store's disk
// keeps in reserve: below it, appends fail with ErrStoreFull instead of
// being written. JetStream treats a write that fails for lack of space as a
// critical error of the stream (which then needs a restart), so Orbit stops
// writing before the disk is full, and writes again as soon as space is
// freed.
const DefaultMinFreeBytes = 64 << 20

type waitForSpaceKey struct{}

// WaitForSpace returns a context under which a write to a store short of
// space waits until space is freed (or ctx ends) instead of failing with
// ErrStoreFull. The engine's own work runs under it, so a full disk pauses
// it; a request made on someone's behalf does not, and fails at once.
func WaitForSpace(ctx context.Context) context.Context {
	return context.WithValue(ctx, waitForSpaceKey{}, true)
}

// room returns nil when the store can take a write. While it cannot, it
// returns the shortage — or, under WaitForSpace, waits for space.
func (l *Log) room(ctx context.Context) error {
	err := l.space.check()
	if err == nil || ctx.Value(waitForSpaceKey{}) == nil {
		return err
	}
	l.space.warnOnce(l.log, err)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return err
		case <-tick.C:
			if err = l.space.check(); err == nil {
				return nil
			}
		}
	}
}

// spaceGuard refuses writes while the store's disk is nearly full. While
// there is room it checks the disk at most every quarter second; while
// there is not, on every write, so that writes go on as soon as space is
// freed.
type spaceGuard struct {
	dir  string
	min  uint64
	free func(dir string) (uint64, error)

	mu      sync.Mutex
	checked time.Time
	err     error
	warned  bool // the current shortage has been logged
}

// warnOnce logs a shortage the first time a write waits for it.
func (g *spaceGuard) warnOnce(log *slog.Logger, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.warned {
		g.warned = true
		log.Warn("writes wait for disk space", "err", err)
	}
}

// check returns ErrStoreFull (wrapped, with the numbers) while the disk
// has less than the reserve free.
func (g *spaceGuard) check() error {
	if g == nil {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.err == nil && time.Since(g.checked) < 250*time.Millisecond {
		return nil
	}
	g.checked = time.Now()
	g.err = nil
	free, err := g.free(g.dir)
	if err == nil && free < g.min {
		g.err = &shortage{fmt.Sprintf("%s has %d MiB free, less than the %d MiB kept in reserve; free some space and Orbit goes on",
			g.dir, free>>20, g.min>>20)}
	}
	if g.err == nil {
		g.warned = false
	}
	return g.err
}

// statfsFree is the space available to unprivileged writers on dir's
// filesystem.
func statfsFree(dir string) (uint64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return st.Bavail * uint64(st.Bsize), nil
}

// SpaceShortage says why the embedded store refuses writes — its disk is
// below the reserve — or returns "" when it takes them. A connection to
// another server always returns "": that server manages its own disk.
func (l *Log) SpaceShortage() string {
	var short *shortage
	if errors.As(l.space.check(), &short) {
		return short.detail
	}
	return ""
}

// shortage is the error of a write refused for lack of space.
type shortage struct{ detail string }

func (s *shortage) Error() string { return ErrStoreFull.Error() + ": " + s.detail }
func (s *shortage) Unwrap() error { return ErrStoreFull }
