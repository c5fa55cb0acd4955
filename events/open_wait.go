package events

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// How an engine on an external server waits for it at start. Engines are
// services: an init system starts them with the cluster's servers, or
// several at once, and a cluster takes seconds to elect its JetStream
// leader, longer on a loaded machine, while its first engine's creates of
// six replicated streams and buckets hold up the next one's. So a try that
// fails on something waiting can fix is made again after a pause that
// grows to openWaitMax, for as long as the engine is not told to stop.
const (
	openWaitFirst = 250 * time.Millisecond
	openWaitMax   = 5 * time.Second
	// openTry bounds one try, whatever the caller's deadline: a request
	// sent before the cluster had a leader goes unanswered, and the try
	// after the election gets an answer.
	openTry = defaultTimeout
)

// openWaiting is Open on an external server: open, tried again while it
// fails with what waiting can fix (waitable), each wait logged with what it
// waits for. Told to stop while waiting, it returns the last try's error.
func openWaiting(ctx context.Context, cfg Config) (*Log, error) {
	log := cfg.Logger.With("component", "events")
	b := backoff.NewExponentialBackOff(
		backoff.WithInitialInterval(openWaitFirst),
		backoff.WithMaxInterval(openWaitMax),
		backoff.WithMaxElapsedTime(0))
	var last error
	l, err := backoff.RetryNotifyWithData(func() (*Log, error) {
		try, cancel := context.WithTimeout(ctx, openTry)
		defer cancel()
		l, err := open(try, cfg)
		if err != nil && !waitable(err) {
			return nil, backoff.Permanent(err)
		}
		if err != nil {
			last = err
		}
		return l, err
	}, backoff.WithContext(b, ctx), func(err error, next time.Duration) {
		log.Warn("waiting for the NATS servers", "url", cfg.URL, "waiting_for", err.Error(), "retry_in", next.Round(time.Millisecond))
	})
	if err != nil && ctx.Err() != nil && last != nil {
		return nil, fmt.Errorf("stopped while waiting for the NATS servers at %s: %w", cfg.URL, last)
	}
	if err == nil && last != nil {
		log.Info("the NATS servers answer and the log is provisioned", "url", cfg.URL)
	}
	return l, err
}

// waitable reports whether an error of open is one that waiting can fix:
// a server that does not answer or answers late, and JetStream's refusals
// while a cluster forms or another engine provisions (transientCodes).
// Credentials refused, more replicas than servers, a missing log the views
// need, and everything else (a seed or key file that cannot be used, a
// stream whose configuration cannot be corrected in place, any other
// refusal of JetStream) are not.
func waitable(err error) bool {
	if errors.Is(err, ErrUnauthorized) || errors.Is(err, ErrTooFewServers) || errors.Is(err, ErrLogMissing) ||
		errors.Is(err, ErrInvalidLogKey) {
		return false
	}
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		return transientCodes[apiErr.ErrorCode]
	}
	return errors.Is(err, ErrUnavailable) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, nats.ErrTimeout) || errors.Is(err, nats.ErrNoResponders) ||
		errors.Is(err, nats.ErrDisconnected) || errors.Is(err, nats.ErrConnectionClosed)
}

// transientCodes are JetStream's error codes for a cluster that is not
// ready yet: no meta leader (10008, "JetStream system temporarily
// unavailable"), too few servers known for the replicas (10005, no
// suitable peers; 10023, insufficient resources), a stream or consumer
// whose replicas are down (10118, 10119), and a create that lost a race
// with another engine's create of the same stream under another
// configuration (10058): the next try finds the stream and corrects it.
var transientCodes = map[jetstream.ErrorCode]bool{
	10005: true, 10008: true, 10023: true, 10058: true, 10118: true, 10119: true,
}

// awaitJetStream waits, on an external server, until the cluster's
// JetStream has a leader to answer requests: before it has one, a request
// for a stream goes unanswered for its whole timeout, while one for the
// account's info is refused at once (10008) or, sent to a server that is
// not the leader, dropped, so it is asked again every attemptTimeout. A
// server whose JetStream has not subscribed its API yet has no responders
// (ErrJetStreamNotEnabled), which is waited for too.
func (l *Log) awaitJetStream(ctx context.Context) error {
	if l.srv != nil {
		return nil
	}
	for said := false; ; said = true {
		try, cancel := context.WithTimeout(ctx, attemptTimeout)
		_, err := l.js.AccountInfo(try)
		cancel()
		if err == nil {
			return nil
		}
		if !waitable(err) && !errors.Is(err, jetstream.ErrJetStreamNotEnabled) {
			return fmt.Errorf("%w: JetStream: %w", ErrUnavailable, err)
		}
		if !said {
			l.log.Warn("waiting for the NATS cluster's JetStream to elect its leader", "url", l.cfg.URL, "waiting_for", err.Error())
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: JetStream does not answer: %v", ErrUnavailable, err)
		case <-time.After(electionRetryWait):
		}
	}
}

// lookupContext bounds a lookup of provisioning on an external server by
// attemptTimeout: a stream just created by another engine answers nothing
// until its replicas elect a leader, and Open's next try asks again sooner
// than the try's whole deadline would.
func (l *Log) lookupContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return l.boundOnExternal(ctx, attemptTimeout)
}

// createContext bounds a create or update of provisioning on an external
// server by createTimeout: one the cluster leaves unanswered (an update
// that meets another engine's create in flight, see ensureBucket) holds
// the try only that long, and Open's next try finds what it made.
func (l *Log) createContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return l.boundOnExternal(ctx, createTimeout)
}

// createTimeout is the bound of one create of provisioning: a replicated
// stream or bucket is made in well under a second on an idle cluster.
const createTimeout = 5 * time.Second

func (l *Log) boundOnExternal(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if l.srv != nil {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, d)
}
