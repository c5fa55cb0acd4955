package events

// Shipping event types: what a shipping run records beside its steps.
const (
	// GateStarvation records that a gate gave up waiting for the files
	// its bundle needs: the gate run fails right after it.
	GateStarvation = "gate.starvation"
)

func init() {
	register(GateStarvation, AggregateRun, GateStarvationData{})
}

// GateStarvationData says what a gate waited for in vain: the files other
// runs held (and who held them) and the dependencies not yet done.
type GateStarvationData struct {
	TaskIDs        []string       `json:"task_ids"`
	Conflicts      []LockConflict `json:"conflicts,omitempty"`
	WaitingOnDeps  []string       `json:"waiting_on_deps,omitempty"`
	MaxWaitSeconds int            `json:"max_wait_seconds,omitempty"`
}

// LockConflict is a resource a reservation wanted and another held: File
// (a task's context file, or task:<id>), held by run HeldByID.
type LockConflict struct {
	File     string `json:"file"`
	HeldBy   string `json:"held_by"`
	HeldByID string `json:"held_by_id"`
}
