package projector

import (
	"fmt"
	"log/slog"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/orbitrun/orbit/events"
)

// TaskView is what the views know about one Groundhog task (DESIGN §4).
// It is encoded as JSON in the tasks bucket and returned by the queries.
type TaskView struct {
	ID     string `json:"id"`
	Title  string `json:"title"`
	Status string `json:"status"` // events.TaskActive, TaskRunning, TaskDone, TaskHeld, TaskBlocked or TaskBudgetExhausted
	// StatusReason is the reason the last task.status_changed gave.
	StatusReason string `json:"status_reason,omitempty"`

	Workspace string `json:"workspace"`
	Branch    string `json:"branch"`

	Plan        string `json:"plan"`
	PlanVersion int    `json:"plan_version"`
	PlanDigest  string `json:"plan_digest"`

	// CreatedAt is the time of task.created; UpdatedAt that of the last
	// event that changed this record (a task.* event or
	// groundhog.run.started), not of every Groundhog event of the task.
	CreatedAt *time.Time `json:"created_at,omitempty"`
	UpdatedAt *time.Time `json:"updated_at,omitempty"`

	// LastRunID is the run of the last groundhog.run.started of the task.
	LastRunID string `json:"last_run_id,omitempty"`
}

// Buckets of the tasks view.
var (
	// task id → TaskView
	bucketTasks = []byte("tasks")
)

// tasksView folds task.* events, and the start of Groundhog runs, into the
// tasks bucket.
type tasksView struct{}

func (tasksView) name() string { return "tasks" }

// version history: 1 first format; 2 a task's running status ends with
// its run (run.finished).
func (tasksView) version() int      { return 2 }
func (tasksView) buckets() [][]byte { return [][]byte{bucketTasks} }

func (tasksView) begin(tx *bolt.Tx, log *slog.Logger) (viewBatch, error) {
	b := tx.Bucket(bucketTasks)
	name := func(id string) string { return "task " + id }
	batch := &tasksBatch{log: log, tasks: newBatchCache[TaskView](b, name)}
	return folding[*tasksBatch]{batch, taskFolds}, nil
}

func (tasksView) recordChecks() []recordCheck {
	return []recordCheck{records(bucketTasks, func(k []byte, v *TaskView) error {
		return mustMatch("id", v.ID, string(k))
	})}
}

// taskFolds maps each event type the tasks view knows to its fold; other
// types are skipped.
var taskFolds = foldTable[*tasksBatch]{
	events.TaskCreated:         on((*tasksBatch).taskCreated),
	events.TaskPlanChanged:     on((*tasksBatch).taskPlanChanged),
	events.TaskStatusChanged:   on((*tasksBatch).taskStatusChanged),
	events.GroundhogRunStarted: on((*tasksBatch).runStarted),
	events.RunFinished:         on((*tasksBatch).runFinished),
}

// tasksBatch holds the task records one transaction touches and writes each
// of them once, in flush.
type tasksBatch struct {
	log   *slog.Logger
	tasks *batchCache[TaskView] // by task id
}

// touchTask marks a task changed by ev.
func touchTask(e *cached[TaskView], ev events.Event) {
	e.rec.UpdatedAt = eventTime(ev)
	e.dirty = true
}

func (b *tasksBatch) taskCreated(ev events.Event, d *events.TaskCreatedData) error {
	e, err := b.tasks.get(ev.TaskID)
	if err != nil {
		return err
	}
	if e.rec != nil {
		b.log.Debug("ignoring a second task.created", "seq", ev.Seq, "task", ev.TaskID)
		return nil
	}
	e.rec = &TaskView{
		ID:          ev.TaskID,
		Title:       d.Title,
		Status:      events.TaskActive,
		Workspace:   d.Workspace,
		Branch:      d.Branch,
		Plan:        d.Plan,
		PlanVersion: d.PlanVersion,
		PlanDigest:  d.PlanDigest,
		CreatedAt:   eventTime(ev),
	}
	touchTask(e, ev)
	return nil
}

func (b *tasksBatch) taskPlanChanged(ev events.Event, d *events.TaskPlanChangedData) error {
	e, err := existingTask(b.tasks, b.log, ev)
	if e == nil || err != nil {
		return err
	}
	e.rec.Plan = d.Plan
	e.rec.PlanVersion = d.PlanVersion
	e.rec.PlanDigest = d.PlanDigest
	touchTask(e, ev)
	return nil
}

func (b *tasksBatch) taskStatusChanged(ev events.Event, d *events.TaskStatusChangedData) error {
	switch d.Status {
	case events.TaskActive, events.TaskRunning, events.TaskDone, events.TaskHeld, events.TaskBlocked, events.TaskBudgetExhausted:
	default:
		return fmt.Errorf("%w: %s %s at sequence %d: %q is not a task status",
			events.ErrInvalidEvent, ev.Type, ev.ID, ev.Seq, d.Status)
	}
	e, err := existingTask(b.tasks, b.log, ev)
	if e == nil || err != nil {
		return err
	}
	e.rec.Status = d.Status
	e.rec.StatusReason = d.Reason
	touchTask(e, ev)
	return nil
}

func (b *tasksBatch) runStarted(ev events.Event, d *events.GroundhogRunStartedData) error {
	e, err := existingTask(b.tasks, b.log, ev)
	if e == nil || err != nil {
		return err
	}
	e.rec.LastRunID = d.RunID
	touchTask(e, ev)
	return nil
}

// runFinished ends the running status of a task whose Groundhog run ended
// without saying so itself: cancelled, failed while its engine was down,
// or stopped before it could record its end. The task is ready for another
// run, and says why this one ended.
func (b *tasksBatch) runFinished(ev events.Event, d *events.RunFinishedData) error {
	taskID, ok := strings.CutPrefix(ev.Job, events.GroundhogJobPrefix)
	if !ok {
		return nil
	}
	e, err := b.tasks.get(taskID)
	if err != nil || e.rec == nil || e.rec.Status != events.TaskRunning || e.rec.LastRunID != ev.RunID {
		return err
	}
	e.rec.Status = events.TaskActive
	e.rec.StatusReason = "run " + ev.RunID + " " + d.State
	if d.Error != nil {
		e.rec.StatusReason += ": " + d.Error.Message
	}
	touchTask(e, ev)
	return nil
}

func (b *tasksBatch) flush() error { return b.tasks.flush() }
