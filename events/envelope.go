package events

import (
	"encoding/json"
	"fmt"
	"time"
)

// Event is the envelope every message in ORBIT_EVENTS carries (DESIGN §2). The
// same shape is used in views, in the API and in --json output.
type Event struct {
	// ID is the JetStream Nats-Msg-Id: derived with DecisionID for events that
	// record a decision, NewID otherwise.
	ID   string    `json:"id"`
	Type string    `json:"type"`
	Time time.Time `json:"time"`

	RunID    string `json:"run_id,omitempty"`
	TaskID   string `json:"task_id,omitempty"`
	Job      string `json:"job,omitempty"`
	StepKey  string `json:"step_key,omitempty"`
	ParentID string `json:"parent_id,omitempty"`

	Data json.RawMessage `json:"data,omitempty"`

	// Seq is the stream sequence, set when the event is read from the log;
	// it is not part of what is published.
	Seq uint64 `json:"seq,omitempty"`
}

// Placeholder reports whether e only marks the place of a message that did
// not decode (see FollowOptions.Placeholders): every stored event has an ID.
func (e Event) Placeholder() bool { return e.ID == "" }

// Decode unmarshals the event's data into v.
func (e Event) Decode(v any) error {
	if len(e.Data) == 0 {
		return nil
	}
	if err := json.Unmarshal(e.Data, v); err != nil {
		return fmt.Errorf("%w: %s %s: data: %v", ErrInvalidEvent, e.Type, e.ID, err)
	}
	return nil
}

// Payload decodes the event's data into a new value of the Go type registered
// for its type and returns a pointer to it.
func (e Event) Payload() (any, error) {
	info, ok := Lookup(e.Type)
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownType, e.Type)
	}
	v := info.newPayload()
	if err := e.Decode(v); err != nil {
		return nil, err
	}
	return v, nil
}

// Subject returns the subject the event is stored under.
func (e Event) Subject() (string, error) {
	info, ok := Lookup(e.Type)
	if !ok {
		return "", fmt.Errorf("%w: %q", ErrUnknownType, e.Type)
	}
	id := e.RunID
	switch info.Aggregate {
	case AggregateTask:
		id = e.TaskID
	case AggregateLog:
		id = e.ID
	}
	if id == "" {
		return "", fmt.Errorf("%w: %s event has no %s id", ErrInvalidEvent, e.Type, info.Aggregate)
	}
	return EventSubject(info.Aggregate, id, e.Type), nil
}

// DecodeEvent parses a stored message body into an Event. It never panics on
// bad input; every rejection wraps ErrInvalidEvent or ErrUnknownType.
func DecodeEvent(body []byte) (Event, error) {
	e, ok := decodeEnvelope(body)
	if !ok {
		// Unmarshal, unlike a Decoder, refuses anything after the one
		// value.
		if err := json.Unmarshal(body, &e); err != nil {
			return Event{}, fmt.Errorf("%w: %v", ErrInvalidEvent, err)
		}
	}
	if e.ID == "" || e.Type == "" {
		return Event{}, fmt.Errorf("%w: id and type are required", ErrInvalidEvent)
	}
	if _, ok := Lookup(e.Type); !ok {
		return Event{}, fmt.Errorf("%w: %q", ErrUnknownType, e.Type)
	}
	e.Seq = 0
	return e, nil
}
