package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Headers of JetStream's atomic batch publish (nats-server 2.12+): every
// message of a batch carries the batch's id and its 1-based place in it; the
// last also carries the commit, and only it is answered, once the whole
// batch is stored (and, with SyncAlways, fsynced once).
const (
	batchIDHeader     = "Nats-Batch-Id"
	batchSeqHeader    = "Nats-Batch-Sequence"
	batchCommitHeader = "Nats-Batch-Commit"
)

// Limits of one batch. maxBatchMsgs is the server's default
// max_batch_size; a server configured lower refuses the batch as too large
// and it is split. maxBatchBytes bounds what one batch holds in memory on
// both sides.
//
// minBatchMsgs is where a batch starts to pay: the server stages each
// atomic batch in a file store of its own, made and removed for it, which
// costs about as much as ten single fsyncs (measured: ~11 ms a batch
// against ~1.2 ms a single strict publish). Fewer requests than that are
// published one by one, pipelined.
const (
	minBatchMsgs  = 10
	maxBatchMsgs  = 1000
	maxBatchBytes = 4 << 20
)

// JetStream error codes the appender acts on.
const (
	errCodeBatchDisabled = 10174 // JSAtomicPublishDisabledErr
	errCodeBatchTooLarge = 10199 // JSAtomicPublishTooLargeBatchErrF
)

// headerRoom is the headers' share of a message, roughly, in the bytes a
// batch holds; and the room an event keeps under the server's max_payload
// for the headers its publish adds (the message id, a batch's headers).
const headerRoom = 256

// commitReq is one append waiting for the group commit.
type commitReq struct {
	msg    *nats.Msg // signed, with its Nats-Msg-Id
	ev     *Event    // the event msg encodes, for refresh; nil for a command or a time the caller chose
	stored *Event    // the event as msg stores it (see Appended.Stored), if known
	typ    string
	first  bool // AppendFirst: sent on its own, ErrConflict when the subject holds an event
	size   int

	done chan struct{} // closed once res and err are set
	res  Appended
	err  error
}

func (r *commitReq) finish(res Appended, err error) {
	if err == nil {
		res = kept(res, r.stored)
	}
	r.res, r.err = res, err
	close(r.done)
}

// wait blocks until the request is stored or has failed, or ctx ends.
func (r *commitReq) wait(ctx context.Context) (Appended, error) {
	select {
	case <-r.done:
		return r.res, r.err
	case <-ctx.Done():
		return Appended{}, fmt.Errorf("waiting for %s to be stored: %w", r.typ, ctx.Err())
	}
}

// groupCommit gathers the appends made concurrently on one Log, to one
// stream, into atomic batches (DESIGN §10). One round is in flight at a
// time; the appends that arrive meanwhile form the next, sent as an atomic
// batch from minBatchMsgs on and one by one below, so a lone append is
// published at once on its own and a busy engine writes up to maxBatchMsgs
// events per fsync.
//
// IMPORTANT: a caller gets its result only after the commit of its batch
// was answered, which with SyncAlways is after the batch was fsynced. The
// queue is first in, first out and batches are sent one after the other
// on one connection, so appends are stored in the order they were
// submitted.
type groupCommit struct {
	l      *Log
	stream string // the stream the appends go to, for the log

	mu      sync.Mutex
	queue   []*commitReq
	stopped bool

	wake   chan struct{} // capacity 1: the queue has something
	quit   chan struct{} // closed by stop
	exited chan struct{} // closed when run has returned

	// noAtomic is set once the stream refused atomic publish (a stream an
	// older engine provisioned): from then on, appends go one by one.
	noAtomic atomic.Bool

	batches, appended atomic.Uint64 // batches committed, and their events

	// The last round, which gather uses: how many requests it held and
	// how long committing them took. Only run touches them.
	lastSize int
	lastTook time.Duration
	// gatherCap bounds gather's wait (maxGatherWait; tests raise it).
	gatherCap time.Duration
}

// newGroupCommit makes the group commit of the appends to stream; it
// commits nothing until its run goroutine is started, and its stop waits
// for that goroutine.
func newGroupCommit(l *Log, stream string) *groupCommit {
	return &groupCommit{
		l:         l,
		stream:    stream,
		wake:      make(chan struct{}, 1),
		quit:      make(chan struct{}),
		exited:    make(chan struct{}),
		gatherCap: maxGatherWait,
	}
}

// committer returns the Log's group commit of events, started on first
// use (with that of commands).
func (l *Log) committer() *groupCommit {
	l.startCommits()
	return l.commits
}

// cmdCommitter returns the Log's group commit of the commands of stream
// (CommandsStream or StepsStream).
func (l *Log) cmdCommitter(stream string) *groupCommit {
	l.startCommits()
	if stream == StepsStream {
		return l.stepCommits
	}
	return l.cmdCommits
}

func (l *Log) startCommits() {
	l.commitOnce.Do(func() {
		l.commits = newGroupCommit(l, EventsStream)
		l.cmdCommits = newGroupCommit(l, CommandsStream)
		l.stepCommits = newGroupCommit(l, StepsStream)
		go l.commits.run()
		go l.cmdCommits.run()
		go l.stepCommits.run()
	})
}

// stopCommits stops the group commits, if they were started, after they
// have committed what was queued. Called by Close before the connection
// closes.
func (l *Log) stopCommits() {
	l.commitOnce.Do(func() {}) // none starts after this
	if l.commits != nil {
		l.commits.stop()
		l.cmdCommits.stop()
		l.stepCommits.stop()
	}
}

// GroupCommits returns how many atomic batches this Log has committed and
// how many events they held (appends published on their own count in
// neither).
func (l *Log) GroupCommits() (batches, events uint64) {
	// Started as the first append would start them: a count asked for
	// before it (a /metrics scrape of an idle engine) must not keep them
	// from starting, which left the appends without a committer.
	l.startCommits()
	if l.commits == nil { // closed before anything was appended
		return 0, 0
	}
	return l.commits.batches.Load(), l.commits.appended.Load()
}

// submit queues r; it fails at once when the group commit has stopped.
func (g *groupCommit) submit(r *commitReq) error {
	g.mu.Lock()
	if g.stopped {
		g.mu.Unlock()
		return fmt.Errorf("%w: publishing %s: the log is closed", ErrUnavailable, r.typ)
	}
	g.queue = append(g.queue, r)
	g.mu.Unlock()
	select {
	case g.wake <- struct{}{}:
	default:
	}
	return nil
}

func (g *groupCommit) stop() {
	g.mu.Lock()
	if !g.stopped {
		g.stopped = true
		close(g.quit)
	}
	g.mu.Unlock()
	<-g.exited
}

func (g *groupCommit) run() {
	defer close(g.exited)
	for {
		select {
		case <-g.wake:
		case <-g.quit:
			// Commit what was queued before the stop: no submit comes after.
			g.drain()
			return
		}
		g.drain()
	}
}

// drain commits batches until the queue is empty.
func (g *groupCommit) drain() {
	for {
		g.gather()
		batch := g.take()
		if len(batch) == 0 {
			return
		}
		start := time.Now()
		g.commit(batch)
		g.lastSize, g.lastTook = len(batch), time.Since(start)
	}
}

// gatherShare is the most of a round's time gather waits for the next
// round to fill: a quarter, so that appends that do not come back cost at
// most a quarter more latency. maxGatherWait bounds it whatever the round
// took: one that waited through a leader election or a timeout says
// nothing of how soon its appenders come back. Appenders that do come back
// take microseconds; a healthy round, milliseconds.
const (
	gatherShare   = 4
	maxGatherWait = 5 * time.Millisecond
)

// gather waits, after a round that was an atomic batch, until as many
// requests are queued as that round held, or a quarter of the time it took
// has passed (at most maxGatherWait). The appenders of a busy engine each
// wait for their batch before they append again: without the wait, the
// first of them to come back would leave with a round of their own, and
// the rest of them with the next, two rounds (two fsyncs, and the server's
// fixed cost of a batch) where one would do. A lone append, or a trickle
// of them, never waits: their rounds are not batches.
func (g *groupCommit) gather() {
	if g.lastSize < minBatchMsgs || g.noAtomic.Load() || g.queued() >= g.lastSize {
		return
	}
	timer := time.NewTimer(min(g.lastTook/gatherShare, g.gatherCap))
	defer timer.Stop()
	for g.queued() < g.lastSize {
		select {
		case <-g.wake:
		case <-timer.C:
			return
		case <-g.quit:
			return
		}
	}
}

// queued returns how many requests wait in the queue.
func (g *groupCommit) queued() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.queue)
}

// take removes the next batch from the queue: the requests at its head, up
// to the limits, ending before an AppendFirst (which goes alone).
func (g *groupCommit) take() []*commitReq {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.queue) == 0 {
		return nil
	}
	n, size := 1, g.queue[0].size
	if !g.queue[0].first {
		for n < len(g.queue) && n < maxBatchMsgs && !g.queue[n].first && size+g.queue[n].size <= maxBatchBytes {
			size += g.queue[n].size
			n++
		}
	}
	batch := make([]*commitReq, n)
	copy(batch, g.queue)
	clear(g.queue[:n])
	g.queue = g.queue[n:]
	if len(g.queue) == 0 {
		g.queue = nil // let the backing array go
	}
	return batch
}

// commit stores batch and gives each request its result: as one atomic
// batch when it holds more than one, one by one when the server refused
// the batch for what one of its messages is (a duplicate id, an expected
// sequence, the store's limits), halves when it was too large.
func (g *groupCommit) commit(batch []*commitReq) {
	if batch = g.fresh(batch); len(batch) == 0 {
		return
	}
	if len(batch) < minBatchMsgs || g.noAtomic.Load() {
		g.oneByOne(batch)
		return
	}
	err := g.publishBatch(batch)
	if err == nil {
		return
	}
	var apiErr *jetstream.APIError
	switch {
	case errors.As(err, &apiErr) && apiErr.ErrorCode == errCodeBatchTooLarge:
		half := len(batch) / 2
		g.commit(batch[:half])
		g.commit(batch[half:])
	case errors.As(err, &apiErr):
		if apiErr.ErrorCode == errCodeBatchDisabled {
			g.noAtomic.Store(true)
			g.l.log.Warn("the stream refuses atomic batches; publishing one by one", "stream", g.stream)
		}
		// Nothing of the batch was stored: each message on its own says
		// which one was a duplicate (stored once, and its caller told so)
		// or failed, and the others are stored.
		g.oneByOne(batch)
	case errors.Is(err, ErrNotPermitted):
		// The server refused the commit's publish, so the batch was not
		// stored: on its own each message is stored or refused.
		g.oneByOne(batch)
	case electing(err):
		// The connection's server died or the stream is electing a leader:
		// whether the commit was stored is unknown, and the messages' ids
		// make each a duplicate if it was.
		g.oneByOne(batch)
	default:
		for _, r := range batch {
			r.finish(Appended{}, publishError(r.typ, err))
		}
	}
}

// batchAck is the server's answer to a batch's commit.
type batchAck struct {
	Error *jetstream.APIError `json:"error,omitempty"`
	Seq   uint64              `json:"seq"`
	Count int                 `json:"count"`
}

// publishBatch publishes batch as one atomic batch and, when the commit is
// answered, finishes every request with its sequence. On error nothing is
// finished; an API error means nothing of the batch was stored.
func (g *groupCommit) publishBatch(batch []*commitReq) error {
	id := NewID()
	last := len(batch) - 1
	for i, r := range batch {
		r.msg.Header.Set(batchIDHeader, id)
		r.msg.Header.Set(batchSeqHeader, strconv.Itoa(i+1))
		if i < last {
			// Unanswered: a message the server fails to stage makes the
			// commit fail as incomplete.
			if err := g.l.nc.PublishMsg(r.msg); err != nil {
				return err
			}
		}
	}
	batch[last].msg.Header.Set(batchCommitHeader, "1")
	ctx, cancel := context.WithTimeout(context.Background(), defaultTimeout)
	defer cancel()
	ctx, stop := g.l.refusals.watch(ctx, batch[last].msg.Subject)
	defer stop()
	resp, err := g.l.nc.RequestMsgWithContext(ctx, batch[last].msg)
	if err != nil {
		if refusedBy(ctx) {
			return ErrNotPermitted
		}
		return err
	}
	var ack batchAck
	if err := json.Unmarshal(resp.Data, &ack); err != nil {
		return fmt.Errorf("decoding the answer to a batch commit: %w", err)
	}
	if ack.Error != nil {
		return ack.Error
	}
	if ack.Count != len(batch) || ack.Seq < uint64(len(batch)) {
		return fmt.Errorf("a batch of %d was committed as %d ending at %d", len(batch), ack.Count, ack.Seq)
	}
	g.batches.Add(1)
	g.appended.Add(uint64(len(batch)))
	base := ack.Seq - uint64(len(batch))
	for i, r := range batch {
		r.finish(Appended{Seq: base + uint64(i) + 1}, nil)
	}
	return nil
}

// oneByOne publishes each request on its own, all of them before waiting
// for their acks (the server stores them in that order, each with its own
// fsync in strict mode).
func (g *groupCommit) oneByOne(batch []*commitReq) {
	batch = g.fresh(batch) // a failed batch took time
	// A publish the server refuses (the connection's key may not append
	// there) is never answered: its request fails when the refusal comes,
	// not after the timeout. The listener is there before the publishes.
	subjects := make([]string, len(batch))
	for i, r := range batch {
		subjects[i] = r.msg.Subject
	}
	refused, stop := g.l.refusals.listen(subjects...)
	defer stop()
	futs := make([]jetstream.PubAckFuture, len(batch))
	for i, r := range batch {
		r.msg.Header.Del(batchIDHeader)
		r.msg.Header.Del(batchSeqHeader)
		r.msg.Header.Del(batchCommitHeader)
		fut, err := g.l.js.PublishMsgAsync(r.msg)
		if err != nil {
			g.retry(r, err)
			continue
		}
		futs[i] = fut
	}
	ctx, cancel := context.WithTimeout(context.Background(), defaultTimeout)
	defer cancel()
	for i, r := range batch {
		for futs[i] != nil {
			select {
			case ack := <-futs[i].Ok():
				r.finish(Appended{Seq: ack.Sequence, Duplicate: ack.Duplicate}, nil)
			case err := <-futs[i].Err():
				g.retry(r, err)
			case subject := <-refused:
				for j := i; j < len(batch); j++ {
					if futs[j] != nil && batch[j].msg.Subject == subject {
						batch[j].finish(Appended{}, fmt.Errorf("%w append %s: the NATS server refused its publish on %s", ErrNotPermitted, batch[j].typ, subject))
						futs[j] = nil
					}
				}
				continue
			case <-ctx.Done():
				g.retry(r, ctx.Err())
			}
			futs[i] = nil
		}
	}
}

// retry publishes r again on its own, and waits for its ack, when err is
// what a publish gets while the connection moves to another server or the
// stream elects a leader (on a cluster the log's JetStream context waits
// through both, up to ElectionWindow); any other error is r's result. The
// message id makes the retry a duplicate if the first try was stored.
func (g *groupCommit) retry(r *commitReq, err error) {
	if !electing(err) {
		r.finish(Appended{}, appendError(r, err))
		return
	}
	if !g.refresh(r, time.Now()) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), ElectionWindow)
	defer cancel()
	ack, err := g.l.js.PublishMsg(ctx, r.msg)
	if err != nil {
		r.finish(Appended{}, appendError(r, err))
		return
	}
	r.finish(Appended{Seq: ack.Sequence, Duplicate: ack.Duplicate}, nil)
}

// appendError classifies a failed single publish of r.
func appendError(r *commitReq, err error) error {
	var apiErr *jetstream.APIError
	if r.first && errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence {
		return fmt.Errorf("%w: %s already exists", ErrConflict, r.msg.Subject)
	}
	return publishError(r.typ, err)
}

// appendGrouped submits an encoded event to the group commit; stamped says
// its time was set by the Log (see commitRequest).
func (l *Log) appendGrouped(msg *nats.Msg, ev *Event, first, stamped, asGiven bool) (*commitReq, error) {
	r := l.commitRequest(msg, ev, first, stamped, asGiven)
	if err := l.committer().submit(r); err != nil {
		return nil, err
	}
	return r, nil
}

// commitRequest makes msg, the encoded ev, a request for the group commit.
// An event whose time the Log stamped (stamped) the committer may make
// again with a later time (refresh); a time the caller chose is kept.
// asGiven says that msg stores ev as it is (see encodeEvent).
func (l *Log) commitRequest(msg *nats.Msg, ev *Event, first, stamped, asGiven bool) *commitReq {
	if first {
		msg.Header.Set(jetstream.ExpectedLastSubjSeqHeader, "0")
	}
	r := &commitReq{msg: msg, typ: ev.Type, first: first, size: len(msg.Data) + headerRoom, done: make(chan struct{})}
	own := *ev
	if stamped {
		r.ev = &own
	}
	if asGiven {
		r.stored = &own
	}
	return r
}

// refresh makes r's event again with the time of now when it was made more
// than refreshAfter ago, and reports whether r may be sent: an event must
// be stored within maxLag of its time (see checkTime), and one that waited
// in the queue, or through a round that was retried, would not be. An
// event that can no longer be encoded (grown past the server's limit by
// its new time) is finished with the error. Only the committer calls it.
func (g *groupCommit) refresh(r *commitReq, now time.Time) bool {
	if r.ev == nil || now.Sub(r.ev.Time) <= refreshAfter {
		return true
	}
	r.ev.Time = now.UTC()
	msg, asGiven, err := g.l.encodeEvent(r.ev)
	if err != nil {
		r.finish(Appended{}, err)
		return false
	}
	if !asGiven {
		r.stored = nil
	}
	if r.first {
		msg.Header.Set(jetstream.ExpectedLastSubjSeqHeader, "0")
	}
	g.l.log.Debug("an event waited to be sent; made again with the time of now", "type", r.typ, "id", r.ev.ID)
	r.msg, r.size = msg, len(msg.Data)+headerRoom
	return true
}

// fresh refreshes each request of batch and returns those that may be
// sent, in order.
func (g *groupCommit) fresh(batch []*commitReq) []*commitReq {
	now := time.Now()
	kept := batch[:0]
	for _, r := range batch {
		if g.refresh(r, now) {
			kept = append(kept, r)
		}
	}
	return kept
}
