package interpreter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
)

// Interpreter executes one run's step tree. It is replay-driven, as a
// Temporal workflow is: every step instance has a deterministic key, and
// before doing anything for an instance it looks in the run's history. What
// finished is returned as recorded; what was dispatched is waited for;
// only what never happened is done now. After a crash the orchestrator runs
// the interpreter again from the top and it continues where the run was.
//
// IMPORTANT: decisions depend only on the job, the input and the history —
// never on the wall clock, randomness or map order — so that running the
// interpreter again makes the same decisions with the same derived ids.
// Where a decision needs the clock (when a retry may start) the decision
// records the time it computed, and a replay reads it back.
type Interpreter struct {
	cfg   Config
	host  Host
	log   *slog.Logger
	runID string
	job   *assets.Job
	depth int
	// root is the run at the top of this run's job.invoke chain: its
	// children count against engine.max_descendants there.
	root string
	// backend is what backend: auto resolved to in job; its children's
	// jobs are looked up resolved the same way.
	backend string
	// traceparent is the root's caller's, passed on to children and, as
	// each step attempt's own, to what the step runs (TRACEPARENT).
	traceparent string
	// env looks up {{ env.NAME }}: the values pinned in run.requested,
	// then the engine's environment.
	env     func(string) (string, bool)
	hist    History
	resumed bool // an earlier engine started this run
	// reuse holds, for a retry with a From step, the old run's outcomes of
	// the top-level steps before From (see reuseStep); retryOf names it.
	reuse   map[string]reused
	retryOf string
	// raise counts the run's budget raises (see ResumeRun), raisedAt is the
	// sequence of the last, and budget the run's budget since: the job's
	// when it has none.
	raise    int
	raisedAt uint64
	budget   *assets.Budget
	// raisedChild is the child run whose resumption reopened this run (the
	// last raise's ChildRunID), and childRaise that child's raise.
	raisedChild string
	childRaise  int

	cancelOnce  sync.Once
	cancelled   chan struct{} // closed when run.cancel_requested arrives
	cancelMsg   string
	cancelCause events.RunCancelRequestedData // its tree cancel and bulk operation are passed on to children

	// pauses are the run's pauses (see pause.go).
	pauses *Pauses

	// encoded keeps steps' outputs as recorded, for the payloads that
	// hold them again (a fan-in, run.finished).
	encoded encodedOutputs
}

// Config is what one run's interpreter is given: the facts of the run's
// request, the engine's answers, and the host that carries out its
// decisions.
type Config struct {
	// RunID, Job, Depth, Root and Backend are the run's request's facts
	// (see events.RunRequestedData).
	RunID   string
	Job     *assets.Job
	Depth   int
	Root    string
	Backend string
	// Traceparent is the W3C traceparent the run's root was requested
	// with (see events.RunRequestedData.Traceparent).
	Traceparent string
	// Protocol is the step protocol the run was requested under
	// (events.RunRequestedData.Protocol, 0 meaning 1): which events its
	// steps record.
	Protocol int
	// Host carries out the run's decisions.
	Host Host
	// Engine identifies this engine in run.started and run.resumed.
	Engine string
	// Workspace is the project directory: the workspace of the steps whose
	// input names none.
	Workspace string
	// Env looks up environment variables beyond those the run pinned.
	Env func(name string) (string, bool)
	// Validate reports what in a job this engine cannot run (an activity
	// type or action it does not know); nil accepts every job.
	Validate func(job *assets.Job) error
	// Jobs looks jobs up for job.invoke, by name and the backend the
	// child runs on; nil: this engine has no job catalog.
	Jobs func(name, backend string) (*assets.Job, error)
	// Admission re-checks an invoke_and_wait's tasks before its child
	// starts (see Admission); nil checks nothing.
	Admission func(ctx context.Context, taskIDs []string, workflow string) (*Admission, error)
	// Limits returns the engine's limits on child runs as they are now.
	Limits func() Limits
	// Logger receives operational messages.
	Logger *slog.Logger
}

// Limits bound the runs a run's job.invoke steps start; the engine
// reloads them from .orbit/config.yaml (engine.max_child_depth,
// engine.max_descendants).
type Limits struct {
	// MaxChildDepth bounds the depth of child runs: a job.invoke that
	// would start a run deeper fails.
	MaxChildDepth int
	// MaxDescendants bounds the live runs below one root run, at any
	// depth: a job.invoke that would start one more fails.
	MaxDescendants int
}

// New returns the interpreter of one run.
func New(cfg Config) *Interpreter {
	root := cfg.Root
	if root == "" {
		root = cfg.RunID
	}
	return &Interpreter{cfg: cfg, host: cfg.Host, log: cfg.Logger, runID: cfg.RunID, job: cfg.Job, depth: cfg.Depth, root: root,
		backend: cfg.Backend, traceparent: cfg.Traceparent, cancelled: make(chan struct{}), pauses: NewPauses()}
}

// Run interprets the run to its end, reading it from hist, and records
// run.finished. It returns without recording anything when ctx ends first
// (the engine is stopping). hist must call Observe with every event as it
// arrives, before it holds it.
func (x *Interpreter) Run(ctx context.Context, hist History) error {
	x.hist = hist
	if err := x.loadRaises(); err != nil {
		return err
	}

	if _, done := hist.Get(events.RunFinishedID(x.runID, x.raise)); done {
		return nil
	}
	reqEv, ok := hist.Get(events.DecisionID(events.RunRequested, x.runID))
	if !ok {
		return fmt.Errorf("run %s has no run.requested event", x.runID)
	}
	var req events.RunRequestedData
	if err := reqEv.Decode(&req); err != nil {
		return err
	}
	x.env = func(name string) (string, bool) {
		if v, ok := req.Env[name]; ok {
			return v, true
		}
		return x.cfg.Env(name)
	}
	if err := x.loadReuse(ctx, &req); err != nil {
		return err
	}
	if x.raise > 0 && req.Parent != nil && x.root != x.runID {
		// Its end took it off its root's tree; its budget raise made it
		// live again, beyond the limit if need be: it was counted when it
		// started.
		if err := x.host.Hold(ctx, x.root, req.Parent.RunID, x.runID, 0); err != nil {
			return err
		}
	}
	if x.isCancelled() {
		if _, started := hist.Get(events.DecisionID(events.RunStarted, x.runID)); !started {
			return x.finish(ctx, reqEv, nil, x.cancelFailure(""))
		}
	}
	started, err := x.start(ctx)
	if err != nil {
		return err
	}

	var (
		output any
		failed *events.ErrorInfo
	)
	sc := newScope(req.Input, x.cfg.Workspace, started.ID)
	if err := x.validate(x.job); err != nil {
		failed = &events.ErrorInfo{Kind: events.KindStructural, Message: err.Error()}
	} else {
		output, failed = x.steps(ctx, sc, x.job.Spec.Steps)
	}
	// The run's output is its last step's: recorded as that step's
	// record holds it, when known.
	if steps := x.job.Spec.Steps; failed == nil && output != nil && len(steps) > 0 {
		if enc, ok := x.encoded.get(sc.key(steps[len(steps)-1].ID)); ok {
			output = enc
		}
	}
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	if failed != nil && x.isCancelled() {
		failed = x.cancelFailure(failed.StepKey)
	}
	x.onFailure(ctx, sc, failed)
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return x.finish(ctx, started, output, failed)
}

// Observe is given every event of the run as it arrives, before the
// history holds it (see Run): a cancel request stops the run at once, a
// pause holds it.
func (x *Interpreter) Observe(ev events.Event) {
	x.pauses.Observe(ev)
	if ev.Type != events.RunCancelRequested {
		return
	}
	var d events.RunCancelRequestedData
	_ = ev.Decode(&d)
	x.cancelOnce.Do(func() {
		x.cancelMsg = "cancelled"
		if d.Requester != "" {
			x.cancelMsg += " by " + d.Requester
		}
		if d.Reason != "" {
			x.cancelMsg += ": " + d.Reason
		}
		if d.Tree != "" {
			x.cancelMsg += ", as part of the tree cancel of " + d.Tree
		}
		x.cancelCause = d
		close(x.cancelled)
	})
}

func (x *Interpreter) isCancelled() bool {
	select {
	case <-x.cancelled:
		return true
	default:
		return false
	}
}

func (x *Interpreter) cancelFailure(key string) *events.ErrorInfo {
	return &events.ErrorInfo{Kind: events.KindCancelled, Message: x.cancelMsg, StepKey: key}
}

// start records run.started, or run.resumed when an earlier engine started
// the run, and returns the event that started it.
func (x *Interpreter) start(ctx context.Context) (events.Event, error) {
	id := events.DecisionID(events.RunStarted, x.runID)
	if ev, ok := x.hist.Get(id); ok {
		x.resumed = true
		err := x.host.Append(ctx, events.Event{
			Type: events.RunResumed, RunID: x.runID, Job: x.job.Name, ParentID: id,
		}, x.resumedData())
		return ev, err
	}
	ev := events.Event{ID: id, Type: events.RunStarted, RunID: x.runID, Job: x.job.Name,
		ParentID: events.DecisionID(events.RunRequested, x.runID)}
	if err := x.host.Append(ctx, ev, events.RunStartedData{Engine: x.cfg.Engine}); err != nil {
		return events.Event{}, err
	}
	return x.waitFor(ctx, id)
}

// resumedData says who resumes the run and why: the engine that ran it
// until now (the one that started or last resumed it), and the budget
// raise when that is what resumes it (no engine resumed it since).
func (x *Interpreter) resumedData() events.RunResumedData {
	d := events.RunResumedData{Engine: x.cfg.Engine}
	last, ok := x.hist.Last(events.RunStarted, events.RunResumed)
	if !ok {
		return d
	}
	var before struct {
		Engine string `json:"engine"`
	}
	if last.Decode(&before) == nil {
		d.Previous = before.Engine
	}
	if x.raise > 0 && x.raisedAt > last.Seq {
		d.Raise = x.raise
	}
	return d
}

// finish records run.finished; from is the event the run's duration is
// measured from (run.started, or run.requested for a run that never started).
func (x *Interpreter) finish(ctx context.Context, from events.Event, output any, failed *events.ErrorInfo) error {
	data := events.RunFinishedData{State: events.StateSuccess, Output: output}
	if failed != nil {
		data.State, data.Output, data.Error = runState(failed), nil, failed
	}
	data.DurationMS = x.host.Now().Sub(from.Time).Milliseconds()
	err := x.host.Append(ctx, events.Event{
		ID:       events.RunFinishedID(x.runID, x.raise),
		Type:     events.RunFinished,
		RunID:    x.runID,
		Job:      x.job.Name,
		ParentID: from.ID,
	}, data)
	if err != nil {
		return err
	}
	x.host.Finished(ctx)
	return nil
}

// runState maps the error that ended a run to its terminal state.
func runState(failed *events.ErrorInfo) string {
	switch failed.Kind {
	case events.KindCancelled:
		return events.StateCancelled
	case events.KindBudget:
		return events.StateBudgetExhausted
	}
	return events.StateFailed
}

// record appends a decision event unless the history already holds it.
// In a branch that has not passed its turn (see turn), the event is sent
// in turn, and the turn passed once it is sent.
func (x *Interpreter) record(ctx context.Context, ev events.Event, payload any) error {
	if _, ok := x.hist.Get(ev.ID); ok {
		passTurn(ctx)
		return nil
	}
	ev.RunID, ev.Job = x.runID, x.job.Name
	if !passedTurn(ctx) {
		r, err := x.recordAsync(ctx, ev, payload)
		if err != nil {
			return err
		}
		return r.wait(ctx)
	}
	return x.host.Append(ctx, ev, payload)
}

// waitFor blocks until the event with the given id is in the history. A
// branch that waits passes its turn (see turn) first.
func (x *Interpreter) waitFor(ctx context.Context, id string) (events.Event, error) {
	passTurn(ctx)
	return x.hist.Wait(ctx, id)
}

// catchUp blocks until the history holds every event of the run in the
// log now. A branch that waits passes its turn (see turn) first.
func (x *Interpreter) catchUp(ctx context.Context) error {
	passTurn(ctx)
	return x.hist.CatchUp(ctx)
}

// recordSeq is record for an event whose stream sequence is wanted: the
// one the history holds, or the one it is stored at (the original one for
// an id the log held already).
func (x *Interpreter) recordSeq(ctx context.Context, ev events.Event, payload any) (uint64, error) {
	if held, ok := x.hist.Get(ev.ID); ok {
		passTurn(ctx)
		return held.Seq, nil
	}
	r, err := x.recordAsync(ctx, ev, payload)
	if err != nil {
		return 0, err
	}
	if r.pending == nil {
		held, _ := x.hist.Get(ev.ID)
		return held.Seq, nil
	}
	stored, err := r.pending.Wait(ctx)
	return stored.Seq, err
}

// recording is a decision event sent by recordAsync and not yet
// confirmed; the zero value is one the history already held.
type recording struct{ pending Stored }

// wait returns once the event is stored, or why it was not.
func (r recording) wait(ctx context.Context) error {
	if r.pending == nil {
		return nil
	}
	_, err := r.pending.Wait(ctx)
	return err
}

// recordAsync is record without waiting for the store: the event is sent,
// and stored before anything the run appends after it (a host stores
// events in the order they were sent), so the steps it introduces can be
// dispatched at once, and it is confirmed with them.
func (x *Interpreter) recordAsync(ctx context.Context, ev events.Event, payload any) (recording, error) {
	defer passTurn(ctx)
	if _, ok := x.hist.Get(ev.ID); ok {
		return recording{}, nil
	}
	ev.RunID, ev.Job = x.runID, x.job.Name
	takeTurn(ctx)
	p, err := x.host.AppendAsync(ctx, ev, payload)
	if err != nil {
		return recording{}, err
	}
	return recording{pending: p}, nil
}

// steps runs a step list in order and returns the last step's output. It
// stops at the first step that fails.
func (x *Interpreter) steps(ctx context.Context, sc *scope, list []assets.Step) (any, *events.ErrorInfo) {
	var last any
	for i := range list {
		st := &list[i]
		res, failed := x.step(ctx, sc, st, sc.key(st.ID))
		sc.record(st.ID, res)
		if failed != nil {
			return nil, failed
		}
		last = res.Output
	}
	return last, nil
}

// step runs one step instance: its `when`, then attempts of its body under
// its retry policy, then, if it still fails, its recovery activity and one
// last attempt.
func (x *Interpreter) step(ctx context.Context, sc *scope, st *assets.Step, key string) (assets.StepResult, *events.ErrorInfo) {
	if res, failed, ok := x.reuseStep(ctx, sc, st, key); ok {
		return res, failed
	}
	if failed := x.budgetCheck(ctx, sc, key); failed != nil {
		return assets.StepResult{State: events.StateBudgetExhausted}, failed
	}
	if st.When != "" {
		run, failed := x.when(ctx, sc, st, key)
		if failed != nil {
			return failedResult(key, failed)
		}
		if !run {
			return assets.StepResult{State: events.StateSkipped}, nil
		}
	}
	policy := retryPolicy(st.Retry)
	recovered := false
	// passed counts the attempts that spent no retry: those the budget
	// stopped before a raise, and those a pause --now stopped (the next
	// attempt waits for the unpause).
	passed := 0
	for attempt := 1; ; attempt++ {
		if x.stoppedBeforeRaise(key, attempt) {
			passed++
			continue
		}
		res, failed := x.body(ctx, sc, st, key, attempt)
		if failed == nil {
			return res, nil
		}
		if failed.Kind == events.KindPaused && ctx.Err() == nil {
			passed++
			continue
		}
		if failed.Kind == events.KindCancelled || failed.Kind == events.KindBudget || x.isCancelled() || ctx.Err() != nil {
			return failedResult(key, failed)
		}
		if !recovered && failed.Retryable && attempt-passed < policy.MaxAttempts {
			if failed := x.waitRetry(ctx, sc, key, attempt+1, failed, policy); failed != nil {
				return failedResult(key, failed)
			}
			continue
		}
		rec := x.recoveryFor(st)
		if recovered || rec == nil || !recoverable(failed) {
			return failedResult(key, failed)
		}
		recovered = true
		if rf := x.recover(ctx, sc, st, key, attempt, failed, rec); rf != nil {
			return failedResult(key, failed)
		}
	}
}

// when evaluates a step's condition once, before any attempt, and records
// step.skipped when it is false. A step that has started (or been skipped)
// before is not evaluated again.
func (x *Interpreter) when(ctx context.Context, sc *scope, st *assets.Step, key string) (bool, *events.ErrorInfo) {
	skippedID := events.DecisionID(events.StepSkipped, x.runID, key)
	if _, ok := x.hist.Get(skippedID); ok {
		return false, nil
	}
	if _, ok := x.hist.Get(StepEventID(events.StepStarted, x.runID, key, 1)); ok {
		return true, nil
	}
	if _, ok := x.hist.Get(StepEventID(events.StepFinished, x.runID, key, 1)); ok {
		return true, nil
	}
	cond, err := assets.ParseCondition(st.When)
	if err == nil {
		var ok bool
		if ok, err = cond.Eval(sc.templates(sc.input, x.env)); err == nil {
			if ok {
				return true, nil
			}
			return false, x.toFailure(key, x.record(ctx, events.Event{ID: skippedID, Type: events.StepSkipped, StepKey: key, ParentID: sc.parent},
				events.StepSkippedData{Condition: st.When}))
		}
	}
	failed := &events.ErrorInfo{Kind: events.KindValidation, Message: "when: " + err.Error(), StepKey: key}
	if rerr := x.recordFinished(ctx, key, 1, sc.parent, assets.StepResult{}, failed); rerr != nil {
		return false, internal(ctx, rerr)
	}
	return false, failed
}

// toFailure turns an error of Orbit's own into a failure, nil into nil.
func (x *Interpreter) toFailure(key string, err error) *events.ErrorInfo {
	if err == nil {
		return nil
	}
	f := internal(context.Background(), err)
	f.StepKey = key
	return f
}

// body runs one attempt of a step's body, whatever its kind.
func (x *Interpreter) body(ctx context.Context, sc *scope, st *assets.Step, key string, attempt int) (assets.StepResult, *events.ErrorInfo) {
	switch {
	case st.Parallel != nil:
		return x.parallel(ctx, sc, st, key, attempt)
	case st.FanOut != nil:
		return x.fanOut(ctx, sc, st, key, attempt)
	case st.Loop != nil:
		return x.loop(ctx, sc, st, key, attempt)
	case st.Wait != nil:
		return x.wait(ctx, sc, st, key, attempt)
	case st.Activity != nil && IsChildAction(st.Activity):
		return x.child(ctx, sc, st, key, attempt)
	case st.Activity != nil:
		out, failed := x.attempt(ctx, sc, st, key, attempt, nil)
		if failed != nil {
			return failedResult(key, failed)
		}
		return assets.StepResult{State: events.StateSuccess, Output: out}, nil
	}
	return failedResult(key, &events.ErrorInfo{Kind: events.KindStructural, Message: "step " + st.ID + " has no body"})
}

func failedResult(key string, failed *events.ErrorInfo) (assets.StepResult, *events.ErrorInfo) {
	if failed.StepKey == "" {
		failed.StepKey = key
	}
	return assets.StepResult{State: FailedState(failed)}, failed
}

// FailedState is the state a step or run ends in with the given failure.
func FailedState(failed *events.ErrorInfo) string {
	switch failed.Kind {
	case events.KindCancelled, events.KindPaused:
		return events.StateCancelled
	case events.KindTimeout:
		return events.StateTimeout
	case events.KindBudget:
		return events.StateBudgetExhausted
	}
	return events.StateFailed
}

// structural opens the record of a structural step attempt: step.started
// with the step's kind, whose id its children take as parent.
func (x *Interpreter) structural(ctx context.Context, sc *scope, key string, attempt int, kind string, input any) (string, error) {
	id := StepEventID(events.StepStarted, x.runID, key, attempt)
	return id, x.record(ctx, events.Event{ID: id, Type: events.StepStarted, StepKey: key, ParentID: sc.parent},
		events.StepStartedData{Attempt: attempt, ActivityType: kind, Input: input})
}

// recordFinished records step.finished for an attempt the orchestrator
// itself decided (a structural step, a child job, a step that could not be
// dispatched).
func (x *Interpreter) recordFinished(ctx context.Context, key string, attempt int, parent string, res assets.StepResult, failed *events.ErrorInfo) error {
	data := events.StepFinishedData{Attempt: attempt, State: events.StateSuccess, Output: res.Output}
	if failed != nil {
		data.State, data.Output, data.Error = FailedState(failed), nil, failed
	}
	if started, ok := x.hist.Get(StepEventID(events.StepStarted, x.runID, key, attempt)); ok {
		data.DurationMS = x.host.Now().Sub(started.Time).Milliseconds()
	}
	return x.record(ctx, events.Event{ID: StepEventID(events.StepFinished, x.runID, key, attempt), Type: events.StepFinished,
		StepKey: key, ParentID: parent}, data)
}

// finishStructural records the end of a structural step attempt and
// returns its result.
func (x *Interpreter) finishStructural(ctx context.Context, key string, attempt int, startedID string, res assets.StepResult, failed *events.ErrorInfo) (assets.StepResult, *events.ErrorInfo) {
	if failed != nil && ctx.Err() != nil {
		return failedResult(key, failed)
	}
	if err := x.recordFinished(ctx, key, attempt, startedID, res, failed); err != nil {
		return failedResult(key, internal(ctx, err))
	}
	if failed != nil {
		return failedResult(key, failed)
	}
	return res, nil
}

// internal turns an error of Orbit itself into a step failure, unless the
// context ended: then the run is stopping, and the caller sees ctx.Err.
func internal(ctx context.Context, err error) *events.ErrorInfo {
	if ctx.Err() != nil {
		return &events.ErrorInfo{Kind: events.KindInternal, Message: "stopped: " + context.Cause(ctx).Error()}
	}
	return &events.ErrorInfo{Kind: events.KindInternal, Message: err.Error(), Retryable: true}
}

// recordedResult is the result of step key that its step.finished event,
// ev, records: its output or its failure.
func recordedResult(key string, ev events.Event) (assets.StepResult, *events.ErrorInfo) {
	out, _, failed := stepOutcomeEncoded(ev)
	if failed != nil {
		return failedResult(key, failed)
	}
	return assets.StepResult{State: events.StateSuccess, Output: out}, nil
}

// EncodeJSON encodes a value a run records; one that cannot be encoded
// makes the job invalid.
func EncodeJSON(v any) (json.RawMessage, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, errors.Join(ErrInvalidJob, err)
	}
	return b, nil
}

// validate is Config.Validate.
func (x *Interpreter) validate(job *assets.Job) error {
	if x.cfg.Validate == nil {
		return nil
	}
	return x.cfg.Validate(job)
}
