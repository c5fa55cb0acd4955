package projector

import (
	"fmt"

	"github.com/orbitrun/orbit/events"
)

// A decodedEvent is an event of a batch with its data decoded, once for
// every view that folds it.
//
// IMPORTANT: data is shared by every view that folds the event, and its
// records may share parts of it too (the side effects of a
// groundhog.committed are in both the memory and the audit record). A fold
// reads it and may keep what it points to in a record, but never changes
// it: no write through the pointer, no append to, sort of or write into
// one of its slices or maps, neither when folding the event nor later
// through a record that kept a part of it.
type decodedEvent struct {
	events.Event
	// data points to the decoded data, of the type eventData gives the
	// event's type; nil for a type no view folds.
	data any
	// err, when set, wraps events.ErrInvalidEvent: the data does not
	// decode, or fails a check every view that folds the type makes. Each
	// of those views skips the event.
	err error
}

// decodeEvent decodes ev's data as eventData says, when some view folds
// its type.
func decodeEvent(ev events.Event) decodedEvent {
	e := decodedEvent{Event: ev}
	if decode, ok := eventData[ev.Type]; ok {
		e.data, e.err = decode(ev)
	}
	return e
}

// eventData says, for each event type a view folds, into what its data
// decodes and what it must hold for any view to fold it. A view that
// checks more than that (the tasks view a task status, the metrics
// criterion outcomes) does it in its own fold.
var eventData = map[string]func(events.Event) (any, error){
	events.RunRequested:       decodeAs[events.RunRequestedData](),
	events.RunQueued:          decodeAs[events.RunQueuedData](),
	events.RunStarted:         decodeAs[events.RunStartedData](),
	events.RunResumed:         decodeAs[events.RunResumedData](),
	events.RunCancelRequested: decodeAs[events.RunCancelRequestedData](),
	events.RunPaused:          decodeAs[events.RunPausedData](),
	events.RunUnpaused:        decodeAs[events.RunUnpausedData](),
	events.RunFinished:        decodeAs(terminalRunState),
	events.RunBudgetRaised:    decodeAs[events.RunBudgetRaisedData](),
	events.StepStarted:        decodeAs(hasStepKey[events.StepStartedData]),
	events.StepSkipped:        decodeAs(hasStepKey[events.StepSkippedData]),
	events.StepRetryScheduled: decodeAs(hasStepKey[events.StepRetryScheduledData]),
	events.StepFinished:       decodeAs(hasStepKey[events.StepFinishedData]),
	events.ActivityStarted:    decodeAs(hasStepKey[events.ActivityStartedData]),
	events.ShellExited:        decodeAs(hasStepKey[events.ShellExitedData]),

	events.AgentTurn:             decodeAs[events.AgentTurnData](),
	events.CLIInvocationFinished: decodeAs[events.CLIInvocationFinishedData](),
	events.ToolCalled:            decodeAs[events.ToolCalledData](),
	events.ToolDenied:            decodeAs[events.ToolDeniedData](),

	events.TaskCreated:          decodeAs[events.TaskCreatedData](),
	events.TaskPlanChanged:      decodeAs[events.TaskPlanChangedData](),
	events.TaskStatusChanged:    decodeAs[events.TaskStatusChangedData](),
	events.TaskUpdated:          decodeAs[events.TaskUpdatedData](),
	events.TaskWorktreeAssigned: decodeAs[events.TaskWorktreeAssignedData](),

	events.GroundhogRunStarted:  decodeAs[events.GroundhogRunStartedData](),
	events.GroundhogRunFinished: decodeAs[events.GroundhogRunFinishedData](),
	events.GroundhogAbandoned:   decodeAs(namesCheckpoint),
	events.GroundhogDrift:       decodeAs[events.GroundhogDriftData](),
	events.GroundhogApproved:    decodeAs[events.GroundhogApprovedData](),
	events.GroundhogRewoundTo:   decodeAs[events.GroundhogRewoundToData](),

	// Groundhog events about an attempt.
	events.GroundhogAttempt:       attemptData(func(d *events.GroundhogAttemptData) *events.Attempt { return &d.Attempt }),
	events.GroundhogTurn:          attemptData(func(d *events.GroundhogTurnData) *events.Attempt { return &d.Attempt }),
	events.GroundhogUsage:         attemptData(func(d *events.GroundhogUsageData) *events.Attempt { return &d.Attempt }),
	events.GroundhogToolCalled:    attemptData(func(d *events.GroundhogToolCalledData) *events.Attempt { return &d.Attempt }),
	events.GroundhogToolDenied:    attemptData(func(d *events.GroundhogToolDeniedData) *events.Attempt { return &d.Attempt }),
	events.GroundhogSideEffect:    attemptData(func(d *events.GroundhogSideEffectData) *events.Attempt { return &d.Attempt }),
	events.GroundhogVerb:          attemptData(func(d *events.GroundhogVerbData) *events.Attempt { return &d.Attempt }),
	events.GroundhogVerification:  attemptData(func(d *events.GroundhogVerificationData) *events.Attempt { return &d.Attempt }),
	events.GroundhogCommitted:     attemptData(func(d *events.GroundhogCommittedData) *events.Attempt { return &d.Attempt }),
	events.GroundhogRewound:       attemptData(func(d *events.GroundhogRewoundData) *events.Attempt { return &d.Attempt }),
	events.GroundhogAttemptFailed: attemptData(func(d *events.GroundhogAttemptFailedData) *events.Attempt { return &d.Attempt }),
	events.GroundhogInterrupted:   attemptData(func(d *events.GroundhogInterruptedData) *events.Attempt { return &d.Attempt }),
	events.GroundhogGrounding:     attemptData(func(d *events.GroundhogGroundingData) *events.Attempt { return &d.Attempt }),
}

// decodeAs returns a decoder of an event's data into a new D, which then
// must pass checks. Its errors wrap events.ErrInvalidEvent.
func decodeAs[D any](checks ...func(events.Event, *D) error) func(events.Event) (any, error) {
	return func(ev events.Event) (any, error) {
		d := new(D)
		if err := decodeData(ev, d); err != nil {
			return nil, err
		}
		for _, check := range checks {
			if err := check(ev, d); err != nil {
				return nil, err
			}
		}
		return d, nil
	}
}

// attemptData is decodeAs for the data of a Groundhog event about an
// attempt, which must name one (see namesAttempt).
func attemptData[D any](attempt func(*D) *events.Attempt) func(events.Event) (any, error) {
	return decodeAs(namesAttempt(attempt))
}

// namesAttempt checks that the data of a Groundhog event about an attempt,
// whose embedded events.Attempt attempt returns, names one: a checkpoint
// and a day of at least 1.
func namesAttempt[D any](attempt func(*D) *events.Attempt) func(events.Event, *D) error {
	return func(ev events.Event, d *D) error {
		if a := attempt(d); a.Checkpoint == "" || a.Day < 1 {
			return fmt.Errorf("%w: %s %s at sequence %d names no attempt (checkpoint %q, day %d)",
				events.ErrInvalidEvent, ev.Type, ev.ID, ev.Seq, a.Checkpoint, a.Day)
		}
		return nil
	}
}

// terminalRunState checks that a run.finished ends the run: in a terminal
// state, which skipped, a state of steps only, is not.
func terminalRunState(ev events.Event, d *events.RunFinishedData) error {
	if !events.Terminal(d.State) || d.State == events.StateSkipped {
		return fmt.Errorf("%w: %s %s at sequence %d: %q is not a terminal run state",
			events.ErrInvalidEvent, ev.Type, ev.ID, ev.Seq, d.State)
	}
	return nil
}

// hasStepKey checks that a step- or activity-level event names its step.
func hasStepKey[D any](ev events.Event, _ *D) error {
	if ev.StepKey == "" {
		return fmt.Errorf("%w: %s %s at sequence %d has no step key", events.ErrInvalidEvent, ev.Type, ev.ID, ev.Seq)
	}
	return nil
}

// namesCheckpoint checks that a groundhog.abandoned names the checkpoint
// whose budget was spent.
func namesCheckpoint(ev events.Event, d *events.GroundhogAbandonedData) error {
	if d.Checkpoint == "" {
		return fmt.Errorf("%w: %s %s at sequence %d names no checkpoint", events.ErrInvalidEvent, ev.Type, ev.ID, ev.Seq)
	}
	return nil
}
