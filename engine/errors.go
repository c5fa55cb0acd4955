package engine

import "errors"

// ErrLogLost is returned by Open, and by Run of an engine whose events
// stream disappears under it, when the log is not the one the engine's
// views were folded from: the stream is missing (the error also matches
// events.ErrLogMissing), is another stream of the same name, or ends before
// what the views applied (restored from an older copy; it also matches
// projector.ErrLogMismatch). The engine does not serve a log it lost
// (DESIGN §2): the message says what was found, what was expected, and the
// ways on, restoring the store from a copy or `orbit init --new-log`.
var ErrLogLost = errors.New("the event log was lost or replaced")
