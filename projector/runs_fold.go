package projector

import (
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
var runFolds = map[string]func(*runsBatch, events.Event) error{
	events.RunRequested:       (*runsBatch).runRequested,
	events.RunQueued:          (*runsBatch).runQueued,
	events.RunStarted:         (*runsBatch).runStarted,
	events.RunResumed:         (*runsBatch).runResumed,
	events.RunCancelRequested: (*runsBatch).runCancelRequested,
	events.RunFinished:        (*runsBatch).runFinished,
	events.StepStarted:        (*runsBatch).stepStarted,
	events.StepSkipped:        (*runsBatch).stepSkipped,
	events.StepRetryScheduled: (*runsBatch).stepRetryScheduled,
	events.StepFinished:       (*runsBatch).stepFinished,
	events.ActivityStarted:    (*runsBatch).activityStarted,
	events.ShellExited:        (*runsBatch).shellExited,
}

// runsBatch holds the run and step records one transaction touches,
// decoded, and writes each of them once in flush: a batch of a thousand
// step events of one run encodes the run once, not a thousand times.
type runsBatch struct {
	log                            *slog.Logger
	runsB, stepsB, byJobB, activeB *bolt.Bucket
	runs                           map[string]*runEntry // by run id; view nil = no such run
	steps                          map[string]*StepView // by stepKey(run, key); only touched ones
}

type runEntry struct {
	view  *RunView
	isNew bool // requested in this batch: the job index needs its entry
	dirty bool
}

func (b *runsBatch) fold(ev events.Event) error {
	f, ok := runFolds[ev.Type]
	if !ok {
		return nil
	}
	return f(b, ev)
}

// run returns the cached entry of a run, loading it on first use.
func (b *runsBatch) run(id string) (*runEntry, error) {
	if e, ok := b.runs[id]; ok {
		return e, nil
	}
	e := &runEntry{}
	if raw := b.runsB.Get([]byte(id)); raw != nil {
		var v RunView
		if err := decodeStored(raw, &v); err != nil {
			return nil, fmt.Errorf("stored run %s: %w", id, err)
		}
		e.view = &v
	}
	b.runs[id] = e
	return e, nil
}

// openRun returns the run a run- or step-level event applies to. It returns
// nil, after a debug line, when the run was never requested or, for a
// run-level event (changesRun), when the run is already terminal: terminal
// runs never change again.
func (b *runsBatch) openRun(ev events.Event, changesRun bool) (*runEntry, error) {
	e, err := b.run(ev.RunID)
	if err != nil {
		return nil, err
	}
	switch {
	case e.view == nil:
		b.log.Debug("ignoring an event of a run that was never requested", "seq", ev.Seq, "type", ev.Type, "run", ev.RunID)
		return nil, nil
	case changesRun && events.Terminal(e.view.State):
		b.log.Debug("ignoring an event of a finished run", "seq", ev.Seq, "type", ev.Type, "run", ev.RunID, "state", e.view.State)
		return nil, nil
	}
	return e, nil
}

// touch marks a run changed by ev, unless it is terminal.
func (e *runEntry) touch(ev events.Event) {
	if events.Terminal(e.view.State) {
		return
	}
	e.view.LastSeq = ev.Seq
	e.dirty = true
}

func (b *runsBatch) runRequested(ev events.Event) error {
	var d events.RunRequestedData
	if err := decodeData(ev, &d); err != nil {
		return err
	}
	e, err := b.run(ev.RunID)
	if err != nil {
		return err
	}
	if e.view != nil {
		b.log.Debug("ignoring a second run.requested", "seq", ev.Seq, "run", ev.RunID, "first", e.view.RequestedSeq)
		return nil
	}
	job := d.JobName
	if job == "" {
		job = ev.Job
	}
	e.view = &RunView{
		ID:           ev.RunID,
		Job:          job,
		State:        events.StatePending,
		Input:        d.Input,
		Requester:    d.Requester,
		Parent:       d.Parent,
		RequestedAt:  eventTime(ev),
		RequestedSeq: ev.Seq,
	}
	e.isNew = true
	e.touch(ev)
	if d.Parent == nil || d.Parent.RunID == "" {
		return nil
	}
	parent, err := b.run(d.Parent.RunID)
	if err != nil {
		return err
	}
	switch {
	case parent.view == nil:
		b.log.Debug("child run names a parent that was never requested", "seq", ev.Seq, "run", ev.RunID, "parent", d.Parent.RunID)
	case events.Terminal(parent.view.State):
		b.log.Debug("child run names a finished parent", "seq", ev.Seq, "run", ev.RunID, "parent", d.Parent.RunID)
	default:
		parent.view.Children = append(parent.view.Children, ev.RunID)
		parent.touch(ev)
	}
	return nil
}

func (b *runsBatch) runQueued(ev events.Event) error {
	var d events.RunQueuedData
	if err := decodeData(ev, &d); err != nil {
		return err
	}
	e, err := b.openRun(ev, true)
	if e == nil || err != nil {
		return err
	}
	e.view.QueuedBehind = d.Active
	e.touch(ev)
	return nil
}

func (b *runsBatch) runStarted(ev events.Event) error {
	var d events.RunStartedData
	if err := decodeData(ev, &d); err != nil {
		return err
	}
	e, err := b.openRun(ev, true)
	if e == nil || err != nil {
		return err
	}
	e.view.State = events.StateRunning
	e.view.Engine = d.Engine
	if e.view.StartedAt == nil {
		e.view.StartedAt = eventTime(ev)
	}
	e.touch(ev)
	return nil
}

func (b *runsBatch) runResumed(ev events.Event) error {
	var d events.RunResumedData
	if err := decodeData(ev, &d); err != nil {
		return err
	}
	e, err := b.openRun(ev, true)
	if e == nil || err != nil {
		return err
	}
	e.view.Engine = d.Engine
	e.view.Resumes++
	e.touch(ev)
	return nil
}

func (b *runsBatch) runCancelRequested(ev events.Event) error {
	var d events.RunCancelRequestedData
	if err := decodeData(ev, &d); err != nil {
		return err
	}
	e, err := b.openRun(ev, true)
	if e == nil || err != nil {
		return err
	}
	e.view.CancelRequested = true
	e.touch(ev)
	return nil
}

func (b *runsBatch) runFinished(ev events.Event) error {
	var d events.RunFinishedData
	if err := decodeData(ev, &d); err != nil {
		return err
	}
	if !events.Terminal(d.State) || d.State == events.StateSkipped {
		return fmt.Errorf("%w: %s %s at sequence %d: %q is not a terminal run state",
			events.ErrInvalidEvent, ev.Type, ev.ID, ev.Seq, d.State)
	}
	e, err := b.openRun(ev, true)
	if e == nil || err != nil {
		return err
	}
	// touch before the state turns terminal, which freezes the record.
	e.touch(ev)
	e.view.State = d.State
	e.view.Output = d.Output
	e.view.Error = d.Error
	e.view.FinishedAt = eventTime(ev)
	e.view.DurationMS = d.DurationMS
	return nil
}

// step returns the cached step of ev's run, loading or creating it, and the
// run entry; nil when the run was never requested.
func (b *runsBatch) step(ev events.Event) (*runEntry, *StepView, error) {
	if ev.StepKey == "" {
		return nil, nil, fmt.Errorf("%w: %s %s at sequence %d has no step key", events.ErrInvalidEvent, ev.Type, ev.ID, ev.Seq)
	}
	e, err := b.openRun(ev, false)
	if e == nil || err != nil {
		return nil, nil, err
	}
	key := stepKey(ev.RunID, ev.StepKey)
	if s, ok := b.steps[key]; ok {
		return e, s, nil
	}
	s := &StepView{Key: ev.StepKey, ID: stepID(ev.StepKey), Order: ev.Seq}
	if raw := b.stepsB.Get([]byte(key)); raw != nil {
		s = &StepView{}
		if err := decodeStored(raw, s); err != nil {
			return nil, nil, fmt.Errorf("stored step %s of run %s: %w", ev.StepKey, ev.RunID, err)
		}
	}
	b.steps[key] = s
	return e, s, nil
}

func (b *runsBatch) stepStarted(ev events.Event) error {
	var d events.StepStartedData
	if err := decodeData(ev, &d); err != nil {
		return err
	}
	e, s, err := b.step(ev)
	if s == nil || err != nil {
		return err
	}
	s.State = events.StateRunning
	s.Attempts = max(s.Attempts, d.Attempt)
	s.ActivityType = d.ActivityType
	s.Target = d.Target
	s.Input = d.Input
	if s.StartedAt == nil {
		s.StartedAt = eventTime(ev)
	}
	e.touch(ev)
	return nil
}

func (b *runsBatch) stepSkipped(ev events.Event) error {
	var d events.StepSkippedData
	if err := decodeData(ev, &d); err != nil {
		return err
	}
	e, s, err := b.step(ev)
	if s == nil || err != nil {
		return err
	}
	s.State = events.StateSkipped
	e.touch(ev)
	return nil
}

func (b *runsBatch) stepRetryScheduled(ev events.Event) error {
	var d events.StepRetryScheduledData
	if err := decodeData(ev, &d); err != nil {
		return err
	}
	e, s, err := b.step(ev)
	if s == nil || err != nil {
		return err
	}
	s.State = StateRetrying
	e.touch(ev)
	return nil
}

func (b *runsBatch) stepFinished(ev events.Event) error {
	var d events.StepFinishedData
	if err := decodeData(ev, &d); err != nil {
		return err
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
	e.touch(ev)
	return nil
}

func (b *runsBatch) activityStarted(ev events.Event) error {
	var d events.ActivityStartedData
	if err := decodeData(ev, &d); err != nil {
		return err
	}
	e, s, err := b.step(ev)
	if s == nil || err != nil {
		return err
	}
	s.Deliveries = max(s.Deliveries, d.Delivery)
	e.touch(ev)
	return nil
}

func (b *runsBatch) shellExited(ev events.Event) error {
	var d events.ShellExitedData
	if err := decodeData(ev, &d); err != nil {
		return err
	}
	e, s, err := b.step(ev)
	if s == nil || err != nil {
		return err
	}
	code := d.ExitCode
	s.ExitCode = &code
	e.touch(ev)
	return nil
}

// flush writes every touched record once, in key order, and keeps the job
// and active-runs indexes in step with the runs.
func (b *runsBatch) flush() error {
	for _, id := range sortedKeys(b.runs) {
		e := b.runs[id]
		if !e.dirty {
			continue
		}
		if err := b.putRun(e); err != nil {
			return err
		}
	}
	for _, key := range sortedKeys(b.steps) {
		if err := putJSON(b.stepsB, []byte(key), b.steps[key]); err != nil {
			return err
		}
	}
	return nil
}

func (b *runsBatch) putRun(e *runEntry) error {
	v := e.view
	if err := putJSON(b.runsB, []byte(v.ID), v); err != nil {
		return err
	}
	if e.isNew {
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
