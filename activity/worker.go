package activity

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/orbitrun/orbit/agent"
	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/groundhog"
	"github.com/orbitrun/orbit/internal/failpoint"
	"github.com/orbitrun/orbit/internal/lease"
	"github.com/orbitrun/orbit/internal/proc"
	"github.com/orbitrun/orbit/internal/sandbox"
	"github.com/orbitrun/orbit/interpreter"
)

// WorkerConfig configures a Worker.
type WorkerConfig struct {
	// Log is the event log commands come from and events go to.
	Log *events.Log
	// Engine identifies the worker in activity.started events and, under
	// step protocol 3, in the step.finished of an execution.
	Engine string
	// Concurrency bounds the activities of each type running at once
	// (defaults: shell 8, deterministic 64, agent_loop 4, groundhog 2).
	Concurrency map[string]int
	// AckWait is how long a step's worker may go without a sign of life
	// before another takes the step over: the TTL of its step lease, which
	// the worker renews every third of it (default 30s). On an embedded
	// store it is also the command's ack wait; on a cluster that is
	// shorter (see deliveryWait).
	AckWait time.Duration
	// DecisionWait bounds how long a command's first delivery waits for
	// its step.started to be stored (default 10s); see Worker.
	DecisionWait time.Duration
	// Settings returns the filesystem profiles, provider settings and
	// delivery bound as they are now: each delivery and step reads them
	// (nil: every default).
	Settings func() Settings
	// Env looks up environment variables for agent loops (provider keys,
	// ORBIT_REPLAY_FIXTURE); nil means the process environment.
	Env func(name string) (string, bool)
	// Actions are the deterministic actions provided from above the
	// executor (see Action), by name; their names must also be declared
	// (Declare) for jobs that use them to validate.
	Actions map[string]Action
	// Tasks binds agent steps to the task their input names (nil: none
	// is bound); see TaskBinder.
	Tasks TaskBinder
	// GroundhogMemory returns a task's GroundhogMemory view (JSON),
	// reflecting at least every event up to minSeq; groundhog steps build
	// their prompts from it alone.
	GroundhogMemory func(ctx context.Context, taskID string, minSeq uint64) (json.RawMessage, error)
	// GroundhogCLI runs the attempts of groundhog activities on backend
	// cli (nil: such a step fails without starting an attempt).
	GroundhogCLI *groundhog.CLIBackend
	// TaskMCP gives a CLI agent (claude_code, codex) of an agent step bound
	// to a task the orbit MCP server scoped by the step's task token, so
	// that it records its execution summary with the server's
	// task_summary: its configuration for the executor's output, and how
	// to remove what was written for it. Nil gives none (the agent may
	// still run orbit task update --summary with the token).
	TaskMCP func(output, taskID, token string) (*agent.CLIMCP, func(), error)
	// AgentSandbox is what the CLI agents of agent steps do not see
	// (agent.CLIConfig Sandbox); nil: they see what the engine's user can.
	AgentSandbox *sandbox.Policy
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
	if c.DecisionWait == 0 {
		c.DecisionWait = 10 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// Worker executes step commands. For each command it records
// activity.started where the run's step protocol asks for it, runs the
// activity, records the step's events and step.finished, and only then
// acknowledges the command: a crash anywhere before the ack redelivers it. A redelivered command whose step already
// finished is acknowledged without running anything.
//
// IMPORTANT: a command runs only if the log holds the step.started of its
// run, step and attempt: the decision it carries out. A signed command
// without one (none within DecisionWait of its first delivery) is never
// run; it is dead-lettered as integrity.rejected once its run is over or
// if the run was never requested.
type Worker struct {
	cfg WorkerConfig
	log *slog.Logger

	// before is the last command sequence stored before this worker started
	// on an embedded store; commands up to it may have been delivered to a
	// previous engine (see events.ConsumerSpec.Reset).
	before uint64

	locks *locks

	// scopes keeps the fan-outs' scope inputs that items' inputs by
	// reference were read from last.
	scopes scopeCache

	// started holds the step.started events appended since Run began.
	started *startedFeed

	mu            sync.Mutex
	inFlight      map[string]bool                               // command ids being executed by this worker
	running       map[string]map[string]context.CancelCauseFunc // run → command → stop
	cancelledRuns map[string]bool                               // runs with a cancel request
	pausedNow     map[string]bool                               // runs paused with --now, until unpaused
}

// NewWorker returns a worker; Run starts it.
func NewWorker(cfg WorkerConfig) *Worker {
	cfg.setDefaults()
	return &Worker{
		cfg:           cfg,
		log:           cfg.Logger.With("component", "worker"),
		inFlight:      make(map[string]bool),
		locks:         newLocks(cfg.Log),
		running:       make(map[string]map[string]context.CancelCauseFunc),
		cancelledRuns: make(map[string]bool),
		pausedNow:     make(map[string]bool),
	}
}

// settings returns the worker's Settings as they are now.
func (w *Worker) settings() Settings { return CurrentSettings(w.cfg.Settings) }

// runners maps activity types to what executes them.
var runners = map[string]func(ctx context.Context, w *Worker, ex *execution) (any, error){
	assets.TypeShell: func(ctx context.Context, w *Worker, ex *execution) (any, error) {
		return (&shellRun{cmd: ex.cmd, log: w.cfg.Log, ready: ex.ready, last: ex.last, sandbox: w.cfg.AgentSandbox}).run(ctx)
	},
	assets.TypeDeterministic: runAction,
	assets.TypeAgentLoop: func(ctx context.Context, w *Worker, ex *execution) (any, error) {
		return (&agentStep{w: w, cmd: ex.cmd, emit: ex.emit, last: ex.last}).run(ctx)
	},
	assets.TypeGroundhog: func(ctx context.Context, w *Worker, ex *execution) (any, error) {
		return w.runGroundhog(ctx, ex.cmd)
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
//
// A full disk pauses the worker: its writes wait for space.
func (w *Worker) Run(ctx context.Context) error {
	err := w.run(events.WaitForSpace(ctx))
	if ctx.Err() != nil {
		return nil // stopped while starting: not a failure
	}
	return err
}

func (w *Worker) run(ctx context.Context) error {
	reset := w.cfg.Log.Embedded()
	if reset {
		before, err := w.cfg.Log.CommandsLastSeq(ctx, interpreter.CmdStepPrefix+">")
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
	started, err := followStarted(ctx, w.cfg.Log, w.log)
	if err != nil {
		cancels.Stop()
		return err
	}
	w.started = started
	stops = append(stops, started)
	// The consumers stop first: their Stop waits for the running handlers,
	// which use the feeds.
	defer func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i].Stop()
		}
	}()
	for typ := range runners {
		// Engines sharing a cluster share each type's consumer: each
		// takes commands only into its own free slots, by turns with the
		// others (events.ConsumerSpec.Concurrency).
		stop, err := w.cfg.Log.Consume(ctx, events.ConsumerSpec{
			Durable:     "worker-" + typ,
			Command:     interpreter.CmdStepPrefix + typ + ".>",
			AckWait:     w.deliveryWait(),
			MaxDeliver:  -1, // bounded by Settings.MaxDeliver starts, counted in the log
			Concurrency: w.cfg.Concurrency[typ],
			Reset:       reset,
		}, func(cmd *events.Command) { w.handle(ctx, cmd) })
		if err != nil {
			return err
		}
		stops = append(stops, stop)
	}
	<-ctx.Done()
	return nil
}

func (w *Worker) handle(ctx context.Context, c *events.Command) {
	var cmd interpreter.StepCommand
	if err := c.Decode(&cmd); err != nil || cmd.RunID == "" || cmd.StepKey == "" {
		w.log.Error("dropping malformed step command", "id", c.ID, "err", err)
		_ = c.Term()
		return
	}
	if !w.claim(c.ID) {
		return // a redelivery of a command this worker is executing right now
	}
	defer w.unclaim(c.ID)
	// From here until the command's end the delivery is confirmed, so
	// that only one that never reached a worker waits out the ack wait.
	cctx, stopConfirming := context.WithCancel(ctx)
	defer stopConfirming()
	go w.confirm(cctx, c)
	finishedID := interpreter.StepEventID(events.StepFinished, cmd.RunID, cmd.StepKey, cmd.Attempt)
	redelivered := c.Delivery > 1 || c.StreamSeq <= w.before || cmd.Resent
	rec, err := w.decision(ctx, c, &cmd, finishedID, redelivered)
	switch {
	case err != nil:
		w.retryLater(c, err)
		return
	case rec.finished:
		w.ack(ctx, c)
		return
	case !rec.started:
		w.orphan(ctx, c, &cmd)
		return
	case rec.starts >= w.settings().MaxDeliver:
		w.deadLetter(ctx, c, &cmd, finishedID, rec.starts)
		return
	}
	ls := w.stepLease(&cmd)
	if err := ls.Try(ctx); err != nil {
		var held *lease.HeldError
		switch {
		case errors.As(err, &held):
			// Its holder renews it while it runs the step: ask again
			// once it would have lapsed, which it does a TTL after its
			// holder's last sign of life.
			_ = c.Nak(max(time.Until(held.Until), w.deliveryWait()))
		case errors.Is(err, events.ErrConflict):
			_ = c.Nak(w.cfg.AckWait / 2) // another worker took it just now: let it finish
		default:
			w.retryLater(c, err)
		}
		return
	}
	// From here until the step's end is stored the lease is renewed, even
	// while writes wait for disk space.
	pctx, stopRenewing := context.WithCancel(ctx)
	defer stopRenewing()
	go w.renew(pctx, ls)
	// A fan-out item's input by reference is read before anything reads
	// the input; one that cannot be read fails the attempt, without
	// running it.
	unresolved := w.resolveInput(ctx, &cmd)
	var failure *interpreter.Failure
	if unresolved != nil && !errors.As(unresolved, &failure) {
		_ = ls.Release(ctx)
		w.retryLater(c, fmt.Errorf("reading the item's input: %w", unresolved))
		return
	}
	emit := func(ctx context.Context, typ string, payload any) error {
		_, err := w.cfg.Log.Append(ctx, stepEvent(&cmd, typ, ""), payload)
		return err
	}
	// activity.started records that an execution began, and is stored
	// before one with effects outside the log runs (a shell command, an
	// agent, Groundhog, an External action), so that every such execution
	// has its record, and before any redelivered one, whose starts bound a
	// command that keeps failing and mark a possible repeat. Any other
	// deterministic action's effects are idempotent and stay in Orbit's
	// store (events, the locks): under step protocols 1 and 2 its start is
	// stored together with its end, and from 3 on it has none (its
	// step.finished names the worker and delivery).
	//
	// From step protocol 5 on, on an embedded store, a first execution has
	// none whatever its activity: its step.started was found in the log
	// before it runs, this engine is the only worker, and its
	// step.finished names the worker and delivery. On a shared server the
	// start names the engine that took the command, which an auditor
	// needs if that engine dies mid-step.
	//
	// A shell step waits for it at its fork, after everything else its
	// start does (its checks, its environment, its cgroup): the program
	// still runs only once its record is stored.
	outside := cmd.Activity.Type != assets.TypeDeterministic || w.cfg.Actions[cmd.Activity.Action].External
	merged := cmd.Protocol >= 3
	alone := cmd.Protocol >= 5 && w.cfg.Log.Embedded() && !redelivered
	atFork := cmd.Activity.Type == assets.TypeShell
	ex := &execution{cmd: &cmd, emit: emit}
	var started *events.PendingAppend
	if unresolved == nil && (!merged || outside || redelivered) && !alone {
		started, err = w.cfg.Log.AppendAsync(ctx, stepEvent(&cmd, events.ActivityStarted, ""), events.ActivityStartedData{
			Attempt: cmd.Attempt, ActivityType: cmd.Activity.Type, Worker: w.cfg.Engine,
			Delivery: c.Delivery, Redelivered: redelivered,
		})
		switch {
		case err != nil:
		case atFork:
			ex.ready = func() error {
				if _, err := started.Wait(ctx); err != nil {
					return &notRecorded{err}
				}
				return nil
			}
		case redelivered || outside:
			_, err = started.Wait(ctx)
		}
	}
	if err != nil {
		_ = ls.Release(ctx)
		w.retryLater(c, err)
		return
	}

	failpoint.Hit("worker-before-activity")
	w.resolveSecrets(&cmd)
	began := time.Now()
	output, err := any(nil), unresolved
	if unresolved == nil {
		output, err = w.execute(ls.Within(ctx), c, ex)
	}
	failpoint.Hit("worker-after-side-effect")
	if ctx.Err() != nil {
		_ = ls.Release(context.WithoutCancel(ctx))
		_ = c.Nak(0) // the engine is stopping: leave the step to the next one
		return
	}
	var nr *notRecorded
	if errors.As(err, &nr) {
		// Its activity.started was not stored, so it did not run.
		_ = ls.Release(ctx)
		w.retryLater(c, nr.err)
		return
	}
	if !ls.Held(ctx) {
		// Another worker took the step over while this one was silent: its
		// copy is the one that counts. This late result is dropped; the
		// record of what its activity did outside the log is kept.
		w.log.Warn("step lease lost while running; result dropped", "run", cmd.RunID, "step", cmd.StepKey, "attempt", cmd.Attempt)
		if err := w.appendAll(ctx, started, ex.records); err != nil {
			w.log.Warn("recording a dropped step's activity", "run", cmd.RunID, "step", cmd.StepKey, "err", err)
		}
		return
	}
	elapsed := time.Since(began).Milliseconds()
	state := events.StateSuccess
	var info *events.ErrorInfo
	if err != nil {
		info = interpreter.ErrorInfo(err)
		info.StepKey = cmd.StepKey
		state = interpreter.FailedState(info)
		output = nil
	}
	finished := events.StepFinishedData{Attempt: cmd.Attempt, State: state, Output: output, Error: info, DurationMS: elapsed}
	end := ex.records
	if merged {
		finished.Worker, finished.Delivery = w.cfg.Engine, c.Delivery
	} else {
		end = append(end, endEvent{stepEvent(&cmd, events.ActivityFinished, ""), events.ActivityFinishedData{
			Attempt: cmd.Attempt, State: state, DurationMS: elapsed, Error: info}})
	}
	end = append(end, endEvent{stepEvent(&cmd, events.StepFinished, finishedID), finished})
	if err := w.appendAll(ctx, started, end); err != nil {
		if ctx.Err() != nil {
			_ = ls.Release(context.WithoutCancel(ctx))
			_ = c.Nak(0)
			return
		}
		w.retryLater(c, err)
		return
	}
	failpoint.Hit("worker-after-finished")
	// A lost ack only redelivers the command, and a redelivered command of
	// a finished step is acknowledged without running.
	if err := c.AckNoWait(); err != nil {
		w.log.Warn("acking step command", "id", c.ID, "err", err)
	}
	_ = ls.Release(ctx)
}

// notRecorded is the error of an activity that did not begin because its
// activity.started could not be stored: the attempt did not run, and its
// command is left for redelivery.
type notRecorded struct{ err error }

func (e *notRecorded) Error() string { return "recording the activity's start: " + e.err.Error() }

func (e *notRecorded) Unwrap() error { return e.err }

// endEvent is one of the events that record the end of a step attempt.
type endEvent struct {
	ev      events.Event
	payload any
}

// appendAll appends the events that end a step attempt without waiting for
// each, in order, then waits for them and for its activity.started, if it
// has one. In strict mode they reach the group commit one after the
// other, so they are stored in one of its rounds or in two that follow
// each other (see runs.md, "Where a shell step's time goes", for what an
// error among them leaves).
func (w *Worker) appendAll(ctx context.Context, started *events.PendingAppend, end []endEvent) error {
	var pending []*events.PendingAppend
	if started != nil {
		pending = append(pending, started)
	}
	for _, e := range end {
		p, err := w.cfg.Log.AppendAsync(ctx, e.ev, e.payload)
		if err != nil {
			return err
		}
		pending = append(pending, p)
	}
	for _, p := range pending {
		if _, err := p.Wait(ctx); err != nil {
			return err
		}
	}
	return nil
}

// stepLease returns the lease a step attempt runs under. On an embedded
// store there is one engine and so one worker: nothing can run the step
// alongside it, and the lease is a no-op (it costs writes to the store).
func (w *Worker) stepLease(cmd *interpreter.StepCommand) *lease.Lease {
	if w.cfg.Log.Embedded() {
		return &lease.Lease{}
	}
	return &lease.Lease{KV: w.cfg.Log.Leases(), Key: stepLeaseKey(cmd), TTL: w.cfg.AckWait, Engine: w.cfg.Engine,
		Scope: proc.NewScope(), Fence: true}
}

// stepLeaseKey names the lease of cmd's step attempt in the leases bucket.
func stepLeaseKey(cmd *interpreter.StepCommand) string {
	sum := sha256.Sum256([]byte(cmd.RunID + "|" + cmd.StepKey + "|" + strconv.Itoa(cmd.Attempt)))
	return "step." + hex.EncodeToString(sum[:16])
}

// execution is one run of a command's activity.
type execution struct {
	cmd  *interpreter.StepCommand
	emit emitFunc
	// ready, when set, waits until the execution's activity.started is
	// stored; the activity calls it right before its effect outside the
	// log begins (a shell step's fork) and does not begin it on an error,
	// which it returns as it is (a *notRecorded).
	ready func() error
	// records are the events the activity made at its very end (a shell
	// step's shell.exited, an agent step's agent.session), which the worker appends, in order, with the
	// step's step.finished instead of waiting for each on its own.
	records []endEvent
}

// last records an event the activity makes as it ends: the worker sends
// it right before the step's step.finished and awaits the two together
// (see Worker.handle; an engine stopping mid-step stores neither).
func (ex *execution) last(typ string, payload any) {
	ex.records = append(ex.records, endEvent{stepEvent(ex.cmd, typ, ""), payload})
}

// deadLetter ends a step attempt whose command was delivered
// Settings.MaxDeliver times without finishing (its worker keeps dying on it): the
// attempt fails, is recorded as dead-lettered, and its command is removed.
func (w *Worker) deadLetter(ctx context.Context, c *events.Command, cmd *interpreter.StepCommand, finishedID string, starts int) {
	info := &events.ErrorInfo{Kind: events.KindDeadLetter, StepKey: cmd.StepKey, Message: fmt.Sprintf(
		"started %d times without finishing (engine.max_deliveries is %d): dead-lettered, not run again", starts, w.settings().MaxDeliver)}
	if _, err := w.cfg.Log.Append(ctx, stepEvent(cmd, events.StepDeadLettered, ""), events.StepDeadLetteredData{
		Attempt: cmd.Attempt, Deliveries: starts, Command: c.Subject,
	}); err != nil {
		w.retryLater(c, err)
		return
	}
	if _, err := w.cfg.Log.Append(ctx, stepEvent(cmd, events.StepFinished, finishedID), events.StepFinishedData{
		Attempt: cmd.Attempt, State: events.StateFailed, Error: info,
	}); err != nil {
		w.retryLater(c, err)
		return
	}
	w.log.Error("step dead-lettered", "run", cmd.RunID, "step", cmd.StepKey, "attempt", cmd.Attempt, "starts", starts)
	w.ack(ctx, c)
}

// Causes with which an activity's context ends early.
var (
	errRunCancelled = errors.New("the run was cancelled")
	errRunPaused    = errors.New("the run was paused with --now")
	errStepTimeout  = errors.New("the step timed out")
)

// execute runs the activity of a command under its time limit, signalling
// progress meanwhile, and stops it if its run is cancelled. A cancelled or
// timed-out activity comes back as a failure of that kind.
func (w *Worker) execute(ctx context.Context, c *events.Command, ex *execution) (any, error) {
	cmd := ex.cmd
	actx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if stopped := w.track(cmd.RunID, c.ID, cancel); stopped != nil {
		return nil, stopped
	}
	defer w.untrack(cmd.RunID, c.ID)
	if cmd.Activity.Type != assets.TypeShell && cmd.Timeout > 0 {
		// Shell steps enforce their own limit, to kill the process group.
		var stop context.CancelFunc
		actx, stop = context.WithTimeoutCause(actx, time.Duration(cmd.Timeout)*time.Second, errStepTimeout)
		defer stop()
	}
	out, err := runners[cmd.Activity.Type](actx, w, ex)
	if err == nil || ctx.Err() != nil {
		return out, err
	}
	switch context.Cause(actx) {
	case errRunCancelled:
		return nil, interpreter.Fail(events.KindCancelled, false, "cancelled while running; stopped")
	case errRunPaused:
		return nil, interpreter.Fail(events.KindPaused, false, "stopped by a pause (--now); it runs again once the run is unpaused")
	case errStepTimeout:
		return nil, interpreter.Fail(events.KindTimeout, true, "timed out after %ds", cmd.Timeout)
	}
	return out, err
}

// track registers a running activity so that a cancellation or a pause
// --now of its run can stop it; while the run is cancelled or paused with
// --now it returns that instead, and the activity does not start.
func (w *Worker) track(runID, cmdID string, cancel context.CancelCauseFunc) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cancelledRuns[runID] {
		return interpreter.Fail(events.KindCancelled, false, "cancelled before it started")
	}
	if w.pausedNow[runID] {
		return interpreter.Fail(events.KindPaused, false, "paused (--now) before it started; it runs once the run is unpaused")
	}
	if w.running[runID] == nil {
		w.running[runID] = map[string]context.CancelCauseFunc{}
	}
	w.running[runID][cmdID] = cancel
	return nil
}

func (w *Worker) untrack(runID, cmdID string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.running[runID], cmdID)
	if len(w.running[runID]) == 0 {
		delete(w.running, runID)
	}
}

// watchCancels follows every run.cancel_requested, run.paused and
// run.unpaused in the log, remembers the cancelled runs and those paused
// with --now, and stops their running activities.
func (w *Worker) watchCancels(ctx context.Context) (*events.Feed, error) {
	feed, err := w.cfg.Log.Follow(ctx, events.FollowOptions{
		Filters: []string{
			events.TypeFilter(events.AggregateRun, events.RunCancelRequested),
			events.TypeFilter(events.AggregateRun, events.RunPaused),
			events.TypeFilter(events.AggregateRun, events.RunUnpaused),
		},
	})
	if err != nil {
		return nil, err
	}
	go func() {
		for ev := range feed.Events() {
			w.mu.Lock()
			switch ev.Type {
			case events.RunCancelRequested:
				w.cancelledRuns[ev.RunID] = true
				w.stopRun(ev.RunID, errRunCancelled)
			case events.RunPaused:
				var d events.RunPausedData
				if err := ev.Decode(&d); err == nil && d.Now {
					w.pausedNow[ev.RunID] = true
					w.stopRun(ev.RunID, errRunPaused)
				}
			case events.RunUnpaused:
				delete(w.pausedNow, ev.RunID)
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

// stopRun stops the running activities of a run; w.mu is held.
func (w *Worker) stopRun(runID string, cause error) {
	for _, cancel := range w.running[runID] {
		cancel(cause)
	}
}

// stepEvent is the envelope of an event about the step a command is for.
func stepEvent(cmd *interpreter.StepCommand, typ, id string) events.Event {
	return events.Event{ID: id, Type: typ, RunID: cmd.RunID, Job: cmd.Job, StepKey: cmd.StepKey, ParentID: cmd.StartedID}
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

// clusterDeliveryWait is the ack wait of step commands on a cluster. A
// command the server delivered through a node that died with it on its
// way never reaches a worker, and the server, which counts it delivered,
// gives it to a worker again only after its ack wait: engine.ack_wait_seconds
// (30 s) made a node's loss cost half a minute. A worker that has the
// command confirms it every third of this (confirm) for as long as it
// handles it, so a short wait redelivers only what no worker has; what
// keeps a live worker's step from running twice is its step lease, whose
// TTL stays engine.ack_wait_seconds.
const clusterDeliveryWait = 5 * time.Second

// deliveryWait is the ack wait of step commands: AckWait on an embedded
// store, where the server is in the engine's process and nothing is lost
// on the way; no more than clusterDeliveryWait on an external server (a
// cluster, or one server that engines share, whose connections can drop
// a delivery as well).
func (w *Worker) deliveryWait() time.Duration {
	if w.cfg.Log.Embedded() {
		return w.cfg.AckWait
	}
	return min(w.cfg.AckWait, clusterDeliveryWait)
}

// confirm keeps a command from being redelivered while the worker handles
// it: the server hears from the worker every third of the ack wait.
func (w *Worker) confirm(ctx context.Context, c *events.Command) {
	every(ctx, w.deliveryWait()/3, func() { _ = c.InProgress() })
}

// renew keeps a step's lease alive while the step is handled.
func (w *Worker) renew(ctx context.Context, ls *lease.Lease) {
	every(ctx, w.cfg.AckWait/3, func() { _ = ls.Renew(ctx) })
}

// every calls f every interval until ctx ends.
func every(ctx context.Context, interval time.Duration, f func()) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			f()
		}
	}
}

func (w *Worker) ack(ctx context.Context, c *events.Command) {
	if err := c.Ack(ctx); err != nil && !errors.Is(err, context.Canceled) {
		w.log.Warn("acking step command", "id", c.ID, "err", err)
	}
}

// retryLater leaves a command for redelivery, after a delay that grows
// with its deliveries (never a hot loop).
func (w *Worker) retryLater(c *events.Command, err error) {
	delay := min(time.Second<<min(max(c.Delivery-1, 0), 5), 30*time.Second)
	w.log.Warn("step command will be redelivered", "id", c.ID, "in", delay, "err", err)
	_ = c.Nak(delay)
}
