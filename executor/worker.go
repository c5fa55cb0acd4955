package executor

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/executor/agent"
	"github.com/orbitrun/orbit/internal/failpoint"
)

// WorkerConfig configures a Worker.
type WorkerConfig struct {
	// Log is the event log commands come from and events go to.
	Log *events.Log
	// Engine identifies the worker in activity.started events.
	Engine string
	// Concurrency bounds the activities of each type running at once
	// (defaults: shell 8, deterministic 64, agent_loop 4, groundhog 2).
	Concurrency map[string]int
	// AckWait is how long a command may go without a progress signal before
	// it is redelivered (default 30s); running activities signal progress
	// every third of it.
	AckWait time.Duration
	// MaxDeliver bounds deliveries of one command (default 10).
	MaxDeliver int
	// FSProfiles are the named filesystem profiles of agent tools.
	FSProfiles map[string]agent.FSProfile
	// Providers configure HTTP providers of agent loops by name.
	Providers map[string]ProviderSettings
	// Env looks up environment variables for agent loops (provider keys,
	// ORBIT_REPLAY_FIXTURE); nil means the process environment.
	Env func(name string) (string, bool)
	// GroundhogMemory returns a task's GroundhogMemory view (JSON),
	// reflecting at least every event up to minSeq; groundhog steps build
	// their prompts from it alone.
	GroundhogMemory func(ctx context.Context, taskID string, minSeq uint64) (json.RawMessage, error)
	// Logger receives operational messages (nil discards them).
	Logger *slog.Logger
}

func (c *WorkerConfig) setDefaults() {
	if c.Engine == "" {
		c.Engine = events.NewID()
	}
	defaults := map[string]int{assets.TypeShell: 8, assets.TypeDeterministic: 64, assets.TypeAgentLoop: 4, assets.TypeGroundhog: 2}
	if c.Concurrency == nil {
		c.Concurrency = map[string]int{}
	}
	for typ, n := range defaults {
		if c.Concurrency[typ] == 0 {
			c.Concurrency[typ] = n
		}
	}
	if c.AckWait == 0 {
		c.AckWait = 30 * time.Second
	}
	if c.MaxDeliver == 0 {
		c.MaxDeliver = 10
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// Worker executes step commands. For each command it records
// activity.started, runs the activity, records the step's events and
// step.finished, and only then acknowledges the command: a crash anywhere
// before the ack redelivers it. A redelivered command whose step already
// finished is acknowledged without running anything.
type Worker struct {
	cfg WorkerConfig
	log *slog.Logger
	wg  sync.WaitGroup

	// before is the last command sequence stored before this worker started
	// on an embedded store; commands up to it may have been delivered to a
	// previous engine (see events.ConsumerSpec.Reset).
	before uint64

	mu            sync.Mutex
	inFlight      map[string]bool                               // command ids being executed by this worker
	running       map[string]map[string]context.CancelCauseFunc // run → command → stop
	cancelledRuns map[string]bool                               // runs with a cancel request
}

// NewWorker returns a worker; Run starts it.
func NewWorker(cfg WorkerConfig) *Worker {
	cfg.setDefaults()
	return &Worker{
		cfg:           cfg,
		log:           cfg.Logger.With("component", "worker"),
		inFlight:      make(map[string]bool),
		running:       make(map[string]map[string]context.CancelCauseFunc),
		cancelledRuns: make(map[string]bool),
	}
}

// runners maps activity types to what executes them.
var runners = map[string]func(ctx context.Context, w *Worker, cmd *stepCommand, emit emitFunc) (any, error){
	assets.TypeShell: func(ctx context.Context, w *Worker, cmd *stepCommand, emit emitFunc) (any, error) {
		return (&shellRun{cmd: cmd, log: w.cfg.Log, emit: emit}).run(ctx)
	},
	assets.TypeDeterministic: func(ctx context.Context, _ *Worker, cmd *stepCommand, _ emitFunc) (any, error) {
		return runAction(ctx, cmd)
	},
	assets.TypeAgentLoop: func(ctx context.Context, w *Worker, cmd *stepCommand, emit emitFunc) (any, error) {
		return (&agentStep{w: w, cmd: cmd, emit: emit}).run(ctx)
	},
	assets.TypeGroundhog: func(ctx context.Context, w *Worker, cmd *stepCommand, _ emitFunc) (any, error) {
		return w.runGroundhog(ctx, cmd)
	},
}

type emitFunc func(ctx context.Context, typ string, payload any) error

// Run consumes step commands until ctx ends. Activities still running then
// are stopped and their commands left for redelivery.
//
// On an embedded store the worker is the only one, so commands a killed
// engine had taken are redelivered at once rather than after their ack
// wait: the consumers are reset, and every command stored before the reset
// is checked against the log before it runs.
func (w *Worker) Run(ctx context.Context) error {
	err := w.run(ctx)
	if ctx.Err() != nil {
		return nil // stopped while starting: not a failure
	}
	return err
}

func (w *Worker) run(ctx context.Context) error {
	reset := w.cfg.Log.Embedded()
	if reset {
		before, err := w.cfg.Log.CommandsLastSeq(ctx)
		if err != nil {
			return err
		}
		w.before = before
	}
	cancels, err := w.watchCancels(ctx)
	if err != nil {
		return err
	}
	var stops []events.Stopper
	stops = append(stops, cancels)
	defer func() {
		for _, s := range stops {
			s.Stop()
		}
		w.wg.Wait()
	}()
	for typ := range runners {
		stop, err := w.cfg.Log.Consume(ctx, events.ConsumerSpec{
			Durable:       "worker-" + typ,
			Command:       cmdStepPrefix + typ + ".>",
			AckWait:       w.cfg.AckWait,
			MaxDeliver:    w.cfg.MaxDeliver,
			MaxAckPending: w.cfg.Concurrency[typ],
			Reset:         reset,
		}, func(cmd *events.Command) {
			w.wg.Add(1)
			go func() {
				defer w.wg.Done()
				w.handle(ctx, cmd)
			}()
		})
		if err != nil {
			return err
		}
		stops = append(stops, stop)
	}
	<-ctx.Done()
	return nil
}

func (w *Worker) handle(ctx context.Context, c *events.Command) {
	var cmd stepCommand
	if err := c.Decode(&cmd); err != nil || cmd.RunID == "" || cmd.StepKey == "" {
		w.log.Error("dropping malformed step command", "id", c.ID, "err", err)
		_ = c.Term()
		return
	}
	if !w.claim(c.ID) {
		return // a redelivery of a command this worker is executing right now
	}
	defer w.unclaim(c.ID)
	finishedID := stepEventID(events.StepFinished, cmd.RunID, cmd.StepKey, cmd.Attempt)
	if c.Delivery > 1 || c.StreamSeq <= w.before {
		done, err := w.finished(ctx, &cmd, finishedID)
		if err != nil {
			w.retryLater(c, err)
			return
		}
		if done {
			w.ack(ctx, c)
			return
		}
	}
	emit := func(ctx context.Context, typ string, payload any) error {
		_, err := w.cfg.Log.Append(ctx, w.stepEvent(&cmd, typ, ""), payload)
		return err
	}
	// activity.started is sent without waiting: it is stored before anything
	// this worker appends later, and is confirmed with the step's end.
	started, err := w.cfg.Log.AppendAsync(w.stepEvent(&cmd, events.ActivityStarted, ""), events.ActivityStartedData{
		Attempt: cmd.Attempt, ActivityType: cmd.Activity.Type, Worker: w.cfg.Engine,
		Delivery: c.Delivery, Redelivered: c.Delivery > 1 || c.StreamSeq <= w.before,
	})
	if err != nil {
		w.retryLater(c, err)
		return
	}

	failpoint.Hit("worker-before-activity")
	began := time.Now()
	output, err := w.execute(ctx, c, &cmd, emit)
	failpoint.Hit("worker-after-side-effect")
	if ctx.Err() != nil {
		_ = c.Nak(0) // the engine is stopping: leave the step to the next one
		return
	}
	elapsed := time.Since(began).Milliseconds()
	state := events.StateSuccess
	var info *events.ErrorInfo
	if err != nil {
		info = errorInfo(err)
		info.StepKey = cmd.StepKey
		state = failedState(info)
		output = nil
	}
	pending := []*events.PendingAppend{started}
	for _, item := range []struct {
		ev      events.Event
		payload any
	}{
		{w.stepEvent(&cmd, events.ActivityFinished, ""), events.ActivityFinishedData{
			Attempt: cmd.Attempt, State: state, DurationMS: elapsed, Error: info}},
		{w.stepEvent(&cmd, events.StepFinished, finishedID), events.StepFinishedData{
			Attempt: cmd.Attempt, State: state, Output: output, Error: info, DurationMS: elapsed}},
	} {
		p, err := w.cfg.Log.AppendAsync(item.ev, item.payload)
		if err != nil {
			w.retryLater(c, err)
			return
		}
		pending = append(pending, p)
	}
	for _, p := range pending {
		if _, err := p.Wait(ctx); err != nil {
			w.retryLater(c, err)
			return
		}
	}
	failpoint.Hit("worker-after-finished")
	// A lost ack only redelivers the command, and a redelivered command of
	// a finished step is acknowledged without running.
	if err := c.AckNoWait(); err != nil {
		w.log.Warn("acking step command", "id", c.ID, "err", err)
	}
}

// Causes with which an activity's context ends early.
var (
	errRunCancelled = errors.New("the run was cancelled")
	errStepTimeout  = errors.New("the step timed out")
)

// execute runs the activity of a command under its time limit, signalling
// progress meanwhile, and stops it if its run is cancelled. A cancelled or
// timed-out activity comes back as a failure of that kind.
func (w *Worker) execute(ctx context.Context, c *events.Command, cmd *stepCommand, emit emitFunc) (any, error) {
	actx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if !w.track(cmd.RunID, c.ID, cancel) {
		return nil, fail(events.KindCancelled, false, "cancelled before it started")
	}
	defer w.untrack(cmd.RunID, c.ID)
	if cmd.Activity.Type != assets.TypeShell && cmd.Timeout > 0 {
		// Shell steps enforce their own limit, to kill the process group.
		var stop context.CancelFunc
		actx, stop = context.WithTimeoutCause(actx, time.Duration(cmd.Timeout)*time.Second, errStepTimeout)
		defer stop()
	}
	go w.progress(actx, c)
	out, err := runners[cmd.Activity.Type](actx, w, cmd, emit)
	if err == nil || ctx.Err() != nil {
		return out, err
	}
	switch context.Cause(actx) {
	case errRunCancelled:
		return nil, fail(events.KindCancelled, false, "cancelled while running; stopped")
	case errStepTimeout:
		return nil, fail(events.KindTimeout, true, "timed out after %ds", cmd.Timeout)
	}
	return out, err
}

// track registers a running activity so that a cancellation of its run
// can stop it; it reports false when the run is already cancelled.
func (w *Worker) track(runID, cmdID string, cancel context.CancelCauseFunc) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cancelledRuns[runID] {
		return false
	}
	if w.running[runID] == nil {
		w.running[runID] = map[string]context.CancelCauseFunc{}
	}
	w.running[runID][cmdID] = cancel
	return true
}

func (w *Worker) untrack(runID, cmdID string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.running[runID], cmdID)
	if len(w.running[runID]) == 0 {
		delete(w.running, runID)
	}
}

// watchCancels follows every run.cancel_requested in the log, remembers the
// cancelled runs and stops their running activities.
func (w *Worker) watchCancels(ctx context.Context) (*events.Feed, error) {
	feed, err := w.cfg.Log.Follow(ctx, events.FollowOptions{
		Filters: []string{events.TypeFilter(events.AggregateRun, events.RunCancelRequested)},
	})
	if err != nil {
		return nil, err
	}
	go func() {
		for ev := range feed.Events() {
			w.mu.Lock()
			w.cancelledRuns[ev.RunID] = true
			for _, cancel := range w.running[ev.RunID] {
				cancel(errRunCancelled)
			}
			w.mu.Unlock()
		}
	}()
	select {
	case <-feed.CaughtUp():
		return feed, nil
	case <-ctx.Done():
		feed.Stop()
		return nil, ctx.Err()
	}
}

// stepEvent is the envelope of an event about the step a command is for.
func (w *Worker) stepEvent(cmd *stepCommand, typ, id string) events.Event {
	return events.Event{ID: id, Type: typ, RunID: cmd.RunID, Job: cmd.Job, StepKey: cmd.StepKey, ParentID: cmd.StartedID}
}

// finished reports whether the step attempt a command is for has already
// finished, by looking for its step.finished event in the run's history.
func (w *Worker) finished(ctx context.Context, cmd *stepCommand, finishedID string) (bool, error) {
	evs, err := w.cfg.Log.Read(ctx, events.FollowOptions{Filters: []string{
		events.EventSubject(events.AggregateRun, cmd.RunID, events.StepFinished),
	}})
	if err != nil {
		return false, err
	}
	for _, ev := range evs {
		if ev.ID == finishedID {
			return true, nil
		}
	}
	return false, nil
}

func (w *Worker) claim(id string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.inFlight[id] {
		return false
	}
	w.inFlight[id] = true
	return true
}

func (w *Worker) unclaim(id string) {
	w.mu.Lock()
	delete(w.inFlight, id)
	w.mu.Unlock()
}

// progress keeps a command from being redelivered while its activity runs.
func (w *Worker) progress(ctx context.Context, c *events.Command) {
	tick := time.NewTicker(w.cfg.AckWait / 3)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			_ = c.InProgress()
		}
	}
}

func (w *Worker) ack(ctx context.Context, c *events.Command) {
	if err := c.Ack(ctx); err != nil && !errors.Is(err, context.Canceled) {
		w.log.Warn("acking step command", "id", c.ID, "err", err)
	}
}

func (w *Worker) retryLater(c *events.Command, err error) {
	w.log.Warn("step command will be redelivered", "id", c.ID, "err", err)
	_ = c.Nak(time.Second)
}
