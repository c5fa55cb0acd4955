package activity

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/orbitrun/orbit/events"
)

// startedFeed remembers the step.started events appended since a worker
// started, so that the first delivery of a fresh command finds its
// decision without reading the log: a lookup in memory, or a wait of a
// few milliseconds for an event still in flight.
//
// IMPORTANT: it only ever says yes. A decision it does not hold (stored
// before the feed started, or the feed is behind or failed) is looked up
// in the log (Worker.lookup), which alone can say no.
type startedFeed struct {
	feed *events.Feed
	log  *slog.Logger
	done chan struct{} // closed when run returns

	mu      sync.Mutex
	seen    map[string]startedEntry // step.started id → what it records
	changed chan struct{}           // closed, and replaced, at every new entry
	swept   time.Time
}

// startedEntry is what the feed keeps of one step.started.
type startedEntry struct {
	activityType string
	at           time.Time // when the feed saw it, for forgetting it
}

// startedKeep is how long an entry no command of this worker took is kept:
// its command went to another engine's worker, or was handled while the
// feed was behind.
const startedKeep = 2 * time.Minute

// followStarted starts a startedFeed at the end of the log.
func followStarted(ctx context.Context, log *events.Log, logger *slog.Logger) (*startedFeed, error) {
	last, err := log.LastSeq(ctx)
	if err != nil {
		return nil, err
	}
	feed, err := log.Follow(ctx, events.FollowOptions{
		Filters:  []string{events.TypeFilter(events.AggregateRun, events.StepStarted)},
		FromSeq:  last + 1,
		BlobRefs: true, // only the activity type is read
	})
	if err != nil {
		return nil, err
	}
	s := &startedFeed{feed: feed, log: logger, done: make(chan struct{}),
		seen: make(map[string]startedEntry), changed: make(chan struct{}), swept: time.Now()}
	go s.run()
	return s, nil
}

func (s *startedFeed) run() {
	defer close(s.done)
	defer func() {
		if err := s.feed.Err(); err != nil {
			// Commands are then looked up in the log: slower, still exact.
			s.log.Warn("the feed of step.started ended", "err", err)
		}
	}()
	for ev := range s.feed.Events() {
		var d startedActivity
		if ev.Decode(&d) != nil {
			continue
		}
		now := time.Now()
		s.mu.Lock()
		s.seen[ev.ID] = startedEntry{activityType: d.ActivityType, at: now}
		if now.Sub(s.swept) > startedKeep {
			for id, e := range s.seen {
				if now.Sub(e.at) > startedKeep {
					delete(s.seen, id)
				}
			}
			s.swept = now
		}
		close(s.changed)
		s.changed = make(chan struct{})
		s.mu.Unlock()
	}
}

// startedActivity is the part of a step.started the feed reads: decoding
// only it leaves the rendered input, which may be large, undecoded.
type startedActivity struct {
	ActivityType string `json:"activity_type"`
}

// await reports whether the step.started with id, recording activityType,
// is seen within wait; it forgets the entry when it is.
func (s *startedFeed) await(ctx context.Context, id, activityType string, wait time.Duration) bool {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		s.mu.Lock()
		e, ok := s.seen[id]
		if ok {
			delete(s.seen, id)
		}
		changed := s.changed
		s.mu.Unlock()
		if ok {
			return e.activityType == activityType
		}
		select {
		case <-changed:
		case <-timer.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// Stop ends the feed and waits until it has.
func (s *startedFeed) Stop() {
	s.feed.Stop()
	<-s.done
}
