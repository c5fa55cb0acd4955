package projector

import (
	"cmp"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/orbitrun/orbit/events"
)

// runFolds maps each event type the runs view knows to its fold; other
// types are skipped.
var runFolds = foldTable[*runsBatch]{
	events.RunRequested:       on((*runsBatch).runRequested),
	events.RunQueued:          on((*runsBatch).runQueued),
	events.RunStarted:         on((*runsBatch).runStarted),
	events.RunResumed:         on((*runsBatch).runResumed),
	events.RunCancelRequested: on((*runsBatch).runCancelRequested),
	events.RunPaused:          on((*runsBatch).runPaused),
	events.RunUnpaused:        on((*runsBatch).runUnpaused),
	events.RunFinished:        on((*runsBatch).runFinished),
	events.RunBudgetRaised:    on((*runsBatch).runBudgetRaised),
	events.StepStarted:        on((*runsBatch).stepStarted),
	events.StepSkipped:        on((*runsBatch).stepSkipped),
	events.StepRetryScheduled: on((*runsBatch).stepRetryScheduled),
	events.StepFinished:       on((*runsBatch).stepFinished),
	events.ActivityStarted:    on((*runsBatch).activityStarted),
	events.ShellExited:        on((*runsBatch).shellExited),
}

// runsBatch holds the run and step records one transaction touches,
// decoded, and writes each of them once in flush: a batch of a thousand
// step events of one run encodes the run once, not a thousand times.
type runsBatch struct {
	log             *slog.Logger
	runs            *batchCache[RunView]  // by run id
	steps           *batchCache[StepView] // by stepKey(run, key)
	byJobB, activeB *bolt.Bucket
}

// openRun returns the run a run- or step-level event applies to. It returns
// nil, after a debug line, when the run was never requested or, for a
// run-level event (changesRun), when the run is already terminal: terminal
// runs never change again.
func (b *runsBatch) openRun(ev events.Event, changesRun bool) (*cached[RunView], error) {
	e, err := b.runs.get(ev.RunID)
	if err != nil {
		return nil, err
	}
	switch {
	case e.rec == nil:
		b.log.Debug("ignoring an event of a run that was never requested", "seq", ev.Seq, "type", ev.Type, "run", ev.RunID)
		return nil, nil
	case changesRun && events.Terminal(e.rec.State):
		b.log.Debug("ignoring an event of a finished run", "seq", ev.Seq, "type", ev.Type, "run", ev.RunID, "state", e.rec.State)
		return nil, nil
	}
	return e, nil
}

// touchRun marks a run changed by ev, unless it is terminal.
func touchRun(e *cached[RunView], ev events.Event) {
	if events.Terminal(e.rec.State) {
		return
	}
	e.rec.LastSeq = ev.Seq
	e.dirty = true
}

func (b *runsBatch) runRequested(ev events.Event, d *events.RunRequestedData) error {
	e, err := b.runs.get(ev.RunID)
	if err != nil {
		return err
	}
	if e.rec != nil {
		b.log.Debug("ignoring a second run.requested", "seq", ev.Seq, "run", ev.RunID, "first", e.rec.RequestedSeq)
		return nil
	}
	job := d.JobName
	if job == "" {
		job = ev.Job
	}
	e.rec = &RunView{
		ID:           ev.RunID,
		Job:          job,
		State:        events.StatePending,
		Input:        d.Input,
		Requester:    d.Requester,
		Signer:       d.Signer,
		Parent:       d.Parent,
		RetryOf:      d.RetryOf,
		RetryFrom:    d.From,
		RetrySteps:   d.RetrySteps,
		Routine:      d.Routine,
		RequestedAt:  eventTime(ev),
		RequestedSeq: ev.Seq,
		TraceID:      events.RunTraceID(cmp.Or(d.Root, ev.RunID), d.Traceparent),
	}
	touchRun(e, ev)
	if err := b.retried(ev, d.RetryOf); err != nil {
		return err
	}
	if d.Parent == nil || d.Parent.RunID == "" {
		return nil
	}
	parent, err := b.runs.get(d.Parent.RunID)
	if err != nil {
		return err
	}
	if parent.rec == nil {
		b.log.Debug("child run names a parent that was never requested", "seq", ev.Seq, "run", ev.RunID, "parent", d.Parent.RunID)
		return nil
	}
	// A detached child (job.invoke with wait: false) may be requested after
	// its parent ended: it is listed all the same, as a retry is (see
	// retried), and a finished parent's LastSeq stays its end.
	parent.rec.Children = append(parent.rec.Children, ev.RunID)
	parent.dirty = true
	touchRun(parent, ev)
	return nil
}

// retried adds a retry to the lineage of the run it retries. That run is
// terminal (only finished runs are retried), so its record changes without
// its LastSeq moving, as late step events change its steps.
func (b *runsBatch) retried(ev events.Event, of string) error {
	if of == "" {
		return nil
	}
	old, err := b.runs.get(of)
	if err != nil {
		return err
	}
	if old.rec == nil {
		b.log.Debug("a retry names a run that was never requested", "seq", ev.Seq, "run", ev.RunID, "retry_of", of)
		return nil
	}
	old.rec.Retries = append(old.rec.Retries, ev.RunID)
	old.dirty = true
	return nil
}

func (b *runsBatch) runQueued(ev events.Event, d *events.RunQueuedData) error {
	e, err := b.openRun(ev, true)
	if e == nil || err != nil {
		return err
	}
	e.rec.QueuedBehind = d.Active
	touchRun(e, ev)
	return nil
}

func (b *runsBatch) runStarted(ev events.Event, d *events.RunStartedData) error {
	e, err := b.openRun(ev, true)
	if e == nil || err != nil {
		return err
	}
	e.rec.State = events.StateRunning
	e.rec.Engine = d.Engine
	if e.rec.StartedAt == nil {
		e.rec.StartedAt = eventTime(ev)
	}
	touchRun(e, ev)
	return nil
}

func (b *runsBatch) runResumed(ev events.Event, d *events.RunResumedData) error {
	e, err := b.openRun(ev, true)
	if e == nil || err != nil {
		return err
	}
	e.rec.Engine = d.Engine
	e.rec.Resumes++
	touchRun(e, ev)
	return nil
}

func (b *runsBatch) runCancelRequested(ev events.Event, d *events.RunCancelRequestedData) error {
	e, err := b.openRun(ev, true)
	if e == nil || err != nil {
		return err
	}
	e.rec.CancelRequested = true
	e.rec.Cancel = d
	touchRun(e, ev)
	return nil
}

// runPaused marks a live run paused (orbit run pause): it starts no new
// step until it is unpaused.
func (b *runsBatch) runPaused(ev events.Event, d *events.RunPausedData) error {
	e, err := b.openRun(ev, true)
	if e == nil || err != nil {
		return err
	}
	e.rec.Paused = true
	e.rec.PausedAt = eventTime(ev)
	touchRun(e, ev)
	return nil
}

// runUnpaused ends a pause and adds its length to the run's paused time.
func (b *runsBatch) runUnpaused(ev events.Event, d *events.RunUnpausedData) error {
	e, err := b.openRun(ev, true)
	if e == nil || err != nil {
		return err
	}
	if e.rec.Paused && e.rec.PausedAt != nil {
		e.rec.PausedMS += ev.Time.Sub(*e.rec.PausedAt).Milliseconds()
	}
	e.rec.Paused = false
	e.rec.PausedAt = nil
	touchRun(e, ev)
	return nil
}

func (b *runsBatch) runFinished(ev events.Event, d *events.RunFinishedData) error {
	e, err := b.openRun(ev, true)
	if e == nil || err != nil {
		return err
	}
	// touch before the state turns terminal, which freezes the record.
	touchRun(e, ev)
	if e.rec.Paused && e.rec.PausedAt != nil {
		e.rec.PausedMS += ev.Time.Sub(*e.rec.PausedAt).Milliseconds()
	}
	e.rec.Paused, e.rec.PausedAt = false, nil
	e.rec.State = d.State
	e.rec.Output = d.Output
	e.rec.Error = d.Error
	e.rec.FinishedAt = eventTime(ev)
	e.rec.DurationMS = d.DurationMS
	return nil
}

// step returns the run entry of ev's run and its step, loading or creating
// the step, which the caller changes; nil when the run was never requested.
// ev has a step key: eventData refuses step events without one.
func (b *runsBatch) step(ev events.Event) (*cached[RunView], *StepView, error) {
	e, err := b.openRun(ev, false)
	if e == nil || err != nil {
		return nil, nil, err
	}
	s, err := b.steps.get(stepKey(ev.RunID, ev.StepKey))
	if err != nil {
		return nil, nil, err
	}
	if s.rec == nil {
		s.rec = &StepView{Key: ev.StepKey, ID: stepID(ev.StepKey), Order: ev.Seq}
	}
	s.dirty = true
	return e, s.rec, nil
}

func (b *runsBatch) stepStarted(ev events.Event, d *events.StepStartedData) error {
	e, s, err := b.step(ev)
	if s == nil || err != nil {
		return err
	}
	s.State = events.StateRunning
	if d.Wait != nil {
		s.State = StateWaiting
	}
	s.Wait = d.Wait
	s.Attempts = max(s.Attempts, d.Attempt)
	s.ActivityType = d.ActivityType
	s.Target = d.Target
	s.Input, s.Item = d.Input, d.Item
	if s.StartedAt == nil {
		s.StartedAt = eventTime(ev)
	}
	touchRun(e, ev)
	return nil
}

func (b *runsBatch) stepSkipped(ev events.Event, d *events.StepSkippedData) error {
	e, s, err := b.step(ev)
	if s == nil || err != nil {
		return err
	}
	s.State = events.StateSkipped
	s.ReusedFrom = d.ReusedFrom
	touchRun(e, ev)
	return nil
}

func (b *runsBatch) stepRetryScheduled(ev events.Event, _ *events.StepRetryScheduledData) error {
	e, s, err := b.step(ev)
	if s == nil || err != nil {
		return err
	}
	s.State = StateRetrying
	touchRun(e, ev)
	return nil
}

func (b *runsBatch) stepFinished(ev events.Event, d *events.StepFinishedData) error {
	if d.Started != nil {
		// A decided step's one event stands for its step.started too.
		if err := b.stepStarted(ev, d.Started); err != nil {
			return err
		}
	}
	e, s, err := b.step(ev)
	if s == nil || err != nil {
		return err
	}
	s.State = d.State
	s.Attempts = max(s.Attempts, d.Attempt)
	s.Output = d.Output
	s.Error = d.Error
	s.FinishedAt = eventTime(ev)
	s.DurationMS = d.DurationMS
	s.ReusedFrom = d.ReusedFrom
	// Under step protocol 3 an execution's delivery is on its
	// step.finished (and on an activity.started only where it has one).
	s.Deliveries = max(s.Deliveries, d.Delivery)
	touchRun(e, ev)
	return nil
}

func (b *runsBatch) activityStarted(ev events.Event, d *events.ActivityStartedData) error {
	e, s, err := b.step(ev)
	if s == nil || err != nil {
		return err
	}
	s.Deliveries = max(s.Deliveries, d.Delivery)
	touchRun(e, ev)
	return nil
}

func (b *runsBatch) shellExited(ev events.Event, d *events.ShellExitedData) error {
	e, s, err := b.step(ev)
	if s == nil || err != nil {
		return err
	}
	code := d.ExitCode
	s.ExitCode = &code
	touchRun(e, ev)
	return nil
}

// flush writes every touched record once, in key order, and keeps the job
// and active-runs indexes in step with the runs.
func (b *runsBatch) flush() error {
	if err := b.runs.flush(); err != nil {
		return err
	}
	if err := b.runs.eachChanged(b.putIndexes); err != nil {
		return err
	}
	return b.steps.flush()
}

// putIndexes keeps the indexes of a changed run in step with it: a run
// requested in this batch gets its job index entry, and the active-runs
// index holds the run until it is terminal.
func (b *runsBatch) putIndexes(_ string, e *cached[RunView]) error {
	v := e.rec
	if !e.stored {
		if err := b.byJobB.Put(jobKey(v.Job, v.ID), []byte(strconv.FormatUint(v.RequestedSeq, 10))); err != nil {
			return err
		}
	}
	key := activeKey(v.RequestedSeq)
	if events.Terminal(v.State) {
		return b.activeB.Delete(key)
	}
	return putJSON(b.activeB, key, ActiveRun{ID: v.ID, Job: v.Job, State: v.State, RequestedSeq: v.RequestedSeq})
}

func putJSON(b *bolt.Bucket, key []byte, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encoding %q: %w", key, err)
	}
	return b.Put(key, data)
}

// stepKey is the key of a step in bucketSteps. Run ids never contain NUL,
// so the steps of one run are exactly the keys with prefix id + "\x00".
func stepKey(runID, key string) string { return runID + "\x00" + key }

func jobKey(job, runID string) []byte { return []byte(job + "\x00" + runID) }

// activeKey sorts the active-runs index by the sequence of run.requested:
// the order the orchestrator resumes runs in.
func activeKey(seq uint64) []byte { return fmt.Appendf(nil, "%020d", seq) }

// stepID is the last segment of a step key that is not a number, without
// the "@<attempt>" a retry of a structural step adds to its children's
// prefix: "build" for "build", "review" for "loop/2/review" and
// "loop@2/1/review", "per_item" for "per_item/3" and "per_item@2/3". Step
// ids cannot contain "@" or "/", so neither is ambiguous.
func stepID(key string) string {
	parts := strings.Split(key, "/")
	for i := len(parts) - 1; i >= 0; i-- {
		if parts[i] == "" || isNumber(parts[i]) {
			continue
		}
		if id, attempt, ok := strings.Cut(parts[i], "@"); ok && id != "" && isNumber(attempt) {
			return id
		}
		return parts[i]
	}
	return key
}

func isNumber(s string) bool {
	_, err := strconv.ParseUint(s, 10, 64)
	return err == nil
}

// eventTime is the event's time in UTC, the only clock a view reads.
func eventTime(ev events.Event) *time.Time {
	t := ev.Time.UTC()
	return &t
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
