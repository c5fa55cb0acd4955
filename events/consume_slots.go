package events

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// How engines share a command queue (DESIGN §9).
//
// nats-server serves a consumer's waiting pull requests in the order they
// arrived, one message to each in turn. A process that keeps a request for
// a whole batch waiting takes a burst for itself while the others' requests
// are on their way, and a MaxAckPending that each process writes into the
// one consumer they share caps what all of them run together, not what
// each runs. consumeSlots keeps instead at most one waiting request per
// process and consumer, for one message, asked for only once a slot is
// reserved for what it brings:
//
//   - two idle processes alternate: the one served asks again, and its
//     request queues behind the other's;
//   - a process with no free slot asks for nothing, so nothing is
//     delivered to it that it would hold unhandled, past its ack wait;
//   - each process's bound is its own Concurrency; the consumer's
//     MaxAckPending is only a bound over all of them, the same from each.
const (
	// pullExpiry bounds one waiting request; an idle process asks again
	// when it expires.
	pullExpiry = 30 * time.Second
	// pullHeartbeat is how often the server shows that it still holds a
	// waiting request: two missed, and the request is taken as lost (its
	// server gone, the consumer's leader lost or moved, a request sent
	// during the consumer's election dropped) and asked again. At a sixth
	// of the expiry (5 s) a node's loss left engines without a waiting
	// request for 10 s (one run in three of
	// TestSharedConsumerOnAClusterSurvivesANodesLoss); the cost is one
	// small message a second per idle request, as for a feed.
	pullHeartbeat = time.Second
	// pullRetryFirst and pullRetryMax bound the pause after a failed
	// request, which doubles with each failure in a row.
	pullRetryFirst = 50 * time.Millisecond
	pullRetryMax   = 2 * time.Second
	// restoreTimeout bounds each request that looks for a missing
	// consumer or makes it again.
	restoreTimeout = 5 * time.Second
)

// slotConsumer delivers a durable consumer's commands to handlers running
// concurrently, at most Concurrency at a time.
type slotConsumer struct {
	l      *Log
	spec   ConsumerSpec
	cons   jetstream.Consumer
	handle func(*Command)
	// slots holds a token for each handler running or command asked for.
	slots chan struct{}
	ctx   context.Context
	// cancel ends the pulling; Stop calls it first.
	cancel context.CancelFunc
	// stopPull waits for the pulling to end.
	stopPull func()
	// expiry is how long one request waits (pullExpiry).
	expiry time.Duration

	mu       sync.Mutex
	stopped  bool
	handlers sync.WaitGroup
}

var _ Stopper = (*slotConsumer)(nil)

// consumeSlots delivers cons's commands to handle within spec.Concurrency
// slots. A sole consumer (spec.Reset) pulls in batches of its concurrency,
// which the consumer's MaxAckPending then bounds too: no other process
// waits for a turn. A shared one keeps one request of one message waiting.
func (l *Log) consumeSlots(ctx context.Context, cons jetstream.Consumer, spec ConsumerSpec, handle func(*Command)) (Stopper, error) {
	s := newSlotConsumer(ctx, l, cons, spec, handle)
	if !spec.Reset {
		s.startPull()
		return s, nil
	}
	cc, err := cons.Consume(func(msg jetstream.Msg) {
		if !s.acquire() {
			_ = msg.Nak() // stopping: the command goes back at once
			return
		}
		s.dispatch(msg)
	}, jetstream.PullMaxMessages(spec.Concurrency), jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
		if !errors.Is(err, jetstream.ErrNoHeartbeat) {
			l.log.Debug("consumer error", "consumer", spec.Durable, "err", err)
		}
	}))
	if err != nil {
		s.cancel()
		return nil, fmt.Errorf("%w: consuming %s: %v", ErrUnavailable, spec.Durable, err)
	}
	s.stopPull = func() {
		cc.Stop()
		<-cc.Closed()
	}
	return s, nil
}

func newSlotConsumer(ctx context.Context, l *Log, cons jetstream.Consumer, spec ConsumerSpec, handle func(*Command)) *slotConsumer {
	s := &slotConsumer{l: l, spec: spec, cons: cons, handle: handle, slots: make(chan struct{}, spec.Concurrency), expiry: pullExpiry}
	s.ctx, s.cancel = context.WithCancel(ctx)
	return s
}

// startPull starts the pull loop of a shared consumer.
func (s *slotConsumer) startPull() {
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.pull()
	}()
	s.stopPull = func() { <-done }
}

// Stop ends the pulling, then waits for the running handlers to return.
// A command that arrives while it stops is given back for redelivery at
// once.
func (s *slotConsumer) Stop() {
	s.cancel()
	s.stopPull()
	s.mu.Lock()
	s.stopped = true
	s.mu.Unlock()
	s.handlers.Wait()
}

// pull keeps one request for one command waiting while a slot is free,
// until Stop. It survives what a cluster does to a waiting request: an
// expiry (asked again), a leader election or a lost server (no heartbeat:
// asked again after a pause), the consumer deleted (made again).
func (s *slotConsumer) pull() {
	failures := 0
	for s.acquire() {
		msg, err := s.next()
		if msg != nil {
			failures = 0
			s.dispatch(msg)
			continue
		}
		s.release()
		if err == nil {
			failures = 0
			continue
		}
		if s.ctx.Err() != nil {
			return
		}
		failures++
		s.l.log.Debug("pulling a command", "consumer", s.spec.Durable, "failures", failures, "err", err)
		if consumerMissing(err) {
			s.restore()
		}
		select {
		case <-s.ctx.Done():
			return
		case <-time.After(min(pullRetryFirst<<min(failures-1, 6), pullRetryMax)):
		}
	}
}

// next waits for one command for up to s.expiry. It returns neither a
// command nor an error when the request expired with nothing to deliver,
// or when the connection was made again to a server meanwhile: the
// request waited at the consumer's leader for an answer through the server
// that is gone, and the leader drops it once its route is (no interest),
// so it is asked again at once through the new one rather than after its
// missed heartbeats. The engine is then among those the consumer delivers
// to again within moments of a node's loss.
func (s *slotConsumer) next() (jetstream.Msg, error) {
	ctx, cancel := context.WithTimeout(s.ctx, s.expiry)
	defer cancel()
	moved := s.l.reconnected.next()
	go func() {
		select {
		case <-moved:
			cancel()
		case <-ctx.Done():
		}
	}()
	batch, err := s.cons.Fetch(1, jetstream.FetchContext(ctx), jetstream.FetchHeartbeat(min(pullHeartbeat, s.expiry/6)))
	if err != nil {
		return nil, err
	}
	var msg jetstream.Msg
	for m := range batch.Messages() {
		msg = m
	}
	if msg != nil {
		return msg, nil
	}
	err = batch.Error()
	if s.ctx.Err() == nil && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)) {
		return nil, nil
	}
	return nil, err
}

// consumerMissing reports whether a pull failed because the consumer is
// gone: deleted while the request waited, or not there to answer it (which
// is also how a consumer electing its leader looks).
func consumerMissing(err error) bool {
	return errors.Is(err, jetstream.ErrConsumerDeleted) || errors.Is(err, jetstream.ErrConsumerNotFound) ||
		errors.Is(err, nats.ErrNoResponders)
}

// restore makes the consumer again as spec describes it if the server
// says it is gone. One that does not answer is left alone: it is electing
// its leader, and the next pull finds it again or calls restore again.
// Each request is bounded by restoreTimeout, so that a request lost in an
// election holds the pulling only that long.
func (s *slotConsumer) restore() {
	ctx, cancel := context.WithTimeout(s.ctx, restoreTimeout)
	defer cancel()
	if _, err := s.cons.Info(ctx); !errors.Is(err, jetstream.ErrConsumerNotFound) {
		return
	}
	ctx, cancel = context.WithTimeout(s.ctx, restoreTimeout)
	defer cancel()
	if _, err := s.l.js.CreateOrUpdateConsumer(ctx, commandStream(s.spec.Command), s.spec.config()); err != nil && s.ctx.Err() == nil {
		s.l.log.Warn("consumer missing and not made again yet", "consumer", s.spec.Durable, "err", err)
	}
}

// acquire reserves a slot, waiting for one to be free; false once Stop
// began.
func (s *slotConsumer) acquire() bool {
	if s.ctx.Err() != nil {
		return false
	}
	select {
	case s.slots <- struct{}{}:
		return true
	case <-s.ctx.Done():
		return false
	}
}

func (s *slotConsumer) release() { <-s.slots }

// dispatch runs the handler of msg on a goroutine holding the slot
// reserved for it, which is released when the handler returns.
func (s *slotConsumer) dispatch(msg jetstream.Msg) {
	s.mu.Lock()
	if s.stopped || s.ctx.Err() != nil {
		s.mu.Unlock()
		_ = msg.Nak() // stopping: the command goes back at once
		s.release()
		return
	}
	s.handlers.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.handlers.Done()
		defer s.release()
		if cmd := s.l.command(s.ctx, msg); cmd != nil {
			s.handle(cmd)
		}
	}()
}
