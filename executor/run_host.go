package executor

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/orbitrun/orbit/activity"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/failpoint"
	"github.com/orbitrun/orbit/interpreter"
)

// runHost carries out the decisions of one run's interpreter on the
// engine's log (see host): its events are appended to the log, its step
// commands sent on the command queue, its child runs requested and
// counted in their root's tree.
type runHost struct {
	o     *Orchestrator
	runID string
	// hist is the run's history, set before the interpreter runs: the
	// host keeps there the events it appends (see runHistory.keep).
	hist *runHistory
	// sent is set once a step command was sent: a worker may run one of
	// the run's steps (see Finished).
	sent atomic.Bool
}

var (
	_ interpreter.Host    = (*runHost)(nil)
	_ interpreter.RunFeed = (*events.Feed)(nil)
)

// interpreterConfig is the configuration of the interpreter of rc, whose
// host is host.
func (o *Orchestrator) interpreterConfig(rc *runCtl, host *runHost) interpreter.Config {
	return interpreter.Config{
		RunID:       rc.id,
		Job:         rc.job,
		Depth:       rc.depth,
		Root:        rc.root,
		Backend:     rc.backend,
		Traceparent: rc.traceparent,
		Protocol:    rc.protocol,
		Host:        host,
		Engine:      o.cfg.Engine,
		Workspace:   o.cfg.Root,
		Env:         o.cfg.Env,
		Validate:    activity.ValidateJob,
		Jobs:        o.cfg.Jobs,
		Admission:   o.cfg.Admission,
		Limits: func() interpreter.Limits {
			s := activity.CurrentSettings(o.cfg.Settings)
			return interpreter.Limits{MaxChildDepth: s.MaxChildDepth, MaxDescendants: s.MaxDescendants}
		},
		Logger: o.log,
	}
}

// Append appends a decision event and waits until it is stored; the run's
// history keeps it.
func (h *runHost) Append(ctx context.Context, ev events.Event, payload any) error {
	res, err := h.o.cfg.Log.Append(ctx, ev, payload)
	if err == nil {
		h.keep(res)
	}
	return err
}

// AppendAsync appends a decision event without waiting for the store.
// Appends on one Log are stored in the order they were sent.
func (h *runHost) AppendAsync(ctx context.Context, ev events.Event, payload any) (interpreter.Stored, error) {
	p, err := h.o.cfg.Log.AppendAsync(ctx, ev, payload)
	if err != nil {
		return nil, err
	}
	return keptAppend{p, h}, nil
}

// keep records in the run's history an event the log acknowledged, when
// the log knows it as stored.
func (h *runHost) keep(res events.Appended) {
	if res.Stored != nil && h.hist != nil {
		h.hist.keep(*res.Stored)
	}
}

// keptAppend is an append sent by AppendAsync, which the run's history
// keeps once it is stored.
type keptAppend struct {
	*events.PendingAppend
	host *runHost
}

func (k keptAppend) Wait(ctx context.Context) (events.Appended, error) {
	res, err := k.PendingAppend.Wait(ctx)
	if err == nil {
		k.host.keep(res)
	}
	return res, err
}

// Send queues a step command under its attempt's name, with an id derived
// from the attempt: the same attempt's command is queued once.
func (h *runHost) Send(ctx context.Context, cmd *interpreter.StepCommand) error {
	h.sent.Store(true)
	name := interpreter.StepCommandName(cmd.Activity.Type, cmd.RunID, cmd.StepKey, cmd.Attempt)
	return h.o.cfg.Log.Send(ctx, name, interpreter.StepEventID("step.command", cmd.RunID, cmd.StepKey, cmd.Attempt), cmd)
}

// Queued reports whether the named command is still on the queue.
func (h *runHost) Queued(ctx context.Context, name string) (bool, error) {
	return h.o.cfg.Log.Pending(ctx, name)
}

// NewID returns a new event id, which child runs take as their run id.
func (h *runHost) NewID() string { return events.NewID() }

// Requested reports whether the log holds runID's run.requested.
func (h *runHost) Requested(ctx context.Context, runID string) (bool, error) {
	last, err := h.o.cfg.Log.LastMatching(ctx, []string{events.EventSubject(events.AggregateRun, runID, events.RunRequested)})
	return last > 0, err
}

// Read reads the events of the given types of runID.
func (h *runHost) Read(ctx context.Context, runID string, types ...string) ([]events.Event, error) {
	return readRun(ctx, h.o.cfg.Log, runID, types...)
}

// Hold lists child below root in the leases bucket (see descendants.go).
func (h *runHost) Hold(ctx context.Context, root, parent, child string, limit int) error {
	return h.o.holdDescendant(ctx, root, parent, child, limit)
}

// Submit sends a child run's request to the orchestrators.
func (h *runHost) Submit(ctx context.Context, req *RunRequest) error {
	return Submit(ctx, h.o.cfg.Log, req)
}

// FollowEnd follows runID's run.finished events.
func (h *runHost) FollowEnd(ctx context.Context, runID string) (interpreter.RunFeed, error) {
	feed, err := h.o.cfg.Log.Follow(ctx, events.FollowOptions{Filters: []string{events.EventSubject(events.AggregateRun, runID, events.RunFinished)}})
	if err != nil {
		return nil, err
	}
	return feed, nil
}

// CancelChild records the cancel of child run runID that its parent's
// cancel (cause) asks for.
func (h *runHost) CancelChild(ctx context.Context, runID string, cause events.RunCancelRequestedData) error {
	return requestCancel(ctx, h.o.cfg.Log, runID, parentCancelled(h.runID, cause))
}

// Now is the wall clock's time.
func (h *runHost) Now() time.Time { return time.Now() }

// After is time.After.
func (h *runHost) After(d time.Duration) <-chan time.Time { return time.After(d) }

// Finished releases the reservations of the run, which has finished: a
// finished run holds none. (Should this fail, the next reserver finds the
// run finished and takes them back.)
//
// A run none of whose steps went to a worker holds none, and is not looked
// up: a reservation owned by a run is made by one of its steps on a
// worker (locks.reserve, the shipping actions' locks, a Groundhog step's
// workspace; a person's hold on a workspace has an owner of its own). A
// step reaches a worker by a command this host sent, or one an earlier
// interpretation of the run sent, whose step.started was in the log when
// this one read the run's history; a step the interpreter decided (step
// protocol 4) has neither. The look is a read of orbit_locks' record, a
// request to the server at the end of every run of pure steps (W3, issue
// 29).
func (h *runHost) Finished(ctx context.Context) {
	if _, before := h.hist.Last(events.StepStarted); !before && !h.sent.Load() {
		return
	}
	if released, err := activity.NewLocks(h.o.cfg.Log).Release(ctx, h.runID, nil); err != nil {
		h.o.log.Warn("releasing a finished run's reservations", "run", h.runID, "err", err)
	} else if len(released) > 0 {
		h.o.log.Info("released a finished run's reservations", "run", h.runID, "resources", released)
	}
}

// Failpoint is failpoint.Hit.
func (h *runHost) Failpoint(name string) { failpoint.Hit(name) }
