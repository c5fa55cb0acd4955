package events

import "context"

// Fits reports whether ev with payload could be appended as it is: nil, or
// the error Append would return before sending it — one wrapping
// ErrTooLarge when the event, its large values stored as blobs, is still
// over the server's max_payload. Nothing is appended (the blobs of its
// large values are stored, as Append would store them).
func (l *Log) Fits(ctx context.Context, ev Event, payload any) error {
	_, _, err := l.eventMsg(ctx, &ev, payload)
	return err
}
