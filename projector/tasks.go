package projector

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/orbitrun/orbit/events"
)

// TaskView is what the views know about one task (DESIGN §4, §13): the
// seed's record, its checkpoint plan for Groundhog, where its work is, and
// every transition of its status. It is encoded as JSON in the tasks
// bucket and returned by the queries.
type TaskView struct {
	ID          string `json:"id"`
	Title       string `json:"title"`
	Description string `json:"description,omitempty"`
	// Status is one of events.TaskStatuses, or a word of the log's first
	// version (events.TaskActive, TaskRunning) for a task whose last
	// change was recorded with it: events.TaskStatusMeaning reads both.
	Status string `json:"status"`
	// StatusReason is the reason the last status change gave.
	StatusReason string `json:"status_reason,omitempty"`

	AcceptanceCriteria []string `json:"acceptance_criteria,omitempty"`
	ContextFiles       []string `json:"context_files,omitempty"`
	Dependencies       []string `json:"dependencies,omitempty"`
	PlanText           string   `json:"plan_text,omitempty"`
	Priority           string   `json:"priority,omitempty"`
	Type               string   `json:"type,omitempty"`
	ExecutionSummary   string   `json:"execution_summary,omitempty"`

	// Workspace is the repository the task changes. Branch is its branch:
	// the one it was created with, or the branch of the worktree a
	// shipping run gave it (Worktree, started at BaseSHA of Base).
	Workspace string `json:"workspace"`
	Branch    string `json:"branch"`
	Worktree  string `json:"worktree,omitempty"`
	Base      string `json:"base,omitempty"`
	BaseSHA   string `json:"base_sha,omitempty"`
	// PullRequest is the pull request a shipping run opened for the task.
	PullRequest *events.TaskPullRequest `json:"pull_request,omitempty"`

	// Plan is the checkpoint plan Groundhog runs (empty when the task has
	// none), at PlanVersion.
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
	// Runs are the runs that worked on the task, in the order they began:
	// shipping runs (which gave it a worktree) and Groundhog runs.
	Runs []TaskRun `json:"runs,omitempty"`
	// History is every status the task was given, oldest first.
	History []TaskTransition `json:"history,omitempty"`
}

// TaskRun is a run that worked on a task.
type TaskRun struct {
	RunID string     `json:"run_id"`
	Kind  string     `json:"kind"` // TaskRunShip or TaskRunGroundhog
	At    *time.Time `json:"at,omitempty"`
}

// Kinds of TaskRun.
const (
	TaskRunShip      = "ship"
	TaskRunGroundhog = "groundhog"
)

// TaskTransition is one change of a task's status: from what (empty at
// creation), to what, by whom and why.
type TaskTransition struct {
	From   string     `json:"from,omitempty"`
	To     string     `json:"to"`
	By     string     `json:"by,omitempty"`
	Reason string     `json:"reason,omitempty"`
	RunID  string     `json:"run_id,omitempty"`
	At     *time.Time `json:"at,omitempty"`
	// Signer signed the request that asked for the change (nil: a
	// pipeline's, or one recorded before changes were signed).
	Signer *events.Signer `json:"signer,omitempty"`
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
// its run (run.finished); 3 the seed's fields, the worktree a shipping run
// gives the task, its runs and the history of its status; 4 the pull
// request a shipping run opened, and who signed each change of status.
func (tasksView) version() int      { return 4 }
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
	events.TaskCreated:          on((*tasksBatch).taskCreated),
	events.TaskPlanChanged:      on((*tasksBatch).taskPlanChanged),
	events.TaskStatusChanged:    on((*tasksBatch).taskStatusChanged),
	events.TaskUpdated:          on((*tasksBatch).taskUpdated),
	events.TaskWorktreeAssigned: on((*tasksBatch).worktreeAssigned),
	events.GroundhogRunStarted:  on((*tasksBatch).runStarted),
	events.RunFinished:          on((*tasksBatch).runFinished),
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
	status := d.Status
	if status == "" {
		status = events.TaskActive // the first version's tasks started active
	}
	if !knownStatus(status) {
		return badStatus(ev, status)
	}
	e.rec = &TaskView{
		ID:                 ev.TaskID,
		Title:              d.Title,
		Description:        d.Description,
		Status:             status,
		AcceptanceCriteria: d.AcceptanceCriteria,
		ContextFiles:       d.ContextFiles,
		Dependencies:       d.Dependencies,
		PlanText:           d.PlanText,
		Priority:           d.Priority,
		Type:               d.Type,
		Workspace:          d.Workspace,
		Branch:             d.Branch,
		Plan:               d.Plan,
		PlanVersion:        d.PlanVersion,
		PlanDigest:         d.PlanDigest,
		CreatedAt:          eventTime(ev),
		History:            []TaskTransition{{To: status, By: d.By, At: eventTime(ev), Signer: d.Signer}},
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

// knownStatus reports whether a recorded status word is one a task may
// have: today's, or one of the first version's.
func knownStatus(s string) bool {
	return slices.Contains(events.TaskStatuses(), s) || s == events.TaskActive || s == events.TaskRunning
}

func badStatus(ev events.Event, s string) error {
	return fmt.Errorf("%w: %s %s at sequence %d: %q is not a task status",
		events.ErrInvalidEvent, ev.Type, ev.ID, ev.Seq, s)
}

func (b *tasksBatch) taskStatusChanged(ev events.Event, d *events.TaskStatusChangedData) error {
	if !knownStatus(d.Status) {
		return badStatus(ev, d.Status)
	}
	e, err := existingTask(b.tasks, b.log, ev)
	if e == nil || err != nil {
		return err
	}
	from := d.From
	if from == "" {
		from = e.rec.Status
	}
	b.transition(e, ev, TaskTransition{From: from, To: d.Status, By: d.By, Reason: d.Reason, RunID: d.RunID, Signer: d.Signer})
	return nil
}

// transition gives a task a new status and records it in its history.
func (b *tasksBatch) transition(e *cached[TaskView], ev events.Event, t TaskTransition) {
	t.At = eventTime(ev)
	e.rec.Status = t.To
	e.rec.StatusReason = t.Reason
	// A new slice: the old one may share its array with a record decoded
	// earlier in the batch.
	e.rec.History = append(slices.Clip(e.rec.History), t)
	touchTask(e, ev)
}

func (b *tasksBatch) taskUpdated(ev events.Event, d *events.TaskUpdatedData) error {
	e, err := existingTask(b.tasks, b.log, ev)
	if e == nil || err != nil {
		return err
	}
	r := e.rec
	set(&r.Title, d.Title)
	set(&r.Description, d.Description)
	set(&r.AcceptanceCriteria, d.AcceptanceCriteria)
	set(&r.ContextFiles, d.ContextFiles)
	set(&r.Dependencies, d.Dependencies)
	set(&r.PlanText, d.PlanText)
	set(&r.Priority, d.Priority)
	set(&r.Type, d.Type)
	set(&r.ExecutionSummary, d.ExecutionSummary)
	if d.PullRequest != nil {
		pr := *d.PullRequest
		r.PullRequest = &pr
	}
	touchTask(e, ev)
	return nil
}

// set replaces *field with *value when value is set.
func set[T any](field *T, value *T) {
	if value != nil {
		*field = *value
	}
}

func (b *tasksBatch) worktreeAssigned(ev events.Event, d *events.TaskWorktreeAssignedData) error {
	e, err := existingTask(b.tasks, b.log, ev)
	if e == nil || err != nil {
		return err
	}
	r := e.rec
	r.Workspace, r.Worktree, r.Branch, r.Base, r.BaseSHA = d.Repository, d.Worktree, d.Branch, d.Base, d.BaseSHA
	addRun(r, TaskRun{RunID: d.RunID, Kind: TaskRunShip, At: eventTime(ev)})
	touchTask(e, ev)
	return nil
}

// addRun adds a run to a task's runs unless it is there.
func addRun(r *TaskView, run TaskRun) {
	if !slices.ContainsFunc(r.Runs, func(x TaskRun) bool { return x.RunID == run.RunID && x.Kind == run.Kind }) {
		r.Runs = append(slices.Clip(r.Runs), run)
	}
}

func (b *tasksBatch) runStarted(ev events.Event, d *events.GroundhogRunStartedData) error {
	e, err := existingTask(b.tasks, b.log, ev)
	if e == nil || err != nil {
		return err
	}
	e.rec.LastRunID = d.RunID
	addRun(e.rec, TaskRun{RunID: d.RunID, Kind: TaskRunGroundhog, At: eventTime(ev)})
	touchTask(e, ev)
	return nil
}

// runFinished ends the in-progress status of a task whose Groundhog run
// ended without saying so itself: cancelled, failed while its engine was
// down, or stopped before it could record its end. The task is ready for
// another run, and says why this one ended. The new status is in the words
// of the old one: a task recorded running becomes active, one recorded
// in-progress becomes backlog.
func (b *tasksBatch) runFinished(ev events.Event, d *events.RunFinishedData) error {
	taskID, ok := strings.CutPrefix(ev.Job, events.GroundhogJobPrefix)
	if !ok {
		return nil
	}
	e, err := b.tasks.get(taskID)
	if err != nil || e.rec == nil || e.rec.LastRunID != ev.RunID {
		return err
	}
	var to string
	switch e.rec.Status {
	case events.TaskRunning:
		to = events.TaskActive
	case events.TaskInProgress:
		to = events.TaskBacklog
	default:
		return nil
	}
	reason := "run " + ev.RunID + " " + d.State
	if d.Error != nil {
		reason += ": " + d.Error.Message
	}
	b.transition(e, ev, TaskTransition{From: e.rec.Status, To: to, By: "run:" + ev.RunID, Reason: reason, RunID: ev.RunID})
	return nil
}

func (b *tasksBatch) flush() error { return b.tasks.flush() }
