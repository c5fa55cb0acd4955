package executor

import (
	"context"
	"fmt"
	"time"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/interpreter"
)

// PauseRun records a pause of a live run, or its end (unpause false). It
// refuses a run that has finished, and one that already is as asked.
func PauseRun(ctx context.Context, log *events.Log, runID string, pause bool, d events.RunPausedData) error {
	evs, err := log.Read(ctx, events.FollowOptions{Filters: []string{
		events.EventSubject(events.AggregateRun, runID, events.RunRequested),
		events.EventSubject(events.AggregateRun, runID, events.RunPaused),
		events.EventSubject(events.AggregateRun, runID, events.RunUnpaused),
		events.EventSubject(events.AggregateRun, runID, events.RunFinished),
	}})
	if err != nil {
		return err
	}
	paused, requested, job := false, false, ""
	for _, ev := range evs {
		switch ev.Type {
		case events.RunRequested:
			requested, job = true, ev.Job
		case events.RunPaused:
			paused = true
		case events.RunUnpaused:
			paused = false
		case events.RunFinished:
			return fmt.Errorf("%w: run %s has already finished; a finished run never changes", events.ErrInvalidRequest, runID)
		}
	}
	if !requested {
		return fmt.Errorf("%w: run %s", events.ErrNotFound, runID)
	}
	if paused == pause {
		state := "paused"
		if !pause {
			state = "not paused"
		}
		return fmt.Errorf("%w: run %s is already %s", events.ErrInvalidRequest, runID, state)
	}
	if d.Signer == nil {
		d.Signer = events.RequestSigner(ctx)
	}
	ev := events.Event{ID: events.NewID(), Type: events.RunPaused, RunID: runID, Job: job}
	if !pause {
		ev.Type = events.RunUnpaused
		_, err = log.Append(ctx, ev, events.RunUnpausedData{Requester: d.Requester, Bulk: d.Bulk, Signer: d.Signer})
		return err
	}
	_, err = log.Append(ctx, ev, d)
	return err
}

// PausedDeadline moves base, a wall-clock deadline of run runID that
// counts from start, by the time the run has been paused since start (as
// a wait step's deadline moves); ok is false while a pause that began
// before it lasts: there is no deadline until it ends.
func PausedDeadline(ctx context.Context, log *events.Log, runID string, base, start time.Time) (time.Time, bool, error) {
	evs, err := readRun(ctx, log, runID, events.RunPaused, events.RunUnpaused)
	if err != nil {
		return time.Time{}, false, err
	}
	pauses := interpreter.NewPauses()
	for _, ev := range evs {
		pauses.Observe(ev)
	}
	d, ok := pauses.Deadline(base, start)
	return d, ok, nil
}
