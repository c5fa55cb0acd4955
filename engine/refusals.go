package engine

import (
	"context"
	"log/slog"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/orbitrun/orbit/events"
)

// refusalWindow is how long the refused verbs of one task are counted
// before they are recorded as one groundhog.verb_refused.
const refusalWindow = 10 * time.Second

// refusals records the engine's refused verbs, coalesced per task (see
// events.GroundhogVerbRefused): the first refusal of a task is appended as
// it comes and opens a window; those within it are counted, and appended
// as one event when it ends, which opens the next; a window that counted
// none closes. A caller that repeats a refused verb, at any rate, so adds
// one event a window to the log. It is safe for concurrent use.
type refusals struct {
	log    *events.Log
	window time.Duration
	logger *slog.Logger

	mu      sync.Mutex
	tasks   map[string]*refusalCount // the tasks with an open window
	stopped bool
}

// refusalCount is what a task's open window has counted.
type refusalCount struct {
	n           int
	since       time.Time // when the first counted came
	first, last events.VerbRefusal
	timer       *time.Timer
}

func newRefusals(log *events.Log, window time.Duration, logger *slog.Logger) *refusals {
	if window <= 0 {
		window = refusalWindow
	}
	return &refusals{log: log, window: window, logger: logger, tasks: map[string]*refusalCount{}}
}

// refuse records that r, a verb for task, was refused: at once when the
// task has no open window (the error is the append's), else when the
// window ends.
func (f *refusals) refuse(ctx context.Context, task string, r events.VerbRefusal) error {
	r.Verb, r.By = capText(r.Verb, events.MaxVerbText), capText(r.By, events.MaxVerbText)
	f.mu.Lock()
	if c, open := f.tasks[task]; open {
		if c.n == 0 {
			c.first, c.since = r, time.Now().UTC()
		}
		c.n++
		c.last = r
		f.mu.Unlock()
		return nil
	}
	if !f.stopped {
		f.open(task)
	}
	f.mu.Unlock()
	_, err := f.log.Append(ctx, events.Event{Type: events.GroundhogVerbRefused, TaskID: task},
		events.GroundhogVerbRefusedData{Verb: r.Verb, Reason: r.Reason, By: r.By, Signer: r.Signer})
	return err
}

// open starts a window for task. f.mu is held.
func (f *refusals) open(task string) {
	c := &refusalCount{}
	c.timer = time.AfterFunc(f.window, func() { f.close(task, c) })
	f.tasks[task] = c
}

// close ends c, task's window: it records what c counted and opens the
// next window, or, when c counted nothing, leaves the task without one.
func (f *refusals) close(task string, c *refusalCount) {
	f.mu.Lock()
	if f.tasks[task] != c {
		f.mu.Unlock()
		return // flushed by stop
	}
	delete(f.tasks, task)
	if c.n > 0 && !f.stopped {
		f.open(task)
	}
	f.mu.Unlock()
	f.record(task, c)
}

// record appends what c counted, if anything.
func (f *refusals) record(task string, c *refusalCount) {
	if c.n == 0 {
		return
	}
	last := c.last
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := f.log.Append(ctx, events.Event{Type: events.GroundhogVerbRefused, TaskID: task},
		events.GroundhogVerbRefusedData{Verb: c.first.Verb, Reason: c.first.Reason, By: c.first.By, Signer: c.first.Signer,
			Count: c.n, Since: c.since, Last: &last})
	if err != nil {
		f.logger.Warn("refused verbs not recorded", "task", task, "count", c.n, "err", err)
	}
}

// stop records what every open window has counted and opens no more: a
// refusal after it is recorded as it comes. Called when the engine stops
// taking requests.
func (f *refusals) stop() {
	f.mu.Lock()
	f.stopped = true
	open := f.tasks
	f.tasks = map[string]*refusalCount{}
	f.mu.Unlock()
	for task, c := range open {
		c.timer.Stop()
		f.record(task, c)
	}
}

// capText returns s cut to at most n bytes, at a character's start.
func capText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
