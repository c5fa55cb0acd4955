package executor

import (
	"context"
	"sync"

	"github.com/orbitrun/orbit/events"
)

// Run requests are handled at once, each as far as it can go alone — its
// decoding, the log's look for an earlier record of it, the wait for its
// run.requested to be stored, its acknowledgement — and one after another,
// in the order they were delivered, where the order is the queue's: each
// run.requested is sent once the one before it is (a Log stores appends
// in the order they were sent), and each run is admitted once the one
// before it is. So the log's order of run.requested stays the order of
// admission (the FIFO of max_active_runs, the same after a restart, which
// queues by the log), while 200 requests at once no longer wait for each
// other's four round trips to the server (W3, issue 29).

// turn is one delivered run request's place in that order.
type turn struct {
	prev     *turn
	sent     chan struct{} // closed once its run.requested is sent, or it sends none
	admitted chan struct{} // closed once its run is admitted, or it admits none
	once     [2]sync.Once
}

// takeRequest is the run request consumer's handler: it gives cmd the
// next turn and handles it on a goroutine of its own.
func (o *Orchestrator) takeRequest(ctx context.Context, cmd *events.Command) {
	t := &turn{prev: o.lastRequest, sent: make(chan struct{}), admitted: make(chan struct{})}
	o.lastRequest = t
	o.requests.Add(1)
	go func() {
		defer o.requests.Done()
		o.handleRequest(ctx, cmd, t)
	}()
}

// send calls append, which sends the request's run.requested, once the
// request before it has sent its own.
func (t *turn) send(ctx context.Context, append func() (*events.PendingAppend, error)) (*events.PendingAppend, error) {
	defer t.once[0].Do(func() { close(t.sent) })
	if err := t.await(ctx, func(p *turn) chan struct{} { return p.sent }); err != nil {
		return nil, err
	}
	return append()
}

// admit calls admit once the request before it has been admitted, unless
// ctx ends first: nothing starts a run once the orchestrator stops.
func (t *turn) admit(ctx context.Context, admit func()) error {
	defer t.once[1].Do(func() { close(t.admitted) })
	if err := t.await(ctx, func(p *turn) chan struct{} { return p.admitted }); err != nil {
		return err
	}
	admit()
	return nil
}

func (t *turn) await(ctx context.Context, done func(*turn) chan struct{}) error {
	if t.prev == nil {
		return ctx.Err()
	}
	select {
	case <-done(t.prev):
		return ctx.Err()
	case <-ctx.Done():
		return ctx.Err()
	}
}

// pass gives the requests after this one their turn, whatever this one
// sent or admitted, and lets the one before it go (the requests would
// otherwise stay chained from the last one).
func (t *turn) pass() {
	t.once[0].Do(func() { close(t.sent) })
	t.once[1].Do(func() { close(t.admitted) })
	t.prev = nil
}
