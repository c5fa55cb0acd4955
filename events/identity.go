package events

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Created returns when the events stream was created. With the stream's
// name it identifies the log: a stream deleted and made again, or a store
// replaced by another one, has another creation time, while a store copied
// and restored keeps it. It fails with ErrLogMissing when the stream no
// longer exists (deleted under a running engine), and with ErrUnavailable
// when the server does not answer.
func (l *Log) Created(ctx context.Context) (time.Time, error) {
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	info, err := l.js.Stream(ctx, EventsStream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return time.Time{}, fmt.Errorf("%w: stream %s does not exist", ErrLogMissing, EventsStream)
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("%w: stream %s: %v", ErrUnavailable, EventsStream, err)
	}
	return info.CachedInfo().Created.UTC(), nil
}

// requireEvents fails with ErrLogMissing when the events stream does not
// exist, so that provisioning does not create, empty, a log that views were
// folded from (Config.RequireLog).
func (l *Log) requireEvents(ctx context.Context) error {
	_, err := l.js.Stream(ctx, EventsStream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return fmt.Errorf("%w: stream %s does not exist in %s", ErrLogMissing, EventsStream, l.where())
	}
	if err != nil {
		return fmt.Errorf("%w: stream %s: %v", ErrUnavailable, EventsStream, err)
	}
	return nil
}

// where names the store or server the log lives in, for messages.
func (l *Log) where() string {
	if l.srv != nil {
		return l.cfg.StoreDir
	}
	return l.cfg.URL
}
