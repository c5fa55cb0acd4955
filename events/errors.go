package events

import (
	"errors"
	"fmt"
)

// Sentinel errors returned by this package. Wrapped errors carry detail; test
// for these with errors.Is.
var (
	// ErrUnknownType is returned when an event of a type that was never
	// registered is published or decoded. Publishing one is a programming
	// error.
	ErrUnknownType = errors.New("unknown event type")

	// ErrPayloadType is returned when an event is published with a payload
	// whose Go type is not the one registered for its event type.
	ErrPayloadType = errors.New("payload does not match the registered type")

	// ErrInvalidEvent is returned when a stored message is not a valid event
	// envelope.
	ErrInvalidEvent = errors.New("invalid event")

	// ErrUnavailable is returned when the NATS server cannot be reached or
	// JetStream does not answer.
	ErrUnavailable = errors.New("event log unavailable")

	// ErrUnauthorized is returned, with ErrUnavailable, when the server
	// refuses the client's credentials (or their absence).
	ErrUnauthorized = errors.New("not authorized")

	// ErrNotPermitted is returned when the server refuses the request of
	// an identity that may not make it: the reader's key asking the
	// engine's API, which only the client's may.
	ErrNotPermitted = errors.New("this key may not")

	// ErrTLS is returned, with ErrUnavailable when connecting, when TLS
	// fails: a certificate, key or CA file that cannot be used, a server
	// certificate the client does not trust, or a client certificate the
	// server refused or did not get.
	ErrTLS = errors.New("TLS failed")

	// ErrNotFound is returned by reads of a sequence, blob, key or API
	// resource that does not exist.
	ErrNotFound = errors.New("not found")

	// ErrLogMissing is returned when the events stream does not exist
	// where it must: by Open with Config.RequireLog, and by Created when
	// the stream was deleted. The log was lost; it is never made anew
	// silently (DESIGN §2).
	ErrLogMissing = errors.New("the event log is missing")

	// ErrNotEngine is returned by the command queue's methods (Pending,
	// CommandsLastSeq, Consume, QueueDepths) and the buckets' (Leases,
	// Locks) on a Log made by Dial: only an engine's Log, made by Open,
	// binds them.
	ErrNotEngine = errors.New("only an engine's log has the command queue and the buckets")

	// ErrConflict is returned by key-value writes whose expected revision no
	// longer matches, and by creates of a key that already exists.
	ErrConflict = errors.New("revision conflict")

	// ErrInvalidRequest is returned by the API when a request is malformed or
	// refers to something that cannot be done.
	ErrInvalidRequest = errors.New("invalid request")

	// ErrEngineFailed is returned by Request when the engine answered with
	// an error of no known kind: it took the request and failed at it, which
	// is neither the request's fault nor the engine being unavailable.
	ErrEngineFailed = errors.New("the engine failed")

	// ErrAddressInUse is returned by Open when the embedded server cannot
	// listen on its address.
	ErrAddressInUse = errors.New("cannot listen")

	// ErrTooLarge is returned by Append and AppendFirst for an event that,
	// its large values moved to blobs, is still over the server's
	// max_payload: it can never be stored, and sending it again is futile.
	ErrTooLarge = errors.New("too large for the event log")

	// ErrStoreFull is returned when the store has no space left for a write.
	ErrStoreFull = errors.New("event store is full")

	// ErrTampered is returned for a message that fails verification by the
	// log key: unsigned where signing had started, or with a wrong MAC; and
	// for a blob whose content does not match its digest.
	ErrTampered = errors.New("fails integrity check")

	// ErrClockSkew is returned by Open when the engine's clock is too far
	// from the NATS server's for the events it signs to be placed (see
	// checkClock).
	ErrClockSkew = errors.New("clock skew")

	// ErrInvalidLogKey is returned when the log key file cannot be used.
	ErrInvalidLogKey = errors.New("invalid log key")
	// ErrTokenEmbedded is returned by Open when a token is configured for
	// the embedded server, which admits only nkey users.
	ErrTokenEmbedded = errors.New("a token cannot open the embedded server")

	// ErrMisconfigured is returned by CheckReader when the server lets the
	// reader identity change the log, or does not admit it.
	ErrMisconfigured = errors.New("the NATS server's permissions are misconfigured")

	// ErrTooFewServers is returned by Open when the configured replicas
	// exceed the servers of the cluster.
	ErrTooFewServers = errors.New("fewer NATS servers than replicas")
)

// notFoundError is an answer for what does not exist whose message is for
// the user as it is ("no task T-9"), without the sentinel's words.
type notFoundError struct{ msg string }

func (e *notFoundError) Error() string { return e.msg }

func (e *notFoundError) Unwrap() error { return ErrNotFound }

// NotFoundf returns an error matching ErrNotFound whose message is the
// format's, as every "no run …", "no task …" the CLI prints reads.
func NotFoundf(format string, args ...any) error {
	return &notFoundError{msg: fmt.Sprintf(format, args...)}
}
