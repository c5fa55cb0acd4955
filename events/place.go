package events

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// An event's place in the log, as far as its format-2 MAC binds it (see
// mac2Prefix): stored under its own message id, which the server refuses
// a second message under for the duplicate window (2 minutes at least,
// Config.DuplicateWindow), and read only as the first message under that
// id unless the server stored it within maxLag of the time in its body.
//
// An event stored within maxLag of its time passes at once: a second
// message under its id would have been stored past the duplicate window,
// later than that. One stored further from its time (a legitimate append
// that reached the server late — an engine suspended between making an
// event and storing it, a publish retried through a cluster's trouble, a
// clock stepped — or a copy stored again past the window) passes only
// when no message under its id was stored before it (placeBefore): the
// first is the decision, which the engine that appended it was told was
// stored and acted on; a later one is a copy, or a decision made again
// that the first already holds.
//
// IMPORTANT: maxLag + maxClockSkew must stay under the shortest duplicate
// window Config.Validate accepts: a copy stored the moment the window lets
// it in is then still late by more than maxLag from an engine whose clock
// runs maxClockSkew ahead of the server's, and so is looked up
// (TestThePlaceCheckFitsTheShortestDuplicateWindow).
const (
	// maxLag is how long after (or before) its time an event may be
	// stored and pass without the look-up.
	maxLag = time.Minute
	// maxClockSkew is how far an engine's clock may be from the server's:
	// an engine further off refuses to start (checkClock).
	maxClockSkew = 30 * time.Second
	// refreshAfter is how old a queued event may be when the group commit
	// sends it; an older one (a round that waited through an election,
	// an engine stopped and continued) is made again with the time of now
	// (groupCommit.refresh), so that it is stored within maxLag of its
	// time and read without the look-up.
	refreshAfter = 15 * time.Second
)

// checkTime returns how an event with time made, stored by the server at
// stored, is out of its time (ProblemLate, ProblemEarly), "" when it is
// not. A zero stored (a server that does not say) checks nothing.
func checkTime(made, stored time.Time, lag time.Duration) string {
	switch {
	case stored.IsZero():
		return ""
	case stored.Sub(made) > lag:
		return ProblemLate
	case made.Sub(stored) > lag:
		return ProblemEarly
	}
	return ""
}

// readMessage checks and decodes one stored event, as every read of the
// log does (Follow, Read, Scan, EventAt): a message that fails
// verification, does not decode or, signed in format 2 and stored out of
// its time, is not the first under its message id is an error, and was
// recorded or logged. stored is when the server stored it. An error
// wrapping ErrUnavailable says the log could not be read to decide: the
// read must fail, not leave the event out.
func (l *Log) readMessage(ctx context.Context, seq uint64, subject string, hdr nats.Header, data []byte, stored time.Time) (Event, error) {
	format2, err := l.checkEvent(seq, subject, hdr, data)
	if err != nil {
		return Event{}, err
	}
	ev, err := DecodeEvent(data)
	if err != nil {
		l.log.Warn("skipping malformed event", "seq", seq, "subject", subject, "err", err)
		return Event{}, err
	}
	if format2 && checkTime(ev.Time, stored, l.lag()) != "" {
		before, err := l.placeBefore(ctx, seq, subject, hdr, ev.Time, stored)
		if err != nil {
			return Event{}, err
		}
		if before != 0 {
			return Event{}, l.rejectFailed(EventsStream, seq, subject, ReasonRepeated)
		}
		removed, err := l.removedCopy(ctx, subject, ev.Time)
		if err != nil {
			return Event{}, err
		}
		if removed {
			return Event{}, l.rejectFailed(EventsStream, seq, subject, ReasonRemoved)
		}
	}
	return ev, nil
}

// placeBefore returns the sequence of the first message stored before seq
// under the message id of the one at seq, which hdr holds, 0 when there
// is none; made and stored are its times, for the log. Only a message that verifies counts (one with a bad MAC does
// not take an id from the engine's events), and only on the same subject:
// the MAC covers the subject, and the engine signs each decision on one.
// The answer is kept per sequence: the stream denies deletes, and a
// retention purge only takes away what lies before seq, so a copy stays a
// copy and a first stays the first (a first whose run was removed is
// refused by removedCopy instead).
//
// It reads every message of the subject through seq itself: on a cluster
// a direct get may be answered by a replica behind the leader, which
// holds a prefix of the stream, and one that does not reach seq cannot
// say what came before it (ErrUnavailable).
func (l *Log) placeBefore(ctx context.Context, seq uint64, subject string, hdr nats.Header, made, stored time.Time) (uint64, error) {
	if v, ok := l.places.Load(seq); ok {
		return v.(uint64), nil
	}
	msgID := hdr.Get(jetstream.MsgIDHeader)
	var before uint64
	err := l.scan(ctx, subject, l.key.eventsFrom, seq, func(at uint64, msg *nats.Msg) error {
		if at == seq {
			return errReached
		}
		if msg.Header.Get(jetstream.MsgIDHeader) != msgID {
			return nil
		}
		if reason, _ := l.verifyEvent(at, subject, msg.Header, msg.Data); reason != "" {
			return nil
		}
		before = at
		return errReached
	})
	if !errors.Is(err, errReached) {
		if err == nil {
			err = fmt.Errorf("%w: the messages of %s before sequence %d could not all be read", ErrUnavailable, subject, seq)
		}
		return 0, err
	}
	if _, seen := l.places.LoadOrStore(seq, before); !seen && before == 0 {
		l.log.Warn("an event stored out of its time is the first under its id: read as any other",
			"seq", seq, "subject", subject, "made", made, "stored", stored)
	}
	return before, nil
}

// errReached ends placeBefore's scan once it knows the answer.
var errReached = errors.New("reached")

// lag is maxLag, or what a test set instead.
func (l *Log) lag() time.Duration {
	if l.maxLag > 0 {
		return l.maxLag
	}
	return maxLag
}

// storedTime is the time the server stored a direct get's message at
// (zero when it does not say).
func storedTime(hdr nats.Header) time.Time {
	t, err := time.Parse(time.RFC3339Nano, serverHeader(hdr, jetstream.TimeStampHeaer))
	if err != nil {
		return time.Time{}
	}
	return t
}

// checkClock refuses an engine whose clock is more than maxClockSkew away
// from the NATS server's: the events it signs would be stored out of their
// time, rejected by every reader, or late copies of them accepted. The
// embedded server shares the engine's clock and is not asked.
func (l *Log) checkClock(ctx context.Context) error {
	if l.srv != nil || l.key == nil {
		return nil
	}
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	before := time.Now()
	info, err := l.events.Info(ctx)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	after := time.Now()
	if info.TimeStamp.IsZero() {
		return nil // a server too old to say
	}
	skew := info.TimeStamp.Sub(before.Add(after.Sub(before) / 2))
	if skew > maxClockSkew || skew < -maxClockSkew {
		return fmt.Errorf("%w: the NATS server's clock is %s ahead of this machine's (at most %s either way): the events this engine signs would be rejected as stored out of their time; set the clocks right (NTP)",
			ErrClockSkew, skew.Round(time.Second), maxClockSkew)
	}
	return nil
}
