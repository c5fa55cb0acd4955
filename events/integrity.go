package events

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Headers of a signed message.
const (
	// MACHeader carries the hex HMAC-SHA256, by the log key, of a message's
	// subject, command id and body.
	MACHeader = "Orbit-Mac"
	// CommandIDHeader carries a signed command's readable id; its
	// Nats-Msg-Id is a keyed hash of it (see logKey.msgID).
	CommandIDHeader = "Orbit-Id"
)

// Reasons a message fails verification, as integrity.rejected records them.
const (
	ReasonUnsigned = "unsigned"
	ReasonBadMAC   = "bad MAC"
	// ReasonUnbound: a format-1 MAC where the log requires format 2 (see
	// macFormat2): a copy of a message signed before the log moved to
	// format 2, stored again since.
	ReasonUnbound = "not bound to its place"
	// ReasonRepeated: a format-2 event the server stored more than maxLag
	// from the time it was signed with (see checkTime), under a message id
	// a message stored before it already holds (see placeBefore): a copy
	// stored again past the duplicate window, or a decision made again
	// that the first holds.
	ReasonRepeated = "out of its time, under an id stored before"
)

// mac2Prefix starts the Orbit-Mac header of a format-2 MAC.
//
// Format 1 (a bare hex MAC) is HMAC-SHA256 of the subject, the command id
// and the body. Format 2 adds the message's Nats-Msg-Id, the id the server
// refuses a second message under for its duplicate window: a signed
// message copied under another id fails verification, and one copied
// under its own is dropped by the server within the window and, past it,
// is stored out of its time (an event's time is in its body) under an id
// stored before, which a reader finds (see placeBefore). So a signed
// event is read once; neither needs the appenders to agree on anything.
//
// IMPORTANT: a stored format. Engines write format 2; readers accept
// format 1 only below the sequences the log key records for it (see
// logKeyFile.BoundEventsFrom), so logs written before verify as they did.
const mac2Prefix = "2:"

// logKey signs what a Log publishes and verifies what it reads.
//
// IMPORTANT: the MAC covers the exact bytes stored (after redaction and
// after large values moved to blobs), the subject and, in format 2, the
// Nats-Msg-Id, so a signed event cannot be moved to another run or type,
// nor stored a second time; it does not cover the stream sequence — the
// order of a run's events is checked by the projector's run chains, and
// what a second copy would break by orbit audit (audit_place.go).
type logKey struct {
	key          []byte
	hexKey       string
	eventsFrom   uint64 // first event sequence that must be signed
	commandsFrom uint64 // first command sequence that must be signed
	// boundEventsFrom and boundCommandsFrom are the first sequences that
	// must carry a format-2 MAC; 0: none (a key no engine of this version
	// has opened yet).
	boundEventsFrom, boundCommandsFrom uint64
	// The streams the key was made beside (see logKeyFile); zero: none,
	// and nothing unsigned is accepted.
	eventsCreated, commandsCreated time.Time
	// macs holds HMAC-SHA256 states keyed with key, reset and reused: a
	// new one per message (its key schedule and allocations) was twice
	// the cost of the MAC of an event, which every read and append makes.
	macs sync.Pool
}

// mac returns the hex MAC of a message in format 1 (msgID is ignored) or
// format 2. id is the command id (empty for events, whose id is in the
// body).
func (k *logKey) mac(format2 bool, subject, id, msgID string, body []byte) string {
	h, ok := k.macs.Get().(hash.Hash)
	if ok {
		h.Reset()
	} else {
		h = hmac.New(sha256.New, k.key)
	}
	if format2 {
		h.Write([]byte("orbit-msg-2\x00"))
	} else {
		h.Write([]byte("orbit-msg\x00"))
	}
	h.Write([]byte(subject))
	h.Write([]byte{0})
	h.Write([]byte(id))
	h.Write([]byte{0})
	if format2 {
		h.Write([]byte(msgID))
		h.Write([]byte{0})
	}
	h.Write(body)
	var sum [sha256.Size]byte
	out := hex.EncodeToString(h.Sum(sum[:0]))
	k.macs.Put(h)
	return out
}

// msgID returns the Nats-Msg-Id a decision id is published under: a keyed
// hash, so that no one without the key can store a message under a
// decision's id and so have the real decision dropped as a duplicate.
func (k *logKey) msgID(id string) string {
	h := hmac.New(sha256.New, k.key)
	h.Write([]byte("orbit-msg-id\x00"))
	h.Write([]byte(id))
	return "k" + hex.EncodeToString(h.Sum(nil)[:20])
}

// id names the key without revealing it, for engine.info: a client
// verifies with a key only when it is the one the engine signs with.
func (k *logKey) id() string {
	h := hmac.New(sha256.New, k.key)
	h.Write([]byte("orbit-key-id"))
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// sign adds the format-2 MAC of msg to it (and for a command its readable
// id). msg's Nats-Msg-Id header, which the MAC covers, must be set before.
func (k *logKey) sign(msg *nats.Msg, cmdID string) {
	if msg.Header == nil {
		msg.Header = nats.Header{}
	}
	if cmdID != "" {
		msg.Header.Set(CommandIDHeader, cmdID)
	}
	msg.Header.Set(MACHeader, mac2Prefix+k.mac(true, msg.Subject, cmdID, msg.Header.Get(jetstream.MsgIDHeader), msg.Data))
}

// verify checks a stored message and returns why it fails, "" when it
// passes, and whether it carries a format-2 MAC (whose reader then checks
// an event's time: see checkTime). from is the first sequence of its
// stream that must be signed and bound the first that must be in format 2
// (0: none); an earlier message passes as it is when original says its
// stream is the one the key was made beside (original is called only
// then).
func (k *logKey) verify(from, bound, seq uint64, original func() bool, subject string, hdr nats.Header, body []byte) (reason string, format2 bool) {
	if seq < from && original() {
		return "", false
	}
	got := hdr.Get(MACHeader)
	if got == "" {
		return ReasonUnsigned, false
	}
	if mac, ok := strings.CutPrefix(got, mac2Prefix); ok {
		// The server dedupes on the first Nats-Msg-Id; a message with
		// two is no message Orbit sent.
		ids := hdr.Values(jetstream.MsgIDHeader)
		if len(ids) > 1 {
			return ReasonBadMAC, false
		}
		msgID := ""
		if len(ids) == 1 {
			msgID = ids[0]
		}
		if !hmac.Equal([]byte(mac), []byte(k.mac(true, subject, hdr.Get(CommandIDHeader), msgID, body))) {
			return ReasonBadMAC, false
		}
		return "", true
	}
	if !hmac.Equal([]byte(got), []byte(k.mac(false, subject, hdr.Get(CommandIDHeader), "", body))) {
		return ReasonBadMAC, false
	}
	if bound != 0 && seq >= bound {
		return ReasonUnbound, false
	}
	return "", false
}

// publishID returns the Nats-Msg-Id to publish id under.
func (l *Log) publishID(id string) string {
	if l.key == nil {
		return id
	}
	return l.key.msgID(id)
}

// Signing reports whether this Log signs what it publishes and verifies
// what it reads.
func (l *Log) Signing() bool { return l.key != nil }

// checkEvent verifies an event read from the log, and when it fails
// records the rejection (see reject). It returns nil without a key. A
// format-2 event passes only once its place was checked too (readMessage),
// which needs the body decoded.
func (l *Log) checkEvent(seq uint64, subject string, hdr nats.Header, body []byte) (format2 bool, err error) {
	if l.key == nil {
		return false, nil
	}
	reason, format2 := l.verifyEvent(seq, subject, hdr, body)
	return format2, l.rejectFailed(EventsStream, seq, subject, reason)
}

// checkCommand is checkEvent for a command. A command carries no time: one
// stored again past the duplicate window finds its decision already taken
// (a step's command, its step.finished) and is dropped by its worker.
func (l *Log) checkCommand(stream string, seq uint64, subject string, hdr nats.Header, body []byte) error {
	if l.key == nil {
		return nil
	}
	return l.rejectFailed(stream, seq, subject, l.verifyCommand(stream, seq, subject, hdr, body))
}

// rejectFailed records a failed verification (reason not empty) and
// returns it as an error wrapping ErrTampered.
func (l *Log) rejectFailed(stream string, seq uint64, subject, reason string) error {
	if reason == "" {
		return nil
	}
	l.reject(stream, seq, subject, reason)
	return fmt.Errorf("%w: %s %d (%s): %s", ErrTampered, stream, seq, subject, reason)
}

// verifyEvent is logKey.verify for the event stream.
func (l *Log) verifyEvent(seq uint64, subject string, hdr nats.Header, body []byte) (string, bool) {
	original := func() bool { return l.originalStream(&l.eventsOrigin, l.events, l.key.eventsCreated) }
	return l.key.verify(l.key.eventsFrom, l.key.boundEventsFrom, seq, original, subject, hdr, body)
}

// verifyCommand is logKey.verify for a command stream. Every message of
// StepsStream must carry a format-2 MAC: that stream is only ever written
// by engines that sign (the key's commands_from does not apply to it; see
// moveStepCommands for the commands an older engine queued).
func (l *Log) verifyCommand(stream string, seq uint64, subject string, hdr nats.Header, body []byte) string {
	if stream == StepsStream {
		reason, _ := l.key.verify(1, 1, seq, func() bool { return false }, subject, hdr, body)
		return reason
	}
	original := func() bool { return l.originalStream(&l.cmdsOrigin, l.cmds, l.key.commandsCreated) }
	reason, _ := l.key.verify(l.key.commandsFrom, l.key.boundCommandsFrom, seq, original, subject, hdr, body)
	return reason
}

// originCheck caches whether a stream is still the one a key was made
// beside, for originTTL: an old log's unsigned start is read often.
type originCheck struct {
	mu sync.Mutex
	at time.Time
	ok bool
}

const originTTL = time.Second

// originalStream reports whether stream was created at created: not
// deleted and made again under its name since the key was made, which
// would let anyone fill the new stream's sequences below the key's start
// with unsigned messages.
func (l *Log) originalStream(c *originCheck, stream jetstream.Stream, created time.Time) bool {
	if created.IsZero() {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.at.IsZero() && time.Since(c.at) < originTTL {
		return c.ok
	}
	ctx, cancel := context.WithTimeout(context.Background(), rejectTimeout)
	defer cancel()
	info, err := stream.Info(ctx)
	if err != nil {
		// Unknown: refuse this time, ask again next time.
		return false
	}
	c.at, c.ok = time.Now(), info.Created.Equal(created)
	if !c.ok {
		l.log.Warn("the stream is not the one the log key was made beside; its unsigned messages are rejected",
			"stream", info.Config.Name, "created", info.Created, "key_made_beside", created)
	}
	return c.ok
}

// rejectTimeout bounds the append of one integrity.rejected.
const rejectTimeout = 5 * time.Second

// reject records that the message at seq of stream failed verification,
// once per Log and message (later reads of it only log at debug level):
// it tells Config.OnReject, and an engine's Log (one opened with Open)
// appends integrity.rejected; the event's id is derived from the message,
// so engines sharing a log store it once within the duplicate window.
func (l *Log) reject(stream string, seq uint64, subject, reason string) {
	key := fmt.Sprintf("%s/%d", stream, seq)
	if _, seen := l.rejected.LoadOrStore(key, true); seen {
		l.log.Debug("message fails verification", "stream", stream, "seq", seq, "subject", subject, "reason", reason)
		return
	}
	if l.cfg.OnReject != nil {
		l.cfg.OnReject(Rejection{Stream: stream, Seq: seq, Subject: subject, Reason: reason})
	}
	if !l.engine {
		l.log.Debug("message fails verification", "stream", stream, "seq", seq, "subject", subject, "reason", reason)
		return
	}
	l.log.Warn("rejecting a message that fails verification", "stream", stream, "seq", seq, "subject", subject, "reason", reason)
	ctx, cancel := context.WithTimeout(context.Background(), rejectTimeout)
	defer cancel()
	_, aerr := l.Append(ctx, Event{
		ID:    DecisionID(IntegrityRejected, stream, fmt.Sprint(seq)),
		Type:  IntegrityRejected,
		RunID: SubjectRun(subject),
	}, IntegrityRejectedData{Stream: stream, Subject: subject, Seq: seq, Reason: reason})
	if aerr != nil {
		l.rejected.Delete(key)
		l.log.Warn("integrity.rejected not recorded", "stream", stream, "seq", seq, "err", aerr)
	}
}

// Rejection is a message a read left out because it failed verification
// by the log key (see Config.OnReject).
type Rejection struct {
	Stream  string // EventsStream, CommandsStream or StepsStream
	Seq     uint64
	Subject string
	Reason  string // ReasonUnsigned, ReasonBadMAC, …
}

// UnattributedRun is the run id integrity.rejected is recorded under when
// the rejected message's subject names no run.
const UnattributedRun = "_unattributed"

// SubjectRun returns the run a subject names: orbit.events.run.<run>.…,
// orbit.step.<type>.<run>.… and, for a step command an older engine
// queued, orbit.cmd.step.<type>.<run>.…; UnattributedRun for any other.
func SubjectRun(subject string) string {
	parts := strings.Split(subject, ".")
	switch {
	case len(parts) > 4 && parts[0] == "orbit" && parts[1] == "events" && parts[2] == AggregateRun:
		return parts[3]
	case len(parts) > 3 && parts[0] == "orbit" && parts[1] == "step":
		return parts[3]
	case len(parts) > 4 && parts[0] == "orbit" && parts[1] == "cmd" && parts[2] == "step":
		return parts[4]
	}
	return UnattributedRun
}

// msgHeaders returns the headers of a JetStream message (never nil).
func msgHeaders(msg jetstream.Msg) nats.Header {
	if h := msg.Headers(); h != nil {
		return h
	}
	return nats.Header{}
}
