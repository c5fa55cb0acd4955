package events

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sync"

	"github.com/nats-io/nats.go"
)

// publishRefusals hands the server's refusals of this connection's
// publishes (a permissions violation, which the server reports on the
// connection, not on the publish) to the requests waiting on those
// subjects: a request its identity may not make fails at once instead of
// waiting out its timeout for an answer that cannot come.
type publishRefusals struct {
	mu      sync.Mutex
	waiting map[string]map[chan string]struct{} // by subject, the listeners told its refusal
}

// refusedPublish is the subject of the server's "Permissions Violation for
// Publish to" error.
var refusedPublish = regexp.MustCompile(`Permissions Violation for Publish to "([^"]+)"`)

// refused is the connection's error handler's part: a publish refusal is
// handed to the requests on its subject.
func (p *publishRefusals) refused(err error) {
	if !errors.Is(err, nats.ErrPermissionViolation) {
		return
	}
	m := refusedPublish.FindStringSubmatch(err.Error())
	if m == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for ch := range p.waiting[m[1]] {
		select {
		case ch <- m[1]:
		default:
		}
	}
}

// listen tells the returned channel the subject of each of subjects whose
// publish the server refuses, until stop. Its buffer holds one refusal per
// subject, so refused never blocks on a listener.
func (p *publishRefusals) listen(subjects ...string) (<-chan string, func()) {
	ch := make(chan string, len(subjects))
	p.mu.Lock()
	if p.waiting == nil {
		p.waiting = map[string]map[chan string]struct{}{}
	}
	for _, s := range subjects {
		if p.waiting[s] == nil {
			p.waiting[s] = map[chan string]struct{}{}
		}
		p.waiting[s][ch] = struct{}{}
	}
	p.mu.Unlock()
	return ch, func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, s := range subjects {
			delete(p.waiting[s], ch)
			if len(p.waiting[s]) == 0 {
				delete(p.waiting, s)
			}
		}
	}
}

// watch returns ctx, cancelled with the cause ErrNotPermitted as soon as
// the server refuses this connection a publish to subject; stop ends the
// watch.
func (p *publishRefusals) watch(ctx context.Context, subject string) (context.Context, func()) {
	refused, unlisten := p.listen(subject)
	ctx, cancel := context.WithCancelCause(ctx)
	go func() {
		select {
		case <-refused:
			cancel(ErrNotPermitted)
		case <-ctx.Done():
		}
	}()
	return ctx, func() {
		unlisten()
		cancel(nil)
	}
}

// refusedBy reports whether ctx, from watch, ended for a refusal.
func refusedBy(ctx context.Context) bool {
	return errors.Is(context.Cause(ctx), ErrNotPermitted)
}

// request is nc.RequestWithContext, failing with ErrNotPermitted as soon as
// the server refuses the publish to subject.
func (p *publishRefusals) request(ctx context.Context, nc *nats.Conn, subject string, data []byte) (*nats.Msg, error) {
	ctx, stop := p.watch(ctx, subject)
	defer stop()
	msg, err := nc.RequestWithContext(ctx, subject, data)
	if err != nil && refusedBy(ctx) {
		return nil, ErrNotPermitted
	}
	return msg, err
}

// notPermitted is the error of a request for endpoint on subject that the
// server refused.
func notPermitted(endpoint, subject string) error {
	return fmt.Errorf("%w ask the engine for %s: the NATS server refused its request on %s (the API takes the client's key: a reader's only reads the log and its blobs, an agent's only calls its Groundhog verbs)",
		ErrNotPermitted, endpoint, subject)
}
