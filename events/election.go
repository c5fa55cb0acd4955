package events

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// On a cluster a stream whose leader was lost answers nothing until its
// remaining replicas elect another (the server's Raft election timeout is
// 4 to 9 s): a publish in that window finds no responders. These bound how
// long the log waits for the election instead of failing.
const (
	// ElectionWindow is how long a JetStream request on a cluster waits
	// through a leader election when its context has no deadline.
	ElectionWindow = 20 * time.Second
	// electionRetryWait is the pause between publishes that found no
	// stream leader.
	electionRetryWait = 250 * time.Millisecond
	// attemptTimeout bounds one publish on a cluster: a replica that has
	// lost its leader drops the request rather than refusing it.
	attemptTimeout = 2 * time.Second
)

// electionTolerant is the JetStream context of a log on a cluster: a
// publish that finds no responders (the stream is electing a leader) is
// tried again for up to ElectionWindow, and a request without a deadline
// gets that long.
type electionTolerant struct {
	jetstream.JetStream
}

var _ jetstream.JetStream = electionTolerant{}

func electionRetries() []jetstream.PublishOpt {
	return []jetstream.PublishOpt{
		jetstream.WithRetryWait(electionRetryWait),
		jetstream.WithRetryAttempts(int(attemptTimeout / electionRetryWait)),
	}
}

// PublishMsg publishes m, trying again while the stream has no leader: a
// request that found no responders, or that a replica without a leader
// left unanswered for attemptTimeout, until ctx ends (ElectionWindow when
// ctx has no deadline).
//
// IMPORTANT: every publish of the log carries a message ID, so that an
// attempt that was stored but not acknowledged is a duplicate when tried
// again, not a second message.
func (j electionTolerant) PublishMsg(ctx context.Context, m *nats.Msg, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, ElectionWindow)
		defer cancel()
	}
	opts = append(opts, electionRetries()...)
	for {
		attempt, cancel := context.WithTimeout(ctx, attemptTimeout)
		ack, err := j.JetStream.PublishMsg(attempt, m, opts...)
		cancel()
		if err == nil || ctx.Err() != nil || !electing(err) {
			return ack, err
		}
		if inProcess(err) {
			// The first try is still being proposed: ask again once it
			// may have been stored, to get its ack as a duplicate.
			select {
			case <-time.After(electionRetryWait):
			case <-ctx.Done():
				return ack, err
			}
		}
	}
}

// errCodeDuplicateInProcess is the server's answer to a publish whose
// message ID belongs to a message still being proposed to the stream's
// replicas (JSStreamDuplicateMessageConflict): the try before it, cut off
// by a leader's loss, may yet be stored.
const errCodeDuplicateInProcess jetstream.ErrorCode = 10158

func inProcess(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == errCodeDuplicateInProcess
}

// electing reports whether err is what a publish gets from a stream that
// has no leader, or while the connection moves to another server because
// its own died (a node loss is both), or what a retry gets while the try
// it repeats is still in process.
func electing(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) ||
		errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrNoStreamResponse) ||
		errors.Is(err, nats.ErrDisconnected) || inProcess(err)
}

// Publish publishes data on subject, retrying while the stream has no
// leader.
func (j electionTolerant) Publish(ctx context.Context, subject string, data []byte, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error) {
	return j.PublishMsg(ctx, &nats.Msg{Subject: subject, Data: data}, opts...)
}

// PublishMsgAsync publishes m without waiting, retrying while the stream
// has no leader.
func (j electionTolerant) PublishMsgAsync(m *nats.Msg, opts ...jetstream.PublishOpt) (jetstream.PubAckFuture, error) {
	return j.JetStream.PublishMsgAsync(m, append(opts, electionRetries()...)...)
}

// PublishAsync publishes data on subject without waiting, retrying while
// the stream has no leader.
func (j electionTolerant) PublishAsync(subject string, data []byte, opts ...jetstream.PublishOpt) (jetstream.PubAckFuture, error) {
	return j.PublishMsgAsync(&nats.Msg{Subject: subject, Data: data}, opts...)
}

// tolerateElections makes a log on a cluster wait through leader
// elections (see electionTolerant). A single server has none to wait for.
func (l *Log) tolerateElections() error {
	if l.nc.ConnectedClusterName() == "" {
		return nil
	}
	js, err := jetstream.New(l.nc, jetstream.WithDefaultTimeout(ElectionWindow))
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	l.js = electionTolerant{js}
	return nil
}

// Reachable reports whether the log's connection to its server is up. An
// embedded server is always reachable.
func (l *Log) Reachable() bool { return l.srv != nil || l.nc.IsConnected() }

// Abandon closes the connection to an external server that does not
// answer, so that nothing stopping waits for it: every call in flight and
// to come fails at once with a closed connection. An engine calls it when
// it is told to stop while no server answers.
func (l *Log) Abandon() {
	if l.srv == nil && l.nc != nil {
		l.nc.Close()
	}
}
