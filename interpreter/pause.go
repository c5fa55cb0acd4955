package interpreter

import (
	"context"
	"sync"
	"time"

	"github.com/orbitrun/orbit/events"
)

// A run's pauses (DESIGN §12). run.paused and run.unpaused are appended by
// the engine's API; the interpreter folds them as they arrive (observe) and
// starts no new step while the last is a pause. The intervals, by the
// events' times, are recorded facts: a wait deadline is extended by the
// paused time after its step started, the same on every replay.

// pauseSpan is one pause; To is zero while it lasts.
type pauseSpan struct{ From, To time.Time }

// Pauses is what an interpreter knows of its run's pauses.
type Pauses struct {
	mu      sync.Mutex
	spans   []pauseSpan
	changed chan struct{}
}

// NewPauses returns the pauses of a run none of whose events is known yet.
func NewPauses() *Pauses { return &Pauses{changed: make(chan struct{})} }

// Observe folds a run.paused or run.unpaused event.
func (p *Pauses) Observe(ev events.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	open := len(p.spans) > 0 && p.spans[len(p.spans)-1].To.IsZero()
	switch {
	case ev.Type == events.RunPaused && !open:
		p.spans = append(p.spans, pauseSpan{From: ev.Time})
	case ev.Type == events.RunUnpaused && open:
		p.spans[len(p.spans)-1].To = ev.Time
	default:
		return
	}
	close(p.changed)
	p.changed = make(chan struct{})
}

// paused reports whether the run is paused now, and a channel closed at
// the next change.
func (p *Pauses) paused() (bool, <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.spans) > 0 && p.spans[len(p.spans)-1].To.IsZero(), p.changed
}

// Deadline extends base, the deadline of something that started at
// start, by the time the run was paused after start and before the
// deadline so extended. ok is false while a pause that began before it
// lasts: there is no deadline until it ends.
func (p *Pauses) Deadline(base, start time.Time) (time.Time, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return extendDeadline(p.spans, base, start)
}

func extendDeadline(spans []pauseSpan, base, start time.Time) (time.Time, bool) {
	d := base
	for _, s := range spans {
		if !s.To.IsZero() && !s.To.After(start) {
			continue
		}
		if !s.From.Before(d) {
			break
		}
		if s.To.IsZero() {
			return time.Time{}, false
		}
		d = d.Add(s.To.Sub(later(s.From, start)))
	}
	return d, true
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// waitUnpaused blocks while the run is paused, until it is unpaused, is
// cancelled or ctx ends.
func (x *Interpreter) waitUnpaused(ctx context.Context) {
	for {
		paused, changed := x.pauses.paused()
		if !paused {
			return
		}
		select {
		case <-changed:
		case <-x.cancelled:
			return
		case <-ctx.Done():
			return
		}
	}
}
