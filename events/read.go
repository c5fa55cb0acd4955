package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// FollowOptions say which events a Feed delivers.
type FollowOptions struct {
	// Filters are subject filters (see RunFilter, TaskFilter, TypeFilter);
	// empty means every event.
	Filters []string
	// FromSeq is the first stream sequence to deliver; 0 means the start.
	FromSeq uint64
	// Placeholders delivers, in place of a message that does not decode, an
	// Event with only Seq set (see Event.Placeholder), so that a consumer
	// that records its position in the log moves past it.
	Placeholders bool
	// BlobRefs delivers events as stored: values moved to blobs (see
	// BlobValue) stay references instead of being read back.
	BlobRefs bool
}

// Feed delivers events in stream order, first those already in the log and
// then new ones as they are appended, until Stop. It is backed by an ordered
// consumer: no event is skipped or delivered twice, even across reconnects.
// The consumer is deleted when the feed ends; one whose client died without
// stopping it is removed by the server after feedInactiveThreshold.
type Feed struct {
	log      *Log
	cons     jetstream.Consumer
	events   chan Event
	caughtUp chan struct{}
	// pending is how many messages the feed's consumer had to deliver
	// when it was created; last, the sequence of the one that ended them
	// (the run goroutine's until caughtUp is closed).
	pending  uint64
	last     uint64
	marks    bool
	refs     bool
	mc       jetstream.MessagesContext
	stopOnce sync.Once
	stop     chan struct{}
	// ctx ends when the feed stops: it bounds what the feed reads besides
	// its messages (blobs, the look-up of a late event's place).
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	err    error
}

// Follow starts a Feed. Messages that do not decode (written by a foreign
// publisher, or by a newer Orbit with event types this one does not know)
// are logged and skipped: never delivered, or delivered as placeholders
// when opts.Placeholders is set. So are messages that fail verification by
// the log key, which are recorded as integrity.rejected besides.
//
// The feed catches up with the events that matched when its consumer was
// created by counting them: the server says how many there were as it
// creates the consumer, and how many are left with each message. Looking
// up the last event of each filter instead cost one request to the
// server's API per filter (a run's history has twelve) for every feed.
func (l *Log) Follow(ctx context.Context, opts FollowOptions) (*Feed, error) {
	if err := checkFilters(opts.Filters); err != nil {
		return nil, err
	}
	cfg := jetstream.OrderedConsumerConfig{FilterSubjects: opts.Filters, InactiveThreshold: feedInactiveThreshold}
	if opts.FromSeq > 1 {
		cfg.DeliverPolicy = jetstream.DeliverByStartSequencePolicy
		cfg.OptStartSeq = opts.FromSeq
	}
	cctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	cons, err := l.js.OrderedConsumer(cctx, EventsStream, cfg)
	if err != nil {
		return nil, fmt.Errorf("%w: following events: %v", ErrUnavailable, err)
	}
	mc, err := cons.Messages(jetstream.PullMaxMessages(256), jetstream.PullHeartbeat(feedHeartbeat))
	if err != nil {
		return nil, fmt.Errorf("%w: following events: %v", ErrUnavailable, err)
	}
	info := cons.CachedInfo()
	if info == nil {
		mc.Stop()
		return nil, fmt.Errorf("%w: following events: the server did not describe the feed's consumer", ErrUnavailable)
	}
	f := &Feed{
		log:      l,
		cons:     cons,
		events:   make(chan Event, 64),
		caughtUp: make(chan struct{}),
		pending:  info.NumPending,
		marks:    opts.Placeholders,
		refs:     opts.BlobRefs,
		mc:       mc,
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	f.ctx, f.cancel = context.WithCancel(context.Background())
	if f.pending == 0 {
		close(f.caughtUp)
	}
	go f.run()
	return f, nil
}

// feedHeartbeat is how often the server tells a waiting feed that its pull
// is alive; two missed in a row make the ordered consumer start over. On a
// cluster under load the first pull of a new consumer is sometimes never
// served (the consumer, placed on another server, was not yet reachable
// there): with the client's default of 5 s, a run's history then waited
// 10 s for its first event (BenchmarkClusterThroughput's stalls). The cost
// is one small message a second per idle feed.
const feedHeartbeat = time.Second

// feedInactiveThreshold is how long the server keeps the consumer of a feed
// whose client went away without stopping it (a killed process). A live
// feed always has a pull request waiting, so it is never idle that long.
const feedInactiveThreshold = time.Minute

// deleteConsumer removes the feed's consumer from the server, so that the
// stream's consumer count does not grow with every feed ever started.
func (f *Feed) deleteConsumer() {
	info := f.cons.CachedInfo()
	if info == nil || f.log.nc.IsClosed() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := f.log.js.DeleteConsumer(ctx, EventsStream, info.Name)
	if err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
		f.log.log.Debug("feed consumer not deleted; the server drops it when idle", "consumer", info.Name, "err", err)
	}
}

// MaxFilterBytes bounds a subject filter a read takes. The requests that
// carry a filter name it in their subject, and past the server's control
// line (4 KiB by default) the server closes the connection that sent it —
// the engine's own, when the engine reads for a client that sent a 100 KB
// run id. No subject the log holds is that long (ids are at most 128
// bytes).
const MaxFilterBytes = 1024

// checkFilters refuses, as an invalid request, a filter past
// MaxFilterBytes, quoting its start.
func checkFilters(filters []string) error {
	for _, f := range filters {
		if len(f) > MaxFilterBytes {
			return fmt.Errorf("%w: the subject %q… is %d bytes, longer than any in the log (at most %d): an id that long is none",
				ErrInvalidRequest, f[:64], len(f), MaxFilterBytes)
		}
	}
	return nil
}

// LastMatching returns the sequence of the last event matching any of the
// subject filters (all events when there are none), 0 when none matches.
// A filter past MaxFilterBytes is an error matching ErrInvalidRequest
// (Follow and Read ask this first, so they refuse it too).
func (l *Log) LastMatching(ctx context.Context, filters []string) (uint64, error) {
	lasts, err := l.lastsFor(ctx, filters)
	if err != nil {
		return 0, err
	}
	return slices.Max(lasts), nil
}

// lastsFor returns, per subject filter, the sequence of the last event
// matching it (0 when none does); with no filters, one: the log's last.
func (l *Log) lastsFor(ctx context.Context, filters []string) ([]uint64, error) {
	if len(filters) == 0 {
		last, err := l.LastSeq(ctx)
		return []uint64{last}, err
	}
	if err := checkFilters(filters); err != nil {
		return nil, err
	}
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	// One request per filter, all in flight at once: a reader of a run
	// without its activity events follows nine filters.
	seqs := make([]uint64, len(filters))
	errs := make([]error, len(filters))
	var wg sync.WaitGroup
	for i, f := range filters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			seqs[i], errs[i] = l.lastFor(ctx, f)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return seqs, nil
}

// lastFor returns the sequence of the last event matching filter, 0 when
// none does, as the event stream's leader knows it. A direct get would be
// answered by whichever replica the server picks (its queue group spans
// every replica, and a request from a client goes to any of them), and one
// behind the leader names an older last event: a read bounded by it ends
// before events an earlier read returned, a feed counts itself caught up
// too soon. The cost is the leader answering every such request, one
// route hop away from a reader connected to another server.
func (l *Log) lastFor(ctx context.Context, filter string) (uint64, error) {
	req, err := json.Marshal(storedMsgGet{LastFor: filter})
	if err != nil {
		return 0, err
	}
	msg, err := l.nc.RequestWithContext(ctx, "$JS.API.STREAM.MSG.GET."+EventsStream, req)
	if err != nil {
		return 0, fmt.Errorf("%w: last event for %s: %v", ErrUnavailable, filter, err)
	}
	var reply storedMsgReply
	if err := json.Unmarshal(msg.Data, &reply); err != nil {
		return 0, fmt.Errorf("%w: last event for %s: %v", ErrUnavailable, filter, err)
	}
	switch {
	case reply.Error != nil && reply.Error.ErrorCode == jetstream.JSErrCodeMessageNotFound:
		return 0, nil
	case reply.Error != nil:
		return 0, fmt.Errorf("%w: last event for %s: %v", ErrUnavailable, filter, reply.Error)
	case reply.Message == nil:
		return 0, fmt.Errorf("%w: last event for %s: an empty answer", ErrUnavailable, filter)
	}
	return reply.Message.Seq, nil
}

func (f *Feed) run() {
	defer close(f.done)
	defer f.cancel()
	defer f.deleteConsumer()
	defer close(f.events)
	caught := false
	select {
	case <-f.caughtUp:
		caught = true
	default:
	}
	for {
		msg, err := f.mc.Next()
		if err != nil {
			if !errors.Is(err, jetstream.ErrMsgIteratorClosed) {
				f.setErr(fmt.Errorf("%w: following events: %v", ErrUnavailable, err))
			}
			return
		}
		meta, err := msg.Metadata()
		if err != nil {
			f.setErr(fmt.Errorf("%w: %v", ErrInvalidEvent, err))
			return
		}
		seq := meta.Sequence.Stream
		ev, err := f.log.readMessage(f.ctx, seq, msg.Subject(), msg.Headers(), msg.Data(), meta.Timestamp)
		switch {
		case errors.Is(err, ErrUnavailable):
			f.setErr(err)
			return
		case err != nil:
			ev = Event{}
		case !f.refs:
			if ev.Data, err = f.log.expand(f.ctx, ev.Data); err != nil {
				f.setErr(err)
				return
			}
		}
		if err == nil || f.marks {
			ev.Seq = seq
			select {
			case f.events <- ev:
			case <-f.stop:
				return
			}
		}
		// Counted down, or none left now: a message removed from the
		// stream before its delivery (retention) is never delivered.
		if !caught {
			f.pending--
			if f.pending == 0 || meta.NumPending == 0 {
				caught = true
				f.last = seq
				close(f.caughtUp)
			}
		}
	}
}

// Events returns the channel events are delivered on. It is closed after
// Stop, or when the feed fails (see Err).
func (f *Feed) Events() <-chan Event { return f.events }

// CaughtUp is closed once every event that matched when the feed started
// has been delivered.
func (f *Feed) CaughtUp() <-chan struct{} { return f.caughtUp }

// Last is, once CaughtUp is closed, the sequence of the last message of
// those that matched when the feed started (0: none).
func (f *Feed) Last() uint64 { return f.last }

// Stop ends the feed and waits for its goroutine. It is safe to call more
// than once.
//
// The ordered consumer is stopped without waiting: one whose consumer
// vanished (its stream deleted) is remaking it, holding the lock its Stop
// takes through up to ten seconds of back-off and a ten-second request,
// and the feed's goroutine has usually ended on that error already. A
// live feed's goroutine ends as soon as the stop reaches its consumer.
func (f *Feed) Stop() {
	f.stopOnce.Do(func() {
		close(f.stop)
		f.cancel()
		go f.mc.Stop()
	})
	<-f.done
}

// Err returns the error that ended the feed, if it ended by failing.
func (f *Feed) Err() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

func (f *Feed) setErr(err error) {
	f.mu.Lock()
	f.err = err
	f.mu.Unlock()
}
