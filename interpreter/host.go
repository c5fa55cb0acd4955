package interpreter

import (
	"context"
	"errors"
	"time"

	"github.com/orbitrun/orbit/events"
)

// The seam between the interpreter and the orchestration. The interpreter
// reads its run from a history and makes its decisions through a host: it
// never touches the log, the command queue, the leases bucket or the wall
// clock itself, so that what it decides depends on the job, the input and
// the history alone (see Interpreter).

// History is the part of the log that belongs to one run, as the
// interpreter reads it: every event of the run but the workers' records of
// each execution (see unread). Decision events are found by their derived
// ids.
type History interface {
	// Get returns the event with the given id if the history holds it.
	Get(id string) (events.Event, bool)
	// Last returns the latest event (by sequence) of one of the given
	// types.
	Last(types ...string) (events.Event, bool)
	// Wait blocks until the event with the given id is in the history. It
	// fails with ctx's cause, or when the history stops following the log.
	Wait(ctx context.Context, id string) (events.Event, error)
	// CatchUp blocks until the history holds every event of the run that
	// is in the log now.
	CatchUp(ctx context.Context) error
	// Spent is what the run's agents spent, by the events the history
	// holds: tokens, and the cost in USD.
	Spent() (tokens int64, costUSD float64)
}

// Host carries out the decisions of one run's interpreter: it records
// them in the log, sends the step commands they make, and starts, follows
// and cancels the runs they start. It is the interpreter's clock too.
type Host interface {
	Recorder
	Dispatcher
	Children
	Clock
	// Finished is called once the run's run.finished is stored: the host
	// lets go of what the run held (its lock reservations).
	Finished(ctx context.Context)
	// Failpoint marks a point where a crash test may stop the engine
	// (package internal/failpoint).
	Failpoint(name string)
}

// Recorder stores decision events of the run in the log. Decision events
// have ids derived from what they decide, so storing one twice stores it
// once.
type Recorder interface {
	// Append stores an event and returns once it is stored.
	Append(ctx context.Context, ev events.Event, payload any) error
	// AppendAsync sends an event and returns without waiting for it to be
	// stored; the returned handle waits.
	//
	// IMPORTANT: the events a host sends are stored in the order they
	// were sent, Append's and AppendAsync's alike: a branch's first event
	// sent in its turn is stored in its turn (see turn).
	AppendAsync(ctx context.Context, ev events.Event, payload any) (Stored, error)
}

// Stored is an event sent by AppendAsync, not yet confirmed.
type Stored interface {
	// Wait returns once the event is stored, or why it was not.
	Wait(ctx context.Context) (events.Appended, error)
}

// Dispatcher hands step commands to the workers.
type Dispatcher interface {
	// Send queues the command of a step attempt. Sending the same
	// attempt's command twice queues it once.
	Send(ctx context.Context, cmd *StepCommand) error
	// Queued reports whether the command named name (StepCommandName) is
	// still queued or being worked on.
	Queued(ctx context.Context, name string) (bool, error)
}

// Children are the other runs a run reads, starts, waits for and cancels.
type Children interface {
	// NewID returns a new run id, for a child run; the id is recorded
	// before anything depends on it.
	NewID() string
	// Requested reports whether the log holds run runID's run.requested.
	Requested(ctx context.Context, runID string) (bool, error)
	// Read returns the events of the given types of run runID, in log
	// order (a finished run's, whose history no longer changes).
	Read(ctx context.Context, runID string, types ...string) ([]events.Event, error)
	// Hold lists run child, started by parent, among the live runs below
	// root, unless limit runs are listed already (ErrTreeFull); limit 0
	// lists it whatever the count. A child listed already is left as it
	// is.
	Hold(ctx context.Context, root, parent, child string, limit int) error
	// Submit sends a child run's request.
	Submit(ctx context.Context, req *RunRequest) error
	// FollowEnd follows run runID's run.finished events, those in the log
	// and those to come.
	FollowEnd(ctx context.Context, runID string) (RunFeed, error)
	// CancelChild asks run runID, a child of the run, to cancel because the
	// run was cancelled by cause, as part of its tree cancel and bulk
	// operation (if any).
	CancelChild(ctx context.Context, runID string, cause events.RunCancelRequestedData) error
}

// RunFeed delivers events until it is stopped or fails; *events.Feed is
// one.
type RunFeed interface {
	Events() <-chan events.Event
	Err() error
	Stop()
}

// Clock is the wall clock. The interpreter reads it only to compute a
// time it records in a decision (a retry's not_before, a gate's deadline,
// a duration) and to wait until such a recorded time.
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

// ErrTreeFull is what Hold returns when the tree has its limit of live
// runs.
var ErrTreeFull = errors.New("full")
