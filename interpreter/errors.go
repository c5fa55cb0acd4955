package interpreter

import (
	"errors"
	"fmt"

	"github.com/orbitrun/orbit/events"
)

// Sentinel errors.
var (
	// ErrInvalidJob is returned for a job the executor cannot run: an
	// activity type or deterministic action it does not know, or a shape it
	// does not support.
	ErrInvalidJob = errors.New("invalid job")

	// ErrJobDisabled is returned when a disabled job is submitted.
	ErrJobDisabled = errors.New("job is disabled")

	// ErrNotAList is matched by the failure of a fan_out or loop whose items
	// render to a mapping, number or bool: a value that is not a list.
	ErrNotAList = errors.New("not a list")
)

// failure is an error as a step or run records it. Activities return one to
// say how they failed; anything else they return is internal.
type Failure struct{ info events.ErrorInfo }

func (f *Failure) Error() string { return f.info.Message }

// fail builds a failure of the given kind.
func Fail(kind string, retryable bool, format string, args ...any) *Failure {
	return &Failure{info: events.ErrorInfo{Kind: kind, Message: fmt.Sprintf(format, args...), Retryable: retryable}}
}

// errorInfo turns any error into the record the log keeps: a failure keeps
// its kind, anything else is an internal, retryable error.
func ErrorInfo(err error) *events.ErrorInfo {
	var f *Failure
	if errors.As(err, &f) {
		info := f.info
		return &info
	}
	return &events.ErrorInfo{Kind: events.KindInternal, Message: err.Error(), Retryable: true}
}
