package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/engine"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/executor"
)

// Exit codes (DESIGN §7).
const (
	exitOK          = 0
	exitUnsuccess   = 1
	exitUsage       = 2
	exitUnavailable = 3
	// exitInterrupted ends a command stopped by SIGINT (128 + 2).
	exitInterrupted = 130
)

// exitError carries an exit code. A nil err means the message was already
// printed (or there is none).
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

func usageErr(format string, args ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, args...)}
}

// unsuccessful ends the command with exit code 1 without another message.
var unsuccessful = &exitError{code: exitUnsuccess}

// exit prints err (if any) and maps it to an exit code.
func (a *app) exit(err error) int {
	if err == nil {
		return exitOK
	}
	code := codeFor(err)
	var ee *exitError
	if errors.As(err, &ee) && ee.err == nil {
		return ee.code
	}
	lines := strings.Split(strings.TrimRight(err.Error(), "\n"), "\n")
	for i, line := range lines {
		lines[i] = clipTo(line, maxLineBytes)
	}
	fmt.Fprintln(a.stderr, "orbit: "+strings.Join(lines, "\n  "))
	return code
}

// maxLineBytes bounds a line of an error message: a value the user gave
// (a 100 KB id) or one the engine names comes back clipped, never whole.
const maxLineBytes = 1024

func codeFor(err error) int {
	var ee *exitError
	switch {
	case errors.As(err, &ee):
		return ee.code
	case errors.Is(err, assets.ErrInvalid), errors.Is(err, assets.ErrNotFound),
		errors.Is(err, executor.ErrInvalidJob), errors.Is(err, executor.ErrJobDisabled),
		errors.Is(err, events.ErrInvalidRequest), errors.Is(err, events.ErrNotFound), errors.Is(err, events.ErrNotPermitted):
		return exitUsage
	case errors.Is(err, events.ErrUnavailable), errors.Is(err, events.ErrStoreFull), errors.Is(err, engine.ErrAlreadyRunning):
		return exitUnavailable
	case errors.Is(err, engine.ErrLogLost), errors.Is(err, events.ErrLogMissing):
		return exitUnavailable
	case errors.Is(err, events.ErrTokenEmbedded), errors.Is(err, events.ErrAddressInUse):
		return exitUsage
	case errors.Is(err, events.ErrEngineFailed):
		// The engine took the request and failed at it: not the user's
		// input (2), and the engine was there to answer (not 3).
		return exitUnsuccess
	}
	return exitUsage
}
