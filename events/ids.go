package events

import (
	"crypto/rand"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"
)

// NewID returns a new time-sortable unique id (a ULID). Use it for things that
// are created, such as runs, and for events that record an observation rather
// than a decision.
func NewID() string {
	return ulid.MustNew(ulid.Timestamp(time.Now()), rand.Reader).String()
}

// DecisionID derives an event id from what a decision records: the aggregate
// id, the event type, and whatever else makes the decision unique (a step key,
// an attempt number). Publishing the same decision twice yields the same id,
// so JetStream's duplicate window stores it once, and the interpreter finds it
// by id in the history.
//
// IMPORTANT: parts must not contain '|'; ids are stored in the log, so the
// derivation must never change.
func DecisionID(typ string, parts ...string) string {
	var b strings.Builder
	b.WriteString(typ)
	for _, p := range parts {
		b.WriteByte('|')
		b.WriteString(p)
	}
	return b.String()
}
