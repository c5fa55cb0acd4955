package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/orbitrun/orbit/engine"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/projector"
)

const (
	// livenessInterval is how long a command following a run goes without
	// an event before it asks whether the engine still answers.
	livenessInterval = 2 * time.Second
	// livenessTimeout bounds that question: an engine that does not answer
	// within it is taken for dead.
	livenessTimeout = 3 * time.Second
)

// runFeed follows one run's events across the death of the engine. The log
// may outlive the engine (an external NATS server), and a dead embedded
// engine leaves a client reconnecting forever, so neither the feed nor the
// connection says the engine is gone: the engine's API does, by not
// answering. Then runFeed connects again as every command does (starting a
// background engine for the root) and resumes after the last event it
// delivered, so that no event is delivered twice and none is lost.
//
// On a cluster the engine is any of the engines, the connection moves to
// another server of the URL list when its own dies, and a node's loss
// leaves engines unanswering for the election of new stream leaders and
// their own reconnection: there runFeed asks again, for up to
// events.ElectionWindow, and follows on through the same connection.
type runFeed struct {
	a       *app
	runID   string
	filters []string
	conn    *events.Log
	opened  *events.Log // a connection runFeed made itself, closed by stop
	feed    *events.Feed
	last    uint64
	// quiet, when set, is called after livenessInterval without an event,
	// once the engine has answered.
	quiet func(ctx context.Context, l *events.Log)
	// unseen: a read left out an event of the run (see app.rejected),
	// so its end may never come on the feed: the engine is asked.
	unseen bool
	// cluster is whether conn was to a cluster when following began (a
	// connection that is reconnecting tells no cluster).
	cluster bool
}

// followRun starts following runID's events matching filters on l.
func (a *app) followRun(ctx context.Context, l *events.Log, runID string, filters []string) (*runFeed, error) {
	feed, err := l.Follow(ctx, events.FollowOptions{Filters: filters, BlobRefs: true})
	if err != nil {
		return nil, &exitError{code: exitUnavailable, err: err}
	}
	return &runFeed{a: a, runID: runID, filters: filters, conn: l, feed: feed, cluster: l.ClusterSize() > 1}, nil
}

// log returns the connection the feed currently reads from.
func (f *runFeed) log() *events.Log { return f.conn }

// next returns the run's next event. It fails with exit code 3, naming
// `orbit run tail`, when the engine is gone and no other can be reached, and
// with ctx's error when ctx ends.
func (f *runFeed) next(ctx context.Context) (events.Event, error) {
	quiet := time.NewTimer(livenessInterval)
	defer quiet.Stop()
	for {
		select {
		case ev, ok := <-f.feed.Events():
			if !ok {
				if err := f.resume(ctx, f.feed.Err()); err != nil {
					return events.Event{}, err
				}
				continue
			}
			if ev.Seq <= f.last {
				continue
			}
			f.last = ev.Seq
			return ev, nil
		case r := <-f.a.rejections():
			if events.SubjectRun(r.Subject) != f.runID {
				continue
			}
			f.unseen = true
			if r.Subject == events.EventSubject(events.AggregateRun, f.runID, events.RunFinished) {
				if ev, ok := f.endSeen(ctx); ok {
					return ev, nil
				}
			}
		case <-quiet.C:
			if err := f.answers(ctx); err != nil {
				if err := f.resume(ctx, err); err != nil {
					return events.Event{}, err
				}
			} else if f.quiet != nil {
				f.quiet(ctx, f.conn)
			}
			if f.unseen {
				if ev, ok := f.endSeen(ctx); ok {
					return ev, nil
				}
			}
			quiet.Reset(livenessInterval)
		case <-ctx.Done():
			return events.Event{}, ctx.Err()
		}
	}
}

// endSeen asks the engine whether the run has ended, for a follower that
// left out one of its events: when it has, it returns the run.finished the
// engine's view of the run holds, and says on stderr that the end is the
// engine's word. A run.finished the follower itself left out would
// otherwise be waited for for ever; one the engine left out too leaves the
// run unended for both, and the follower waits on.
func (f *runFeed) endSeen(ctx context.Context) (events.Event, bool) {
	ctx, cancel := context.WithTimeout(ctx, livenessTimeout)
	defer cancel()
	var v projector.RunView
	if err := f.conn.Request(ctx, engine.EndpointRun, engine.RunQuery{RunID: f.runID}, &v); err != nil || !events.Terminal(v.State) {
		return events.Event{}, false
	}
	data, err := json.Marshal(events.RunFinishedData{State: v.State, Output: v.Output, Error: v.Error, DurationMS: v.DurationMS})
	if err != nil {
		return events.Event{}, false
	}
	f.a.errorf("orbit: run %s ended %s, as the engine's view of it says: this command left out events of the run (above)\n", f.runID, v.State)
	ev := events.Event{Type: events.RunFinished, RunID: f.runID, Job: v.Job, Seq: v.LastSeq, Data: data}
	if v.FinishedAt != nil {
		ev.Time = *v.FinishedAt
	}
	return ev, true
}

// answers asks the engine's API for its info, briefly.
func (f *runFeed) answers(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, livenessTimeout)
	defer cancel()
	var info engine.InfoReply
	return f.conn.Request(ctx, engine.EndpointInfo, nil, &info)
}

// resume replaces a feed whose engine stopped answering (because of cause):
// it connects again, starting an engine for the root if need be, and
// follows on from the last event delivered.
func (f *runFeed) resume(ctx context.Context, cause error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	lost := func(err error) error {
		return &exitError{code: exitUnavailable, err: fmt.Errorf("lost the engine while following run %s (%w); the run goes on when an engine serves it again: orbit run tail %s", f.runID, err, f.runID)}
	}
	if cause == nil {
		cause = errors.New("the event feed ended")
	}
	if f.cluster {
		return f.resumeOnCluster(ctx, cause, lost)
	}
	if f.a.natsURL != "" {
		return lost(cause)
	}
	f.a.errorf("lost the engine while following run %s (%v); reconnecting\n", f.runID, cause)
	f.feed.Stop()
	f.closeOpened()
	l, err := f.a.connect(ctx)
	if err != nil {
		return lost(err)
	}
	f.conn, f.opened = l, l
	if err := f.answers(ctx); err != nil {
		return lost(err)
	}
	feed, err := l.Follow(ctx, events.FollowOptions{Filters: f.filters, FromSeq: f.last + 1, BlobRefs: true})
	if err != nil {
		return lost(err)
	}
	f.feed = feed
	return nil
}

// resumeOnCluster follows on from the last event delivered through the
// feed's own connection, which reconnects to another server by itself,
// once an engine answers again; lost makes the error when none does
// within events.ElectionWindow.
func (f *runFeed) resumeOnCluster(ctx context.Context, cause error, lost func(error) error) error {
	f.a.errorf("no engine answered while following run %s (%v); waiting for the cluster\n", f.runID, cause)
	f.feed.Stop()
	deadline := time.Now().Add(events.ElectionWindow)
	for {
		err := f.answers(ctx)
		if err == nil {
			var feed *events.Feed
			if feed, err = f.conn.Follow(ctx, events.FollowOptions{Filters: f.filters, FromSeq: f.last + 1, BlobRefs: true}); err == nil {
				f.feed = feed
				return nil
			}
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if time.Now().After(deadline) {
			return lost(err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(clusterRetryWait):
		}
	}
}

// clusterRetryWait is the pause between tries of resumeOnCluster.
const clusterRetryWait = 250 * time.Millisecond

func (f *runFeed) closeOpened() {
	if f.opened != nil {
		_ = f.opened.Close()
		f.opened = nil
	}
}

// stop ends the feed and closes any connection it made.
func (f *runFeed) stop() {
	f.feed.Stop()
	f.closeOpened()
}
