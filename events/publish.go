package events

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/orbitrun/orbit/internal/failpoint"
)

// Appended is what the log answered to an append.
type Appended struct {
	Seq       uint64 // the stream sequence the event is stored at
	Duplicate bool   // the id was already in the log: nothing new was stored
	// Stored is the event as a reader of the log reads it back (Seq set),
	// when the append knows it without reading: nil for a duplicate, for a
	// command, and for an event the log did not store as it was given (a
	// secret redacted from it, data over the inline budget, whose large
	// values may have gone to blobs).
	Stored *Event
}

// kept is res with Stored set to ev at res's sequence, when ev is known
// (see Appended.Stored) and res stored something new.
func kept(res Appended, ev *Event) Appended {
	if ev != nil && !res.Duplicate {
		stored := *ev
		stored.Seq = res.Seq
		res.Stored = &stored
	}
	return res
}

// Append publishes ev with payload as its data and waits until JetStream has
// stored it (on disk, in strict mode). The payload must be of the Go type
// registered for ev.Type. A zero ev.Time is set to now; an empty ev.ID gets a
// NewID. Secrets are redacted from the whole envelope before it leaves.
//
// When ev.ID was appended before (within the duplicate window) nothing new
// is stored and the result says Duplicate with the original sequence. A ctx
// without a deadline gets JetStream's default request timeout.
//
// In strict mode, concurrent appends are stored together by the group
// commit (DESIGN §10): the result comes once the append's batch is on disk.
func (l *Log) Append(ctx context.Context, ev Event, payload any) (Appended, error) {
	return l.appendOne(ctx, ev, payload, false)
}

// AppendFirst is Append for an event that must be the first on its subject
// (the creation of an aggregate, such as task.created): if the subject
// already holds an event, nothing is stored and the error wraps
// ErrConflict.
func (l *Log) AppendFirst(ctx context.Context, ev Event, payload any) (Appended, error) {
	return l.appendOne(ctx, ev, payload, true)
}

// appendOne is Append, or with first AppendFirst.
func (l *Log) appendOne(ctx context.Context, ev Event, payload any, first bool) (Appended, error) {
	if err := l.room(ctx); err != nil {
		return Appended{}, err
	}
	stamped := ev.Time.IsZero()
	msg, asGiven, err := l.eventMsg(ctx, &ev, payload)
	if err != nil {
		return Appended{}, err
	}
	if l.grouped() {
		r, err := l.appendGrouped(msg, &ev, first, stamped, asGiven)
		if err != nil {
			return Appended{}, err
		}
		return r.wait(ctx)
	}
	var opts []jetstream.PublishOpt
	if first {
		opts = append(opts, jetstream.WithExpectLastSequencePerSubject(0))
	}
	ack, err := l.js.PublishMsg(ctx, msg, opts...)
	if err != nil {
		var apiErr *jetstream.APIError
		if first && errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence {
			return Appended{}, fmt.Errorf("%w: %s already exists", ErrConflict, msg.Subject)
		}
		return Appended{}, publishError(ev.Type, err)
	}
	return kept(Appended{Seq: ack.Sequence, Duplicate: ack.Duplicate}, asGivenEvent(&ev, asGiven)), nil
}

// asGivenEvent is ev when the log stores it as it was given (see
// Appended.Stored), else nil.
func asGivenEvent(ev *Event, asGiven bool) *Event {
	if !asGiven {
		return nil
	}
	return ev
}

// PendingAppend is an append that has been sent and not yet confirmed.
type PendingAppend struct {
	typ string
	fut jetstream.PubAckFuture // relaxed mode
	ev  *Event                 // relaxed mode: the event as stored, if known (see Appended.Stored)
	req *commitReq             // strict mode: in the group commit

	mu   sync.Mutex
	done bool // the outcome below is known
	res  Appended
	err  error
}

// AppendAsync sends ev like Append but does not wait for the store to
// confirm it; Wait does. Appends sent on one Log are stored in the order
// they were sent, so a later Append that succeeds comes after this one.
// Use it to overlap an append with other work; an unconfirmed append may
// be lost in a crash. ctx bounds only a wait for space (see WaitForSpace).
func (l *Log) AppendAsync(ctx context.Context, ev Event, payload any) (*PendingAppend, error) {
	if err := l.room(ctx); err != nil {
		return nil, err
	}
	stamped := ev.Time.IsZero()
	msg, asGiven, err := l.eventMsg(ctx, &ev, payload)
	if err != nil {
		return nil, err
	}
	if l.grouped() {
		r, err := l.appendGrouped(msg, &ev, false, stamped, asGiven)
		if err != nil {
			return nil, err
		}
		return &PendingAppend{typ: ev.Type, req: r}, nil
	}
	fut, err := l.js.PublishMsgAsync(msg)
	if err != nil {
		return nil, publishError(ev.Type, err)
	}
	return &PendingAppend{typ: ev.Type, fut: fut, ev: asGivenEvent(&ev, asGiven)}, nil
}

// Wait blocks until the append is confirmed or has failed. Once it has
// returned the outcome, later calls return it again at once.
func (p *PendingAppend) Wait(ctx context.Context) (Appended, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done {
		return p.res, p.err
	}
	var okc <-chan *jetstream.PubAck
	var errc <-chan error
	var stored <-chan struct{}
	if p.req != nil {
		stored = p.req.done
	} else {
		okc, errc = p.fut.Ok(), p.fut.Err()
	}
	select {
	case <-stored:
		p.res, p.err = p.req.res, p.req.err
	case ack := <-okc:
		p.res = kept(Appended{Seq: ack.Sequence, Duplicate: ack.Duplicate}, p.ev)
	case err := <-errc:
		p.err = publishError(p.typ, err)
	case <-ctx.Done():
		return Appended{}, fmt.Errorf("waiting for %s to be stored: %w", p.typ, ctx.Err())
	}
	p.done = true
	return p.res, p.err
}

// grouped reports whether appends go through the group commit: in strict
// mode, where each publish on its own would cost an fsync. Relaxed mode
// keeps its direct path (the server fsyncs on its own schedule).
func (l *Log) grouped() bool { return l.cfg.Durability == DurabilityStrict }

// eventMsg validates and encodes ev into the message Append publishes. It
// reports whether the message stores ev as it is (see encodeEvent), its
// data within the inline budget (so no value of it went to a blob).
func (l *Log) eventMsg(ctx context.Context, ev *Event, payload any) (*nats.Msg, bool, error) {
	if err := checkPayload(ev.Type, payload); err != nil {
		return nil, false, err
	}
	if ev.ID == "" {
		ev.ID = NewID()
	}
	if ev.Time.IsZero() {
		ev.Time = time.Now().UTC()
	}
	ev.Seq = 0
	whole := true
	if payload != nil {
		data, err := json.Marshal(payload)
		if err != nil {
			return nil, false, fmt.Errorf("events: encoding %s payload: %w", ev.Type, err)
		}
		whole = len(data) <= inlineBudget
		if ev.Data, err = l.shrink(ctx, data); err != nil {
			return nil, false, fmt.Errorf("events: storing the large values of %s: %w", ev.Type, err)
		}
	}
	msg, asGiven, err := l.encodeEvent(ev)
	return msg, asGiven && whole, err
}

// encodeEvent encodes ev, its data ready, into the message that stores it:
// redacted, with its Nats-Msg-Id, and signed. The group commit calls it
// again for an event that waited too long to be sent (see
// groupCommit.refresh). It reports whether what it stores is ev as it is,
// which a reader of the log then decodes: nothing was redacted from it and
// no failpoint changed its time.
func (l *Log) encodeEvent(ev *Event) (*nats.Msg, bool, error) {
	subject, err := ev.Subject()
	if err != nil {
		return nil, false, err
	}
	encoded := l.stalled(ev)
	body, err := json.Marshal(encoded)
	if err != nil {
		return nil, false, fmt.Errorf("events: encoding %s envelope: %w", ev.Type, err)
	}
	msg := &nats.Msg{Subject: subject, Data: l.cfg.Redactor.JSON(body), Header: nats.Header{}}
	asGiven := encoded == ev && bytes.Equal(msg.Data, body)
	msg.Header.Set(jetstream.MsgIDHeader, l.publishID(ev.ID))
	if l.key != nil {
		l.key.sign(msg, "")
	}
	// The publish adds headers of its own (a batch's headers, an
	// expectation): counted here, an event the check lets through is never
	// refused by the server for its size, which no retry would mend.
	if n, limit := msgSize(msg)+headerRoom, l.nc.MaxPayload(); int64(n) > limit {
		return nil, false, fmt.Errorf("%w: %s of %d bytes is over the server's max_payload of %d bytes", ErrTooLarge, ev.Type, n, limit)
	}
	return msg, asGiven, nil
}

// stalledPoint is a failpoint (ORBIT_FAILPOINT=append-stalled-<type>,
// optionally @<hit>): the event of that type is stored as if the engine
// had been suspended for stalledFor between making it and the server
// storing it (a laptop's lid closed, SIGSTOP, a paused VM). Its encoded
// time is set back by that much, where nothing after it looks: the group
// commit's refresh reads the event, not what was encoded from it.
const (
	stalledPoint = "append-stalled-"
	stalledFor   = 2 * time.Minute
)

// stalled returns ev, or at the stalledPoint of its type a copy of it
// made stalledFor earlier.
func (l *Log) stalled(ev *Event) *Event {
	if !l.failpoints || !failpoint.Reached(stalledPoint+ev.Type) {
		return ev
	}
	early := *ev
	early.Time = ev.Time.Add(-stalledFor)
	return &early
}

// msgSize is about what msg takes of the server's max_payload: its data
// and its headers as NATS encodes them.
func msgSize(msg *nats.Msg) int {
	n := len(msg.Data)
	if len(msg.Header) > 0 {
		n += len("NATS/1.0\r\n\r\n")
		for k, vs := range msg.Header {
			for _, v := range vs {
				n += len(k) + len(": \r\n") + len(v)
			}
		}
	}
	return n
}

// publishError classifies a failed publish.
func publishError(what string, err error) error {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) && isStoreFull(apiErr) {
		return fmt.Errorf("%w: publishing %s: %v", ErrStoreFull, what, err)
	}
	if errors.Is(err, context.Canceled) {
		return fmt.Errorf("publishing %s: %w", what, err)
	}
	return fmt.Errorf("%w: publishing %s: %v", ErrUnavailable, what, err)
}

// isStoreFull recognises JetStream's answers for a store that has run out of
// space or resources.
func isStoreFull(apiErr *jetstream.APIError) bool {
	const (
		insufficientResources = 10023 // JSInsufficientResourcesErr
		storeFailed           = 10077 // JSStreamStoreFailedF
	)
	switch apiErr.ErrorCode {
	case insufficientResources, storeFailed:
		return true
	}
	return strings.Contains(apiErr.Description, "no space left") ||
		strings.Contains(apiErr.Description, "insufficient resources")
}
