package projector

import (
	"context"
	"log/slog"
	"slices"

	bolt "go.etcd.io/bbolt"

	"github.com/orbitrun/orbit/events"
)

// GroundhogMemory is what later prompts of a task may see (DESIGN §5): the
// plan version, the checkpoints committed so far and the failure report of
// the checkpoint being worked on.
//
// IMPORTANT: the memory is prompt-facing, and holds nothing else. Turns,
// tool calls, denials, verbs, verifier output, scratch branches and
// transcripts are audit records (GroundhogRun) and must never reach it: a
// prompt built from the memory sees only what a successful checkpoint or a
// failure report chose to say.
type GroundhogMemory struct {
	TaskID string `json:"task_id"`
	// PlanVersion is the version of task.created or of the last
	// task.plan_changed.
	PlanVersion int `json:"plan_version"`
	// Checkpoints are the committed checkpoints in the order they were
	// first committed; committing one again (a plan replayed after a
	// drift) neither adds nor changes an entry, so the rendered memory
	// only ever grows at its end.
	Checkpoints []MemoryCheckpoint `json:"checkpoints,omitempty"`
	// Active is the checkpoint being worked on, nil when none is.
	Active *ActiveCheckpoint `json:"active,omitempty"`
}

// MemoryCheckpoint is a committed checkpoint as later prompts see it.
// NoChange: its attempt succeeded without changing anything, so no commit
// was made (Commit is then the commit it started from, not its own).
type MemoryCheckpoint struct {
	ID          string              `json:"id"`
	Summary     string              `json:"summary"`
	Commit      string              `json:"commit"`
	NoChange    bool                `json:"no_change,omitempty"`
	SideEffects []events.SideEffect `json:"side_effects,omitempty"`
}

// ActiveCheckpoint is the checkpoint being worked on and the failure
// report of its latest failed attempt, if it has one.
type ActiveCheckpoint struct {
	ID          string                `json:"id"`
	LastFailure *events.FailureReport `json:"last_failure,omitempty"`
}

// Buckets of the groundhog_memory view.
var (
	// task id → GroundhogMemory
	bucketMemory = []byte("groundhog_memory")
)

// memoryView folds the events that make a task's prompt-facing memory.
type memoryView struct{}

func (memoryView) name() string { return "groundhog_memory" }

// version history: 1 first format.
func (memoryView) version() int      { return 1 }
func (memoryView) buckets() [][]byte { return [][]byte{bucketMemory} }

func (memoryView) begin(tx *bolt.Tx, log *slog.Logger) (viewBatch, error) {
	b := tx.Bucket(bucketMemory)
	name := func(id string) string { return "memory of task " + id }
	batch := &memoryBatch{log: log, tasks: newBatchCache[GroundhogMemory](b, name)}
	return folding[*memoryBatch]{batch, memoryFolds}, nil
}

func (memoryView) recordChecks() []recordCheck {
	return []recordCheck{records(bucketMemory, func(k []byte, m *GroundhogMemory) error {
		return mustMatch("task id", m.TaskID, string(k))
	})}
}

// memoryFolds maps each event type the memory is made of to its fold.
// Every other type, and every other Groundhog type in particular, is
// skipped: that is what keeps the memory prompt-facing.
var memoryFolds = foldTable[*memoryBatch]{
	events.TaskCreated:            on((*memoryBatch).taskCreated),
	events.TaskPlanChanged:        on((*memoryBatch).taskPlanChanged),
	events.GroundhogAttempt:       on((*memoryBatch).attemptStarted),
	events.GroundhogAttemptFailed: on((*memoryBatch).attemptFailed),
	events.GroundhogCommitted:     on((*memoryBatch).committed),
	events.GroundhogRewoundTo:     on((*memoryBatch).rewoundTo),
}

// memoryBatch holds the memories one transaction touches and writes each
// of them once, in flush.
type memoryBatch struct {
	log   *slog.Logger
	tasks *batchCache[GroundhogMemory] // by task id
}

func (b *memoryBatch) taskCreated(ev events.Event, d *events.TaskCreatedData) error {
	e, err := b.tasks.get(ev.TaskID)
	if err != nil || e.rec != nil {
		return err // a second task.created changes nothing
	}
	e.rec = &GroundhogMemory{TaskID: ev.TaskID, PlanVersion: d.PlanVersion}
	e.dirty = true
	return nil
}

func (b *memoryBatch) taskPlanChanged(ev events.Event, d *events.TaskPlanChangedData) error {
	e, err := existingTask(b.tasks, b.log, ev)
	if e == nil || err != nil {
		return err
	}
	e.rec.PlanVersion = d.PlanVersion
	e.dirty = true
	return nil
}

// attemptStarted makes the attempt's checkpoint the active one. The last
// failure report is kept only when the checkpoint already was active: it
// is what this attempt learns from the previous one.
func (b *memoryBatch) attemptStarted(ev events.Event, d *events.GroundhogAttemptData) error {
	e, err := existingTask(b.tasks, b.log, ev)
	if e == nil || err != nil {
		return err
	}
	if a := e.rec.Active; a == nil || a.ID != d.Checkpoint {
		e.rec.Active = &ActiveCheckpoint{ID: d.Checkpoint}
		e.dirty = true
	}
	return nil
}

// attemptFailed records the report as the active checkpoint's last
// failure. A report about a checkpoint that is not the active one (its
// attempt.started was not seen) makes that checkpoint the active one.
func (b *memoryBatch) attemptFailed(ev events.Event, d *events.GroundhogAttemptFailedData) error {
	e, err := existingTask(b.tasks, b.log, ev)
	if e == nil || err != nil {
		return err
	}
	report := d.Report
	e.rec.Active = &ActiveCheckpoint{ID: d.Checkpoint, LastFailure: &report}
	e.dirty = true
	return nil
}

// committed adds the checkpoint to the committed ones, unless it is there
// already, and ends it being active.
func (b *memoryBatch) committed(ev events.Event, d *events.GroundhogCommittedData) error {
	e, err := existingTask(b.tasks, b.log, ev)
	if e == nil || err != nil {
		return err
	}
	m := e.rec
	if !slices.ContainsFunc(m.Checkpoints, func(c MemoryCheckpoint) bool { return c.ID == d.Checkpoint }) {
		m.Checkpoints = append(m.Checkpoints, MemoryCheckpoint{
			ID: d.Checkpoint, Summary: d.Summary, Commit: d.SHA, NoChange: d.NoChange, SideEffects: d.SideEffects,
		})
		e.dirty = true
	}
	if m.Active != nil && m.Active.ID == d.Checkpoint {
		m.Active = nil
		e.dirty = true
	}
	return nil
}

// rewoundTo forgets the rewound checkpoint and every one committed after
// it (`orbit groundhog rewind --to`): the next attempt's prompt remembers
// only what is still committed. Dropping the end keeps the rendered
// memory a prefix of what it was.
func (b *memoryBatch) rewoundTo(ev events.Event, d *events.GroundhogRewoundToData) error {
	e, err := existingTask(b.tasks, b.log, ev)
	if e == nil || err != nil {
		return err
	}
	m := e.rec
	if i := slices.IndexFunc(m.Checkpoints, func(c MemoryCheckpoint) bool { return c.ID == d.Checkpoint }); i >= 0 {
		m.Checkpoints = m.Checkpoints[:i:i]
	}
	m.Active = nil
	e.dirty = true
	return nil
}

func (b *memoryBatch) flush() error { return b.tasks.flush() }

// GroundhogMemory returns the prompt-facing memory of a task. A task that
// was never created is an error wrapping ErrNotFound; a task without
// Groundhog events has an empty memory at its plan version.
func (p *Projector) GroundhogMemory(ctx context.Context, task string) (*GroundhogMemory, error) {
	var m GroundhogMemory
	err := p.read(ctx, func(tx *bolt.Tx) error {
		return getTaskRecord(tx, bucketMemory, task, &m)
	})
	if err != nil {
		return nil, err
	}
	return &m, nil
}
