package testkit

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// RequestTimeout bounds one attempt of a request Retry makes. A request
// can go unanswered for good — sent through a node as it is killed, or to
// a stream whose leader is being elected, where a follower drops it — and
// one that waited for the test's whole context would fail the test on a
// loaded machine, where an election or a restarted node's catch-up takes
// seconds. It is asked again instead.
const RequestTimeout = 5 * time.Second

// Retry calls f with a context bounded by RequestTimeout, again while it
// fails for want of an answer (see unanswered), until ctx ends. It returns
// f's result, or the error of another kind, or the last one.
//
// IMPORTANT: f must be safe to repeat, since an attempt that timed out may
// have been carried out: a publish gives a message id (the stream drops
// its duplicate), a create asks for the same configuration (which
// JetStream accepts again).
func Retry[T any](ctx context.Context, f func(context.Context) (T, error)) (T, error) {
	for {
		try, cancel := context.WithTimeout(ctx, RequestTimeout)
		v, err := f(try)
		cancel()
		if err == nil || !unanswered(err) || ctx.Err() != nil {
			return v, err
		}
		select {
		case <-ctx.Done():
			return v, err
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// unanswered reports whether err says that a request got no answer, or
// that JetStream cannot answer yet: the attempt's timeout, no responders
// (the server's JetStream or the stream's leader is not there yet), the
// connection moving to another server, and JetStream's refusals while it
// has no meta leader (10008) or a stream's replicas are down (10118).
func unanswered(err error) bool {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		return apiErr.ErrorCode == 10008 || apiErr.ErrorCode == 10118
	}
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) ||
		errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrNoStreamResponse) ||
		errors.Is(err, nats.ErrDisconnected) || errors.Is(err, nats.ErrConnectionReconnecting)
}
