package executor

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/orbitrun/orbit/events"
)

// historyFeed is, on an embedded store, the one feed of run events that
// the histories of every run this engine interprets share: a feed of each
// run's own cost the server a consumer created at the run's start and
// deleted at its end, a tenth of the process's CPU on W3 (issue 29; see
// docs/architecture/runs.md, "Where a run's time goes"). On an embedded
// store every run is this engine's, so the feed carries nothing another
// engine interprets.
//
// A history registers with the feed before it reads what the log holds
// of its run: every event stored after that read is handed to it by the
// feed, and one both read and handed is dropped by its sequence (see
// runHistory.drain).
type historyFeed struct {
	feed *events.Feed
	done chan struct{} // closed once the feed has ended and its histories were failed

	mu   sync.Mutex
	runs map[string]*runHistory
	err  error // why the feed ended, once it has
}

// startHistoryFeed follows every run's events but the types a history
// does not read, from the end of the log.
func startHistoryFeed(ctx context.Context, log *events.Log) (*historyFeed, error) {
	filters := allRunsFilters()
	last, err := log.LastMatching(ctx, filters)
	if err != nil {
		return nil, err
	}
	feed, err := log.Follow(ctx, events.FollowOptions{Filters: filters, FromSeq: last + 1})
	if err != nil {
		return nil, err
	}
	f := &historyFeed{feed: feed, done: make(chan struct{}), runs: map[string]*runHistory{}}
	go f.run()
	return f, nil
}

// allRunsFilters are a history's filters (events.RunFilterExcept) over
// every run.
func allRunsFilters() []string {
	const marker = "RUNID"
	one := events.RunFilterExcept(marker, unread...)
	all := make([]string, len(one))
	for i, f := range one {
		all[i] = strings.Replace(f, "."+marker+".", ".*.", 1)
	}
	return all
}

func (f *historyFeed) run() {
	defer close(f.done)
	for ev := range f.feed.Events() {
		f.mu.Lock()
		h := f.runs[ev.RunID]
		f.mu.Unlock()
		if h != nil {
			h.push(ev)
		}
	}
	err := f.feed.Err()
	if err == nil {
		err = fmt.Errorf("%w: the feed of the runs' histories closed", events.ErrUnavailable)
	}
	f.mu.Lock()
	f.err = err
	runs := f.runs
	f.runs = nil
	f.mu.Unlock()
	for _, h := range runs {
		h.fail(err)
	}
}

// register hands h the events of its run from now on.
func (f *historyFeed) register(h *runHistory) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return f.err
	}
	f.runs[h.runID] = h
	return nil
}

// unregister stops handing h events.
func (f *historyFeed) unregister(h *runHistory) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.runs[h.runID] == h {
		delete(f.runs, h.runID)
	}
}

// failed reports whether the feed has ended.
func (f *historyFeed) failed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err != nil
}

// stop ends the feed and waits for it.
func (f *historyFeed) stop() {
	f.feed.Stop()
	<-f.done
}

// historyFeed returns the orchestrator's live history feed, starting one
// if there is none or the last one ended. It lives as long as the
// orchestrator runs (see run).
func (o *Orchestrator) historyFeed(ctx context.Context) (*historyFeed, error) {
	o.feedMu.Lock()
	defer o.feedMu.Unlock()
	if o.feed != nil && !o.feed.failed() {
		return o.feed, nil
	}
	f, err := startHistoryFeed(ctx, o.cfg.Log)
	if err != nil {
		return nil, err
	}
	o.feed = f
	return f, nil
}

// stopHistoryFeed ends the history feed, once no run is interpreted.
func (o *Orchestrator) stopHistoryFeed() {
	o.feedMu.Lock()
	defer o.feedMu.Unlock()
	if o.feed != nil {
		o.feed.stop()
		o.feed = nil
	}
}

// openRunHistory opens the history of a run this engine interprets: on
// an embedded store fed by the engine's history feed, elsewhere by a feed
// of its own. from is the sequence of the run's run.requested, its first
// event (0: not known): what precedes it is not read.
func (o *Orchestrator) openRunHistory(ctx context.Context, runID string, from uint64, onEvent func(events.Event)) (*runHistory, error) {
	if !o.cfg.Log.Embedded() {
		return openHistory(ctx, o.cfg.Log, runID, from, onEvent)
	}
	f, err := o.historyFeed(ctx)
	if err != nil {
		return nil, err
	}
	return openFedHistory(ctx, f, o.cfg.Log, runID, from, onEvent)
}
