package shipping

import (
	"fmt"
	"slices"
	"strings"

	"github.com/orbitrun/orbit/events"
)

// How a status change is asked for: each way has its own rules.
type changeKind int

const (
	byUpdate   changeKind = iota // orbit task update --status, tasks.update
	byStart                      // orbit task start
	byArchive                    // orbit task archive
	byWorkflow                   // a pipeline's update_task step
)

// settable are the statuses a person or a pipeline may give a task; the
// others are Groundhog's (budget_exhausted) or the log's first words.
var settable = []string{events.TaskProposed, events.TaskBacklog, events.TaskInProgress, events.TaskReview, events.TaskDone,
	events.TaskBlocked, events.TaskRejected, events.TaskArchived, events.TaskSomeday, events.TaskFriction}

// createStatuses are the statuses a task may be created in.
var createStatuses = []string{events.TaskProposed, events.TaskBacklog, events.TaskSomeday, events.TaskFriction}

// admissible are the statuses a shipping workflow takes into in-progress
// (the seed's workflow admission, §8.10 of the upstream design): an
// in-progress task is a retry of a run that took it.
var admissible = []string{events.TaskProposed, events.TaskBacklog, events.TaskFriction, events.TaskRejected, events.TaskArchived,
	events.TaskInProgress}

// startable are the statuses orbit task start takes into in-progress.
var startable = []string{events.TaskProposed, events.TaskBacklog, events.TaskSomeday, events.TaskBlocked}

// checkTransition says whether task id may go from status from (as
// recorded) to status to, asked for in the given way. A change to the
// status it has is always allowed (and records nothing).
//
// The lifecycle is permissive, as the upstream system's is, but for a
// short list: done is terminal; archived is reached by archiving only;
// start takes only waiting tasks; a workflow never takes back a task in
// review or done. The summary a move to review needs is checked by the
// caller, which has the task.
func checkTransition(id, from, to string, how changeKind) error {
	from = events.TaskStatusMeaning(from)
	if !slices.Contains(settable, to) {
		return fmt.Errorf("%w: %q is not a status a task can be given (%s)", ErrInvalidTask, to, strings.Join(settable, ", "))
	}
	if from == to {
		if how == byStart {
			return fmt.Errorf("%w: task %s is already in progress", ErrTransition, id)
		}
		return nil
	}
	switch {
	case from == events.TaskDone:
		return fmt.Errorf("%w: task %s is done, and done is final", ErrTransition, id)
	case to == events.TaskArchived && how != byArchive:
		return fmt.Errorf("%w: task %s: archive it with orbit task archive %s", ErrTransition, id, id)
	case how == byArchive && to != events.TaskArchived:
		return fmt.Errorf("%w: archiving moves a task to archived only", ErrTransition)
	case how == byStart && !slices.Contains(startable, from):
		return fmt.Errorf("%w: task %s is %s; start takes a task that is %s", ErrTransition, id, from, strings.Join(startable, ", "))
	}
	return nil
}

// checkAdmission says whether a shipping workflow may take task id, in
// status status, into in-progress.
func checkAdmission(id, status, workflow string) error {
	if slices.Contains(admissible, events.TaskStatusMeaning(status)) {
		return nil
	}
	return fmt.Errorf("%w: task %s is %s; %s takes a task that is %s", ErrTransition, id, status, workflow, strings.Join(admissible, ", "))
}

// meaningfulSummary reports whether an execution summary says something:
// not empty, not a placeholder.
func meaningfulSummary(s string) bool {
	t := strings.ToLower(strings.Trim(strings.TrimSpace(s), ".!"))
	switch t {
	case "", "tbd", "todo", "n/a", "na", "none", "-", "done", "summary", "placeholder", "wip":
		return false
	}
	return true
}
