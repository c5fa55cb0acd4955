package events

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// An event's place in the log, as far as its format-2 MAC binds it (see
// mac2Prefix): stored once, under its own message id, which the server
// refuses a second message under for the duplicate window (2 minutes at
// least, Config.DuplicateWindow), and within maxLag of the time in its
// body, which the readers check against the time the server stored it.
//
// IMPORTANT: maxLag + maxClockSkew must stay under the shortest duplicate
// window Config.Validate accepts: a copy stored the moment the window lets
// it in is then still late by more than maxLag from an engine whose clock
// runs maxClockSkew ahead of the server's
// (TestThePlaceCheckFitsTheShortestDuplicateWindow).
const (
	// maxLag is how long after (or before) its time an event may be
	// stored.
	maxLag = time.Minute
	// maxClockSkew is how far an engine's clock may be from the server's:
	// an engine further off refuses to start (checkClock).
	maxClockSkew = 30 * time.Second
	// refreshAfter is how old a queued event may be when the group commit
	// sends it; an older one (a round that waited through an election,
	// an engine stopped and continued) is made again with the time of now
	// (groupCommit.refresh), so that only the time it spends on the way
	// to the server counts against maxLag: at most the commit's timeout
	// and a retry through an election (10 s + 20 s).
	refreshAfter = 15 * time.Second
)

// checkTime returns why an event with time made, stored by the server at
// stored, is out of its place ("" when it is not). A zero stored (a
// server that does not say) checks nothing.
func checkTime(made, stored time.Time, lag time.Duration) string {
	switch {
	case stored.IsZero():
		return ""
	case stored.Sub(made) > lag:
		return ReasonLate
	case made.Sub(stored) > lag:
		return ReasonEarly
	}
	return ""
}

// readMessage checks and decodes one stored event, as every read of the
// log does (Follow, Read, Scan, EventAt): a message that fails
// verification, does not decode or, signed in format 2, was stored out of
// its time is an error, and was recorded or logged. stored is when the
// server stored it.
func (l *Log) readMessage(seq uint64, subject string, hdr nats.Header, data []byte, stored time.Time) (Event, error) {
	format2, err := l.checkEvent(seq, subject, hdr, data)
	if err != nil {
		return Event{}, err
	}
	ev, err := DecodeEvent(data)
	if err != nil {
		l.log.Warn("skipping malformed event", "seq", seq, "subject", subject, "err", err)
		return Event{}, err
	}
	if format2 {
		if err := l.rejectFailed(EventsStream, seq, subject, checkTime(ev.Time, stored, l.lag())); err != nil {
			return Event{}, err
		}
	}
	return ev, nil
}

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
