package executor

import (
	"errors"
	"fmt"

	"github.com/orbitrun/orbit/interpreter"
)

// Sentinel errors.
var (
	// ErrInvalidJob, ErrJobDisabled and ErrNotAList are the interpreter's
	// (see package interpreter).
	ErrInvalidJob  = interpreter.ErrInvalidJob
	ErrJobDisabled = interpreter.ErrJobDisabled
	ErrNotAList    = interpreter.ErrNotAList

	// ErrNotRetryable is returned by NewRetryRequest for a run that cannot
	// be retried as asked: not finished yet, or --from a step it has not
	// or whose earlier steps did not succeed. It also matches
	// events.ErrInvalidRequest.
	ErrNotRetryable = errors.New("run cannot be retried")

	// ErrNotResumable is returned by ResumeRun for a run that cannot be
	// resumed as asked: not budget_exhausted, or a budget not above what
	// it spent. It also matches events.ErrInvalidRequest.
	ErrNotResumable = errors.New("run cannot be resumed")

	// ErrNotWaiting is returned by Signal for a run that is not waiting for
	// the signal. It also matches events.ErrInvalidRequest.
	ErrNotWaiting = errors.New("run is not waiting for that signal")
)

// refusal is a request refused for a reason a user reads: its message is
// the reason alone, and it matches each of its kinds with errors.Is.
type refusal struct {
	msg   string
	kinds []error
}

func (r *refusal) Error() string   { return r.msg }
func (r *refusal) Unwrap() []error { return r.kinds }

// refuse builds a refusal of the given kinds.
func refuse(kinds []error, format string, args ...any) error {
	return &refusal{msg: fmt.Sprintf(format, args...), kinds: kinds}
}
