package events

// Task event types: the life of a task record (DESIGN §13), which is also
// the task a Groundhog run works on.
//
// Version history of the stored format, all additive: task.created,
// task.plan_changed and task.status_changed as first written (a Groundhog
// task: title, workspace, branch, checkpoint plan; statuses active,
// running, done, blocked, budget_exhausted); then the seed's fields on
// task.created, from and by on task.status_changed, task.updated and
// task.worktree_assigned, and the lifecycle statuses. An event of the first
// version decodes unchanged: every added field is optional.
const (
	TaskCreated          = "task.created"
	TaskPlanChanged      = "task.plan_changed"
	TaskStatusChanged    = "task.status_changed"
	TaskUpdated          = "task.updated"
	TaskWorktreeAssigned = "task.worktree_assigned"
)

func init() {
	register(TaskCreated, AggregateTask, TaskCreatedData{})
	register(TaskPlanChanged, AggregateTask, TaskPlanChangedData{})
	register(TaskStatusChanged, AggregateTask, TaskStatusChangedData{})
	register(TaskUpdated, AggregateTask, TaskUpdatedData{})
	register(TaskWorktreeAssigned, AggregateTask, TaskWorktreeAssignedData{})
}

// Task statuses: the seed's lifecycle, and Groundhog's held and
// budget_exhausted.
const (
	TaskProposed   = "proposed"    // awaiting approval before it enters the backlog
	TaskBacklog    = "backlog"     // approved and waiting for work
	TaskInProgress = "in-progress" // a run works on it
	TaskReview     = "review"      // implemented and landed or proposed; awaiting review
	TaskDone       = "done"        // accepted and closed
	TaskBlocked    = "blocked"     // stopped until someone decides (a checkpoint's budget was spent)
	TaskRejected   = "rejected"    // declined; may be reopened
	TaskArchived   = "archived"    // put away; may be restored
	TaskSomeday    = "someday"     // wanted, not yet actionable
	TaskFriction   = "friction"    // a record of friction met while working, to be triaged
	// TaskHeld: every checkpoint is committed, and commits of them are held
	// for approval (materialize: on_approval) on the task's held ref, not
	// yet on its branch; orbit groundhog approve makes it done.
	TaskHeld = "held"
	// TaskBudgetExhausted: the task's budget (tokens, cost) was spent; a
	// plan version with a higher budget lets a run continue it.
	TaskBudgetExhausted = "budget_exhausted"

	// TaskActive and TaskRunning are the words the first version of the
	// log used for backlog and in-progress. Events keep the words they
	// were recorded with; TaskStatusMeaning reads them.
	TaskActive  = "active"
	TaskRunning = "running"

	// GroundhogJobPrefix starts the name of the one-step job a Groundhog
	// run of a task is: groundhog-<task id>.
	GroundhogJobPrefix = "groundhog-"
)

// TaskStatuses lists every status a task may be given today, in lifecycle
// order.
func TaskStatuses() []string {
	return []string{TaskProposed, TaskBacklog, TaskInProgress, TaskReview, TaskDone, TaskBlocked,
		TaskRejected, TaskArchived, TaskSomeday, TaskFriction, TaskHeld, TaskBudgetExhausted}
}

// TaskStatusMeaning returns the status a recorded status word means
// today: the first version's active and running are backlog and
// in-progress; every other word is itself.
func TaskStatusMeaning(recorded string) string {
	switch recorded {
	case TaskActive:
		return TaskBacklog
	case TaskRunning:
		return TaskInProgress
	}
	return recorded
}

// TaskCreatedData is a task as it was created. Plan is its checkpoint plan
// (Groundhog's; empty when it has none), at version PlanVersion.
type TaskCreatedData struct {
	Title       string `json:"title"`
	Workspace   string `json:"workspace"`
	Branch      string `json:"branch"`
	Plan        string `json:"plan"`
	PlanVersion int    `json:"plan_version"`
	PlanDigest  string `json:"plan_digest"`
	// Signer signed the request that created the task (nil: one
	// recorded before it was).
	Signer *Signer `json:"signer,omitempty"`

	// The seed's fields, added in the second version.
	Description        string   `json:"description,omitempty"`
	AcceptanceCriteria []string `json:"acceptance_criteria,omitempty"`
	ContextFiles       []string `json:"context_files,omitempty"`
	Dependencies       []string `json:"dependencies,omitempty"`
	// PlanText is the task's plan in prose, for whoever implements it.
	PlanText string `json:"plan_text,omitempty"`
	Priority string `json:"priority,omitempty"`
	Type     string `json:"type,omitempty"`
	// Status is the status the task starts in; empty in the first
	// version, whose tasks started active.
	Status string `json:"status,omitempty"`
	// By names who created the task (a CLI user, a run).
	By string `json:"by,omitempty"`
}

// TaskPlanChangedData records a new version of a task's checkpoint plan.
type TaskPlanChangedData struct {
	Plan        string `json:"plan"`
	PlanVersion int    `json:"plan_version"`
	PlanDigest  string `json:"plan_digest"`
	// Signer signed the change (nil: one recorded before it was).
	Signer *Signer `json:"signer,omitempty"`
}

// TaskStatusChangedData records a task's new status and why.
type TaskStatusChangedData struct {
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"`
	RunID  string `json:"run_id,omitempty"`
	// From is the status the change left and By who made it (a CLI user,
	// run:<id>, an agent); both empty in the first version.
	From string `json:"from,omitempty"`
	By   string `json:"by,omitempty"`
	// Signer signed the request that asked for the change (nil: a
	// pipeline's, or one recorded before it was).
	Signer *Signer `json:"signer,omitempty"`
}

// TaskUpdatedData records a change of a task's fields other than its
// status and checkpoint plan. A nil field is unchanged; a set one replaces
// the old value (an empty list or string clears it).
type TaskUpdatedData struct {
	Title              *string   `json:"title,omitempty"`
	Description        *string   `json:"description,omitempty"`
	AcceptanceCriteria *[]string `json:"acceptance_criteria,omitempty"`
	ContextFiles       *[]string `json:"context_files,omitempty"`
	Dependencies       *[]string `json:"dependencies,omitempty"`
	PlanText           *string   `json:"plan_text,omitempty"`
	Priority           *string   `json:"priority,omitempty"`
	Type               *string   `json:"type,omitempty"`
	// ExecutionSummary is what the implementer says it did, which delivery
	// (a pull request's body, a reviewer) reads.
	ExecutionSummary *string `json:"execution_summary,omitempty"`
	By               string  `json:"by,omitempty"`
	RunID            string  `json:"run_id,omitempty"`
	// PullRequest is the pull request a shipping run opened for the task
	// (task_pr_pipeline).
	PullRequest *TaskPullRequest `json:"pull_request,omitempty"`
	// Signer signed the request that asked for the change (nil: a
	// pipeline's, or one recorded before it was).
	Signer *Signer `json:"signer,omitempty"`
}

// TaskPullRequest is a pull request that carries a task's change.
type TaskPullRequest struct {
	Number int    `json:"number"`
	URL    string `json:"url,omitempty"`
	Head   string `json:"head"`
	Base   string `json:"base"`
	// Blocked: the run failed and the pull request was opened (or
	// marked) blocked, for a person to finish.
	Blocked bool `json:"blocked,omitempty"`
}

// TaskWorktreeAssignedData records that a shipping run gave the task a
// worktree of its own: Branch in Worktree, a linked work tree of the
// repository at Repository, started at BaseSHA of Base. A Groundhog run of
// the task works there from then on.
type TaskWorktreeAssignedData struct {
	RunID      string `json:"run_id"`
	Repository string `json:"repository"`
	Worktree   string `json:"worktree"`
	Branch     string `json:"branch"`
	Base       string `json:"base"`
	BaseSHA    string `json:"base_sha"`
}
