package events

// Task event types: the life of a Groundhog task record.
const (
	TaskCreated       = "task.created"
	TaskPlanChanged   = "task.plan_changed"
	TaskStatusChanged = "task.status_changed"
)

func init() {
	register(TaskCreated, AggregateTask, TaskCreatedData{})
	register(TaskPlanChanged, AggregateTask, TaskPlanChangedData{})
	register(TaskStatusChanged, AggregateTask, TaskStatusChangedData{})
}

// Task statuses.
const (
	TaskActive  = "active"  // created, or ready for another run
	TaskRunning = "running" // a Groundhog run works on it
	TaskDone    = "done"    // every checkpoint committed
	// TaskHeld: every checkpoint is committed, and commits of them are held
	// for approval (materialize: on_approval) on the task's held ref, not
	// yet on its branch; orbit groundhog approve makes it done.
	TaskHeld    = "held"
	TaskBlocked = "blocked" // a checkpoint's attempt budget was spent
	// TaskBudgetExhausted: the task's budget (tokens, cost) was spent; a
	// plan version with a higher budget lets a run continue it.
	TaskBudgetExhausted = "budget_exhausted"

	// GroundhogJobPrefix starts the name of the one-step job a Groundhog
	// run of a task is: groundhog-<task id>.
	GroundhogJobPrefix = "groundhog-"
)

// TaskCreatedData is a task as it was created: version 1 of its plan.
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
}

// TaskPlanChangedData records a new version of a task's plan.
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
}
