package events

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Read returns every event currently in the log that matches opts, in
// order; messages that do not decode or fail verification are left out
// (or become placeholders, as in Follow). Use it for bounded reads; use Follow to keep up with new events.
//
// Read asks the stream for batches of messages directly (JetStream's batched
// direct get) instead of creating a consumer, so a read costs the server
// nothing once it returns, however many clients read at once.
func (l *Log) Read(ctx context.Context, opts FollowOptions) ([]Event, error) {
	lasts, err := l.lastsFor(ctx, opts.Filters)
	if err != nil {
		return nil, err
	}
	from := max(opts.FromSeq, 1)
	filters := opts.Filters
	if len(filters) == 0 {
		filters = []string{""}
	}
	var out []Event
	for i, filter := range filters {
		if lasts[i] < from {
			continue
		}
		evs, err := l.readRange(ctx, filter, from, lasts[i], opts)
		if err != nil {
			return nil, err
		}
		out = append(out, evs...)
	}
	if len(filters) > 1 {
		slices.SortFunc(out, func(a, b Event) int { return cmp.Compare(a.Seq, b.Seq) })
		out = slices.CompactFunc(out, func(a, b Event) bool { return a.Seq == b.Seq })
	}
	return out, nil
}

// Batched direct gets: how many messages, and how many bytes, one request
// asks for.
const (
	readBatch    = 512
	readMaxBytes = 8 << 20
)

// directGetRequest is the body of a JetStream direct get ($JS.API.DIRECT.GET).
type directGetRequest struct {
	Seq      uint64 `json:"seq"`
	NextFor  string `json:"next_by_subj,omitempty"`
	Batch    int    `json:"batch"`
	MaxBytes int    `json:"max_bytes"`
}

// readRange returns the events on subject filter (every subject when empty)
// with sequences from..upTo, upTo being the last such event the stream's
// leader holds (see scanThrough).
func (l *Log) readRange(ctx context.Context, filter string, from, upTo uint64, opts FollowOptions) ([]Event, error) {
	var out []Event
	err := l.scanThrough(ctx, EventsStream, filter, from, upTo, func(seq uint64, msg *nats.Msg) error {
		return l.readOne(ctx, seq, msg, opts, &out)
	})
	if err != nil {
		return nil, err
	}
	if !opts.BlobRefs {
		for i := range out {
			if out[i].Data, err = l.expand(ctx, out[i].Data); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// scanThrough is scanStream through upTo, a sequence the stream's leader
// holds on filter: the batches are direct gets, answered by any replica,
// and one behind the leader ends its answer before upTo. scanThrough asks
// again from where it got to, after a pause, as Scan does, until upTo is
// read or scanCatchUp passes without one more message (ErrUnavailable).
func (l *Log) scanThrough(ctx context.Context, stream, filter string, from, upTo uint64, fn func(seq uint64, msg *nats.Msg) error) error {
	got := from - 1
	return l.scanUntil(ctx, stream, filter, from, upTo, func(seq uint64, msg *nats.Msg) error {
		got = seq
		return fn(seq, msg)
	}, func() (uint64, bool) { return got, got >= upTo })
}

// lastStored returns the sequence of the event stream's last message, as
// its leader has it: a sequence scanThrough can reach (the stream's last
// sequence may be one whose message was deleted).
func (l *Log) lastStored(ctx context.Context) (uint64, error) {
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	return l.lastFor(ctx, EventsRoot+".>")
}

// scanUntil is scanStream asked again from where it got to (the sequence
// at returns) until done says the scan is whole; see scanThrough.
func (l *Log) scanUntil(ctx context.Context, stream, filter string, from, upTo uint64, fn func(seq uint64, msg *nats.Msg) error,
	done func() (at uint64, whole bool)) error {
	next := from
	pause, stalled := scanRetryFirst, time.Now()
	for {
		if err := l.scanStream(ctx, stream, filter, next, upTo, fn); err != nil {
			return err
		}
		at, whole := done()
		if whole {
			return nil
		}
		if at+1 > next {
			pause, stalled = scanRetryFirst, time.Now()
		}
		next = max(next, at+1)
		if l.srv != nil || time.Since(stalled) > scanCatchUp {
			return fmt.Errorf("%w: reading %s: the stream's leader holds messages on %q through sequence %d, but they could be read only through %d",
				ErrUnavailable, stream, filter, upTo, at)
		}
		l.log.Debug("a read's replica is behind its leader; reading again", "stream", stream, "through", at, "want", upTo, "in", pause)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pause):
		}
		pause = min(2*pause, scanRetryMax)
	}
}

// readOne decodes the stored message at seq onto out: left out when it
// does not decode or fails verification, unless opts asks for
// placeholders.
func (l *Log) readOne(ctx context.Context, seq uint64, msg *nats.Msg, opts FollowOptions, out *[]Event) error {
	subject := serverHeader(msg.Header, jetstream.SubjectHeader)
	var stored time.Time // only a signed event's time is checked
	if l.key != nil {
		stored = storedTime(msg.Header)
	}
	ev, err := l.readMessage(ctx, seq, subject, msg.Header, msg.Data, stored)
	if errors.Is(err, ErrUnavailable) {
		return err
	}
	if err != nil {
		if !opts.Placeholders {
			return nil
		}
		ev = Event{}
	}
	ev.Seq = seq
	*out = append(*out, ev)
	return nil
}

// scan hands each stored event on subject filter (every subject when
// empty) with a sequence from..upTo to fn, in order, asking the stream for
// them in batches; an error from fn ends the scan with that error.
func (l *Log) scan(ctx context.Context, filter string, from, upTo uint64, fn func(seq uint64, msg *nats.Msg) error) error {
	return l.scanStream(ctx, EventsStream, filter, from, upTo, fn)
}

// scanStream is scan of any stream.
func (l *Log) scanStream(ctx context.Context, stream, filter string, from, upTo uint64, fn func(seq uint64, msg *nats.Msg) error) error {
	inbox := l.nc.NewInbox()
	// One batch's answer at a time: its messages and its end-of-batch
	// status. A synchronous subscription's channel would hold the
	// connection's default of 65,536 (half a megabyte made and cleared
	// for every read, a run's history among them); the next request is
	// sent only once the batch before it has been taken.
	answers := make(chan *nats.Msg, readBatch+1)
	sub, err := l.nc.ChanSubscribe(inbox, answers)
	if err != nil {
		return fmt.Errorf("%w: reading events: %v", ErrUnavailable, err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	next := from
	for next <= upTo {
		req, err := json.Marshal(directGetRequest{Seq: next, NextFor: filter, Batch: readBatch, MaxBytes: readMaxBytes})
		if err != nil {
			return err
		}
		if err := l.nc.PublishRequest("$JS.API.DIRECT.GET."+stream, inbox, req); err != nil {
			return fmt.Errorf("%w: reading events: %v", ErrUnavailable, err)
		}
		more, err := l.scanBatch(ctx, answers, upTo, &next, fn)
		if err != nil {
			return err
		}
		if !more {
			break
		}
	}
	return nil
}

// scanBatch collects one batch's answer: messages, then an end-of-batch
// status. It moves *next past every message received and reports whether
// the stream holds more matching messages after them.
func (l *Log) scanBatch(ctx context.Context, answers <-chan *nats.Msg, upTo uint64, next *uint64, fn func(uint64, *nats.Msg) error) (bool, error) {
	bctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	for {
		var msg *nats.Msg
		select {
		case msg = <-answers:
		case <-bctx.Done():
			return false, fmt.Errorf("%w: reading events: %v", ErrUnavailable, context.Cause(bctx))
		}
		// A stored message always comes with the server's Nats-Sequence;
		// only an answer without one is a status, whatever headers a
		// publisher stored with its message.
		rawSeq := serverHeader(msg.Header, jetstream.SequenceHeader)
		if rawSeq == "" {
			switch msg.Header.Get("Status") {
			case "204": // end of batch
				pending, _ := strconv.ParseUint(msg.Header.Get("Nats-Num-Pending"), 10, 64)
				return pending > 0 && *next <= upTo, nil
			case "404": // nothing at or after *next
				return false, nil
			case "503":
				return false, fmt.Errorf("%w: reading events: no responders", ErrUnavailable)
			}
			return false, fmt.Errorf("%w: reading events: %s %s", ErrUnavailable, msg.Header.Get("Status"), msg.Header.Get("Description"))
		}
		seq, err := strconv.ParseUint(rawSeq, 10, 64)
		if err != nil {
			return false, fmt.Errorf("%w: direct get answer without a sequence: %v", ErrInvalidEvent, err)
		}
		*next = seq + 1
		if seq > upTo {
			continue
		}
		if err := fn(seq, msg); err != nil {
			return false, err
		}
	}
}

// serverHeader returns the value the server gave a direct get answer's
// header key. The server adds its headers after those stored with the
// message, and a publisher may have stored its own Nats-Sequence or
// Nats-Subject: only the last value is the server's.
func serverHeader(h nats.Header, key string) string {
	values := h.Values(key)
	if len(values) == 0 {
		return ""
	}
	return values[len(values)-1]
}
