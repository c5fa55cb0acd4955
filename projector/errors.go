package projector

import (
	"errors"
	"fmt"

	"github.com/orbitrun/orbit/events"
)

// Sentinel errors returned by this package. Wrapped errors carry detail; test
// for these with errors.Is.
var (
	// ErrLocked is returned by Open when another process (or another open
	// Projector) holds the views file and does not let go within
	// Config.LockTimeout. It means a second engine is running on the same
	// root.
	ErrLocked = errors.New("views file is locked by another process")

	// ErrNotFound is returned by queries for a run or a task that the
	// views do not hold. It wraps events.ErrNotFound, so the API layer
	// answers 404.
	ErrNotFound = fmt.Errorf("projector: %w", events.ErrNotFound)

	// ErrClosed is returned by every method of a Projector after Close.
	ErrClosed = errors.New("projector is closed")

	// ErrNoSource is returned by Run and Replay when the Projector has no
	// event source: neither Config.Source nor SetSource gave one.
	ErrNoSource = errors.New("projector has no event source")

	// ErrLogMismatch is returned (in a *MismatchError) by Run and CheckLog
	// when the log is not the one the views were folded from: the stream
	// is gone or is another one of the same name, or it no longer holds
	// the events the views applied (restored from an older copy). The
	// views are left as they are: the log is the truth, and losing it is
	// for an operator to resolve, not for a silent rebuild.
	ErrLogMismatch = errors.New("the log is not the one the views were folded from")

	// ErrRunning is returned by Run when Run is already running on the same
	// Projector: one Projector has exactly one apply loop.
	ErrRunning = errors.New("projector is already running")
)

// notFoundError is a query's answer for what the views do not hold: its
// message is for the user as it is (the CLI prints it), and it matches
// ErrNotFound.
type notFoundError struct{ msg string }

func (e *notFoundError) Error() string { return e.msg }

func (e *notFoundError) Unwrap() error { return ErrNotFound }

func notFound(format string, args ...any) error {
	return &notFoundError{msg: fmt.Sprintf(format, args...)}
}
