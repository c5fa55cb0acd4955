package events

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Scan reads the events of the log from sequence from (the start when 0)
// through upTo, in stream order, and hands them to fn in batches of at most
// size events. fn owns a batch only until it returns: the slice is reused
// for the next one. Scan returns nil once it has handed upTo, or the last
// event the log held when it started (LastSeq, as the stream's leader
// knows it) if the log ends before upTo; fn's error if fn fails;
// ErrUnavailable if the log cannot be read, if a message goes missing on
// the way (a reconnect), or if the events through that last one cannot all
// be read: Scan never skips an event unseen, and never ends short.
//
// Events are checked and decoded as Follow checks and decodes them, with
// FollowOptions.BlobRefs: one that fails verification by the log key, or
// does not decode, is left out (and recorded as integrity.rejected, or
// logged, the same way); values moved to blobs stay references.
//
// Scan is for a reader that wants the log as it stands, from one sequence
// to another, as fast as it can be read (a view rebuild): it pulls from a
// consumer of its own in requests of size messages, two in flight, over a
// plain subscription, without the feed's per-message work (a heartbeat
// timer set and stopped, a channel hand-off to the reader). It does not
// wait for events to be appended.
//
// On a cluster that consumer lives on one replica of the stream, chosen by
// the server, and reads that replica's store, which may be behind its
// leader's (a node restarted after its loss and still catching up), and
// its requests may find no responders while its interest reaches the
// other servers. When it has nothing more before the last sequence, or
// does not answer, Scan makes another from where it got to, after a
// pause, until the events are there or scanCatchUp passes without one
// more.
func (l *Log) Scan(ctx context.Context, from, upTo uint64, size int, fn func([]Event) error) error {
	if size < 1 {
		return fmt.Errorf("events: scanning in batches of %d: want at least 1", size)
	}
	from = max(from, 1)
	last, err := l.LastSeq(ctx)
	if err != nil {
		return err
	}
	end := min(upTo, last)
	if from > end {
		return nil
	}
	sc := &scanner{log: l, end: end, size: size, fn: fn, batch: make([]Event, 0, size)}
	pause, stalled := scanRetryFirst, time.Now()
	for {
		next, err := sc.scan(ctx, from)
		if !errors.Is(err, errScanBehind) {
			return err
		}
		if next > from {
			pause, stalled = scanRetryFirst, time.Now()
		}
		from = next
		if l.srv != nil || time.Since(stalled) > scanCatchUp {
			return fmt.Errorf("%w: scanning events: the log's leader holds events through sequence %d, but they could be read only through %d",
				ErrUnavailable, end, from-1)
		}
		l.log.Debug("a scan's replica is behind its leader; scanning again", "through", from-1, "want", end, "in", pause)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pause):
		}
		pause = min(2*pause, scanRetryMax)
	}
}

// How long Scan waits for a replica that is behind: a first pause that
// doubles to scanRetryMax, for up to scanCatchUp without one more event.
const (
	scanRetryFirst = 50 * time.Millisecond
	scanRetryMax   = time.Second
	scanCatchUp    = ElectionWindow
)

// errScanBehind is what one consumer's scan returns when its replica had
// nothing more to deliver before the scan's end, or did not answer at all
// (no responders).
var errScanBehind = errors.New("the scan's replica has no more events")

// A scanner is one Scan: its end, its batches and their reader.
type scanner struct {
	log   *Log
	end   uint64
	size  int
	fn    func([]Event) error
	batch []Event
}

// scan reads from sequence from through s.end with a consumer of its own.
// It returns nil once it has handed over the event at s.end; otherwise the
// next sequence to read and errScanBehind when the consumer has nothing
// more to deliver before it, or another error.
func (s *scanner) scan(ctx context.Context, from uint64) (uint64, error) {
	l := s.log
	ps, err := l.startScan(ctx, from)
	if err != nil {
		return from, err
	}
	defer ps.stop()
	// A wait for the server ends when ctx does: closing the subscription
	// wakes NextMsg, which a per-message context would cost a timer each.
	defer context.AfterFunc(ctx, func() { _ = ps.sub.Unsubscribe() })()

	// Requests ask for no more than the messages through end, which a log
	// without gaps holds; the server answers a request short with 404 when
	// the consumer has no more, and refuses one with 408 when those in
	// flight already cover every message it has.
	toAsk, inFlight, lastAsked, asking := s.end-from+1, uint64(0), uint64(0), true
	var consumerSeq uint64
	for {
		if asking && toAsk > 0 && inFlight <= uint64(s.size/2) {
			lastAsked = min(uint64(s.size), toAsk)
			if err := ps.request(lastAsked); err != nil {
				return from, err
			}
			inFlight += lastAsked
			toAsk -= lastAsked
		}
		msg, err := ps.sub.NextMsg(scanStall)
		if err != nil && ctx.Err() != nil {
			return from, ctx.Err()
		}
		if errors.Is(err, nats.ErrNoResponders) {
			// The consumer is not reachable from this server yet: its
			// interest is still on its way along the routes (seen just
			// after a node's restart).
			return from, errScanBehind
		}
		if err != nil {
			return from, fmt.Errorf("%w: scanning events after sequence %d: %v", ErrUnavailable, from-1, err)
		}
		if msg.Reply == "" {
			// The server's answer to a request, not a stored message
			// (which comes with its metadata as the reply subject, and
			// may carry any header its publisher gave it).
			status := msg.Header.Get("Status")
			switch status {
			case noMessagesStatus:
				// Short of the end the leader knows.
				return from, errScanBehind
			case requestsPendingStatus:
				inFlight -= lastAsked
				asking = false
				continue
			}
			return from, fmt.Errorf("%w: scanning events after sequence %d: %s %s", ErrUnavailable, from-1,
				status, msg.Header.Get("Description"))
		}
		inFlight--
		meta, err := msg.Metadata()
		if err != nil {
			return from, fmt.Errorf("%w: scanning events: %v", ErrInvalidEvent, err)
		}
		if meta.Sequence.Consumer != consumerSeq+1 {
			return from, fmt.Errorf("%w: scanning events: message %d of the scan came after %d (lost on the way)",
				ErrUnavailable, meta.Sequence.Consumer, consumerSeq)
		}
		consumerSeq = meta.Sequence.Consumer
		seq := meta.Sequence.Stream
		if seq > s.end {
			return from, s.handOver(ctx)
		}
		from = seq + 1
		ev, err := l.readMessage(ctx, seq, msg.Subject, msg.Header, msg.Data, meta.Timestamp)
		if errors.Is(err, ErrUnavailable) {
			return from, err
		}
		if err == nil {
			ev.Seq = seq
			s.batch = append(s.batch, ev)
		}
		if seq == s.end {
			return from, s.handOver(ctx)
		}
		if len(s.batch) == s.size {
			if err := s.handOver(ctx); err != nil {
				return from, err
			}
		}
	}
}

// handOver gives a non-empty batch to fn, unless ctx has ended, and empties
// it.
func (s *scanner) handOver(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(s.batch) == 0 {
		return nil
	}
	err := s.fn(s.batch)
	s.batch = s.batch[:0]
	return err
}

// scanStall is how long Scan waits for an answer to its pull requests,
// which a server answers at once (they do not wait for new events).
const scanStall = 30 * time.Second

// The statuses of the server's answers to a pull request that asked not
// to wait: the consumer has nothing more to deliver; the requests already
// waiting cover every message it has.
const (
	noMessagesStatus      = "404"
	requestsPendingStatus = "408"
)

// A pullScan is the consumer and subscription of one Scan.
type pullScan struct {
	log  *Log
	cons string
	sub  *nats.Subscription
	next string // the consumer's pull subject
}

// startScan creates a consumer that delivers the stream from sequence from
// to nobody until asked, and the subscription its messages come to.
func (l *Log) startScan(ctx context.Context, from uint64) (*pullScan, error) {
	cfg := jetstream.ConsumerConfig{
		AckPolicy:         jetstream.AckNonePolicy,
		MemoryStorage:     true,
		Replicas:          1,
		InactiveThreshold: feedInactiveThreshold,
	}
	if from > 1 {
		cfg.DeliverPolicy = jetstream.DeliverByStartSequencePolicy
		cfg.OptStartSeq = from
	}
	cctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	cons, err := l.events.CreateConsumer(cctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("%w: scanning events: %v", ErrUnavailable, err)
	}
	s := &pullScan{log: l, cons: cons.CachedInfo().Name}
	s.next = "$JS.API.CONSUMER.MSG.NEXT." + EventsStream + "." + s.cons
	s.sub, err = l.nc.SubscribeSync(l.nc.NewInbox())
	if err != nil {
		s.deleteConsumer()
		return nil, fmt.Errorf("%w: scanning events: %v", ErrUnavailable, err)
	}
	return s, nil
}

// request asks the consumer for n more messages, or an answer that it has
// no more, without waiting for new ones.
func (s *pullScan) request(n uint64) error {
	body := []byte(`{"batch":` + strconv.FormatUint(n, 10) + `,"no_wait":true}`)
	if err := s.log.nc.PublishRequest(s.next, s.sub.Subject, body); err != nil {
		return fmt.Errorf("%w: scanning events: %v", ErrUnavailable, err)
	}
	return nil
}

// stop ends the subscription and removes the consumer.
func (s *pullScan) stop() {
	_ = s.sub.Unsubscribe()
	s.deleteConsumer()
}

func (s *pullScan) deleteConsumer() {
	if s.log.nc.IsClosed() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := s.log.js.DeleteConsumer(ctx, EventsStream, s.cons)
	if err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
		s.log.log.Debug("scan consumer not deleted; the server drops it when idle", "consumer", s.cons, "err", err)
	}
}
