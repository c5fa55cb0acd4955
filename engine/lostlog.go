package engine

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/projector"
)

// lostLogError is ErrLogLost with what was found and expected, and the
// error that found it.
type lostLogError struct {
	msg   string
	cause error
}

func (e *lostLogError) Error() string { return e.msg }

func (e *lostLogError) Unwrap() []error { return []error{ErrLogLost, e.cause} }

// lost is the ErrLogLost for a log found as found, where the views record
// rec; cause is the error that found it.
func (e *Engine) lost(found string, rec projector.LogRecord, cause error) error {
	store := filepath.Join(StateDir(e.cfg.Root), "nats")
	if e.cfg.NATSURL != "" {
		store = "the NATS server at " + e.cfg.NATSURL
	}
	views := filepath.Join(StateDir(e.cfg.Root), "views.db")
	return &lostLogError{cause: cause, msg: fmt.Sprintf(
		"%s: found %s; expected %s, which %s was folded from\n"+
			"restore the log's store (%s) from a copy, with the engine stopped, "+
			"or accept the log as it is with `orbit init --new-log --root %s` "+
			"(views.db is set aside as views.db.lost-<unix time> and the views are rebuilt from the log)",
		ErrLogLost, found, rec, views, store, e.cfg.Root)}
}

// openLogError turns the error of events.Open on views that recorded rec
// into ErrLogLost when the events stream is missing.
func (e *Engine) openLogError(err error, rec projector.LogRecord) error {
	if !errors.Is(err, events.ErrLogMissing) {
		return err
	}
	return e.lost(fmt.Sprintf("no stream %s", events.EventsStream), rec, err)
}

// checkLog refuses a log the views were not folded from, before the engine
// serves anything, and notes the stream's creation time for logLost.
func (e *Engine) checkLog(ctx context.Context) error {
	err := e.proj.CheckLog(ctx)
	var mismatch *projector.MismatchError
	if errors.As(err, &mismatch) {
		return e.lost(mismatch.Found, mismatch.Expected, err)
	}
	if err != nil {
		return err
	}
	e.created, err = e.log.Created(ctx)
	return err
}

// logLost returns ErrLogLost when the events stream is gone or is no
// longer the one the engine opened, nil otherwise (a server that does not
// answer is not a lost log).
func (e *Engine) logLost(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stateCheck)
	defer cancel()
	created, err := e.log.Created(ctx)
	var found string
	switch {
	case errors.Is(err, events.ErrLogMissing):
		found = fmt.Sprintf("no stream %s: it was deleted under the running engine", events.EventsStream)
	case err != nil:
		return nil
	case !created.Equal(e.created):
		found = fmt.Sprintf("stream %s created %s, not the one the engine opened", events.EventsStream, created.Format(time.RFC3339Nano))
		err = projector.ErrLogMismatch
	default:
		return nil
	}
	rec, rerr := e.proj.Recorded()
	if rerr != nil {
		rec = projector.LogRecord{Created: e.created}
	}
	return e.lost(found, rec, err)
}
