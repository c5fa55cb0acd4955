package projector

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/orbitrun/orbit/events"
)

// GroundhogRun is the audit record of a task's Groundhog work (DESIGN §4):
// every run, every checkpoint with every attempt and everything recorded
// about it, the drifts and the grounding chain. It is for people and
// auditors; prompts never see it (they see GroundhogMemory).
type GroundhogRun struct {
	TaskID string `json:"task_id"`
	// Runs are the Groundhog runs that took the task on, in the order
	// they started.
	Runs []GroundhogRunRecord `json:"runs,omitempty"`
	// Checkpoints are in plan order as first seen: those a run listed when
	// it started, then any other an attempt named.
	Checkpoints []CheckpointRecord `json:"checkpoints,omitempty"`
	// Drifts and Groundings are in log order.
	Drifts     []DriftRecord     `json:"drifts,omitempty"`
	Groundings []GroundingRecord `json:"groundings,omitempty"`
	// Control are the approvals and rewinds of the task's commits, in
	// log order.
	Control []ControlRecord `json:"control,omitempty"`
}

// ControlRecord is a groundhog.approved (Action "approved") or a
// groundhog.rewound_to (Action "rewound", Checkpoint the one rewound to
// before).
type ControlRecord struct {
	Action     string    `json:"action"`
	Checkpoint string    `json:"checkpoint,omitempty"`
	Ref        string    `json:"ref"`
	FromSHA    string    `json:"from_sha"`
	ToSHA      string    `json:"to_sha"`
	By         string    `json:"by"`
	Reason     string    `json:"reason,omitempty"`
	At         time.Time `json:"at"`
	// Signer signed the request (nil: recorded before it was).
	Signer *events.Signer `json:"signer,omitempty"`
}

// GroundhogRunRecord is one run's work on the task: groundhog.run.started
// and groundhog.run.finished.
type GroundhogRunRecord struct {
	RunID       string   `json:"run_id"`
	StepKey     string   `json:"step_key,omitempty"`
	Activity    string   `json:"activity,omitempty"`
	PlanVersion int      `json:"plan_version"` // the version the run pinned
	Checkpoints []string `json:"checkpoints,omitempty"`
	Budgets     []int    `json:"budgets,omitempty"`

	StartedAt  *time.Time `json:"started_at,omitempty"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`
	// State is "" while the run works, then one of events.GroundhogDone,
	// GroundhogBlocked, GroundhogDrifted, GroundhogFailed or
	// GroundhogCancelled.
	State     string `json:"state,omitempty"`
	Committed int    `json:"committed,omitempty"`
	Message   string `json:"message,omitempty"`
}

// Checkpoint statuses.
const (
	CheckpointPending   = "pending"   // listed by a run, never attempted
	CheckpointActive    = "active"    // an attempt started, none committed since
	CheckpointCommitted = "committed" // its last attempt was committed
	CheckpointAbandoned = "abandoned" // its budget was spent
)

// CheckpointRecord is one checkpoint of the plan.
type CheckpointRecord struct {
	ID     string `json:"id"`
	Status string `json:"status"` // CheckpointPending, …
	// Budget is the attempt budget the last run that listed it gave it.
	Budget int `json:"budget,omitempty"`
	// SHA is the commit of its last committed attempt.
	SHA       string         `json:"sha,omitempty"`
	Abandoned *AbandonRecord `json:"abandoned,omitempty"`
	// Attempts are filled by the GroundhogRun query, by day; they are
	// stored apart from the task's record.
	Attempts []AttemptRecord `json:"attempts,omitempty"`
}

// AbandonRecord is a groundhog.abandoned event.
type AbandonRecord struct {
	Attempts int       `json:"attempts"`
	Budget   int       `json:"budget"`
	At       time.Time `json:"at"`
}

// Attempt outcomes.
const (
	AttemptOpen        = "open"        // started, not closed (yet)
	AttemptCommitted   = "committed"   // its work was committed
	AttemptRewound     = "rewound"     // its work was captured on its scratch branch and undone
	AttemptInterrupted = "interrupted" // found open after a crash, and rewound
	AttemptAbandoned   = "abandoned"   // closed by orbit groundhog abandon
)

// AttemptRecord is everything recorded about one attempt, in log order
// within each list.
type AttemptRecord struct {
	Checkpoint string `json:"checkpoint"`
	Attempt    int    `json:"attempt"` // within the checkpoint
	Day        int    `json:"day"`     // within the task

	RunID         string   `json:"run_id,omitempty"`
	TaskBranch    string   `json:"task_branch,omitempty"`
	ScratchBranch string   `json:"scratch_branch,omitempty"`
	SnapshotRef   string   `json:"snapshot_ref,omitempty"`
	PlanVersion   int      `json:"plan_version,omitempty"`
	Untracked     []string `json:"untracked,omitempty"`
	ReplayStart   int      `json:"replay_start,omitempty"`

	// StartedAt is the time of groundhog.attempt.started; EndedAt that of
	// the event that closed the attempt (the first groundhog.committed,
	// groundhog.rewound or groundhog.interrupted).
	StartedAt *time.Time `json:"started_at,omitempty"`
	EndedAt   *time.Time `json:"ended_at,omitempty"`
	// Outcome is AttemptOpen until the attempt is closed. Committed is
	// final; interrupted wins over rewound, which an interrupted attempt
	// also is, whichever of the two events comes first.
	Outcome string `json:"outcome"`
	// InterruptedBy is the run that found the attempt open.
	InterruptedBy string `json:"interrupted_by,omitempty"`
	// Abandon is who abandoned the attempt and why (AttemptAbandoned).
	Abandon *AttemptAbandonRecord `json:"abandon,omitempty"`

	Turns []TurnRecord `json:"turns,omitempty"`
	// Sessions is the account each CLI session of the attempt gave at its
	// end (groundhog.agent.usage): a Codex session's tokens are only
	// there, and every session's cost.
	Sessions      []SessionUsageRecord  `json:"sessions,omitempty"`
	ToolCalls     []ToolCallRecord      `json:"tool_calls,omitempty"`
	Denials       []DenialRecord        `json:"denials,omitempty"`
	SideEffects   []SideEffectRecord    `json:"side_effects,omitempty"`
	Verb          *VerbRecord           `json:"verb,omitempty"`
	Verifications []VerificationRecord  `json:"verifications,omitempty"`
	Failure       *events.FailureReport `json:"failure,omitempty"`
	Rewind        *RewindRecord         `json:"rewind,omitempty"`
	Commit        *CommitRecord         `json:"commit,omitempty"`
}

// AttemptAbandonRecord is a groundhog.interrupted event recorded by an
// abandon.
type AttemptAbandonRecord struct {
	By     string `json:"by"`
	Reason string `json:"reason"`
	// Signer signed the abandon (nil: recorded before it was).
	Signer *events.Signer `json:"signer,omitempty"`
	// WorkspaceKept: the task branch and workspace were not reset (the
	// repository was not where the attempt left it), not rewound.
	WorkspaceKept bool      `json:"workspace_kept,omitempty"`
	At            time.Time `json:"at"`
}

// TurnRecord is a groundhog.agent.turn event.
type TurnRecord struct {
	Turn        int               `json:"turn"`
	Provider    string            `json:"provider,omitempty"`
	Model       string            `json:"model"`
	Fixture     string            `json:"fixture,omitempty"`
	FixtureTurn int               `json:"fixture_turn,omitempty"`
	StopReason  string            `json:"stop_reason"`
	Usage       events.TokenUsage `json:"usage"`
	Text        string            `json:"text,omitempty"`
	ToolUses    []string          `json:"tool_uses,omitempty"`
	Response    *events.BlobRef   `json:"response,omitempty"`
	At          time.Time         `json:"at"`
}

// SessionUsageRecord is a groundhog.agent.usage event. With UsageInTurns
// its tokens are the attempt's turns' own, not more of them.
type SessionUsageRecord struct {
	Usage        events.TokenUsage `json:"usage"`
	CostUSD      float64           `json:"cost_usd,omitempty"`
	UsageInTurns bool              `json:"usage_in_turns,omitempty"`
	At           time.Time         `json:"at"`
}

// ToolCallRecord is a groundhog.tool.called event.
type ToolCallRecord struct {
	Turn        int             `json:"turn"`
	ToolUseID   string          `json:"tool_use_id"`
	Name        string          `json:"name"`
	AgentTool   string          `json:"agent_tool,omitempty"` // a CLI agent's own name for the tool
	InputDigest string          `json:"input_digest"`
	InputSize   int             `json:"input_size"`
	ResultSize  int             `json:"result_size"`
	DurationMS  int64           `json:"duration_ms"`
	Error       string          `json:"error,omitempty"`
	Result      *events.BlobRef `json:"result,omitempty"`
	At          time.Time       `json:"at"`
}

// DenialRecord is a groundhog.tool.denied event.
type DenialRecord struct {
	Turn      int       `json:"turn"`
	ToolUseID string    `json:"tool_use_id"`
	Name      string    `json:"name"`
	AgentTool string    `json:"agent_tool,omitempty"` // a CLI agent's own name for the tool
	Reason    string    `json:"reason"`
	Path      string    `json:"path,omitempty"`
	OnDenial  string    `json:"on_denial,omitempty"`
	At        time.Time `json:"at"`
}

// SideEffectRecord is a groundhog.side_effect event.
type SideEffectRecord struct {
	events.SideEffect
	At time.Time `json:"at"`
}

// VerbRecord is the groundhog.verb event that closed the attempt's session.
type VerbRecord struct {
	Verb            string              `json:"verb"`
	Summary         string              `json:"summary,omitempty"`
	SideEffects     []events.SideEffect `json:"side_effects,omitempty"`
	WhatTried       string              `json:"what_tried,omitempty"`
	WhatHappened    string              `json:"what_happened,omitempty"`
	NextAttemptPlan string              `json:"next_attempt_plan,omitempty"`
	At              time.Time           `json:"at"`
}

// VerificationRecord is one groundhog.verification event, pass or fail,
// with its criteria exactly as recorded.
type VerificationRecord struct {
	Passed  bool                     `json:"passed"`
	Results []events.CriterionResult `json:"results"`
	At      time.Time                `json:"at"`
}

// RewindRecord is a groundhog.rewound event.
type RewindRecord struct {
	ScratchBranch string    `json:"scratch_branch"`
	ScratchSHA    string    `json:"scratch_sha"`
	Reason        string    `json:"reason"`
	At            time.Time `json:"at"`
}

// CommitRecord is a groundhog.committed event.
type CommitRecord struct {
	SHA         string              `json:"sha"`
	NoChange    bool                `json:"no_change,omitempty"`
	Summary     string              `json:"summary"`
	SideEffects []events.SideEffect `json:"side_effects,omitempty"`
	At          time.Time           `json:"at"`
}

// DriftRecord is a groundhog.drift_detected event.
type DriftRecord struct {
	RunID          string    `json:"run_id"`
	PinnedVersion  int       `json:"pinned_version"`
	CurrentVersion int       `json:"current_version"`
	At             time.Time `json:"at"`
}

// GroundingRecord is a groundhog.grounding event: a link of the task's hash
// chain.
type GroundingRecord struct {
	Checkpoint string    `json:"checkpoint"`
	Attempt    int       `json:"attempt"`
	Day        int       `json:"day"`
	SHA        string    `json:"sha"`
	PrevHash   string    `json:"prev_hash"`
	StateHash  string    `json:"state_hash"`
	At         time.Time `json:"at"`
}

// Buckets of the groundhog_run view. A task's record and each of its
// attempts are stored apart, so that a tool call re-encodes one attempt,
// not the task's whole history.
var (
	// task id → GroundhogRun without attempts
	bucketGroundhogRuns = []byte("groundhog_runs")
	// task id + "\x00" + day (10 zero-padded digits) → AttemptRecord
	bucketGroundhogAttempts = []byte("groundhog_attempts")
)

// attemptKey is the key of an attempt in bucketGroundhogAttempts. Task ids
// never contain NUL, so a task's attempts are exactly the keys with prefix
// task + "\x00", in day order.
func attemptKey(task string, day int) string { return fmt.Sprintf("%s\x00%010d", task, day) }

// attemptName names the attempt under an attemptKey in errors: "attempt
// day 3 of task T-7".
func attemptName(key string) string {
	task, day, _ := strings.Cut(key, "\x00")
	return fmt.Sprintf("attempt day %s of task %s", strings.TrimLeft(day, "0"), task)
}

// groundhogRunView folds every Groundhog event into the audit record.
type groundhogRunView struct{}

func (groundhogRunView) name() string { return "groundhog_run" }

// version history: 1 first format; 2 a CLI agent's own tool names
// (agent_tool) on tool calls and denials.
func (groundhogRunView) version() int { return 3 }
func (groundhogRunView) buckets() [][]byte {
	return [][]byte{bucketGroundhogRuns, bucketGroundhogAttempts}
}

func (groundhogRunView) begin(tx *bolt.Tx, log *slog.Logger) (viewBatch, error) {
	taskName := func(id string) string { return "groundhog record of task " + id }
	batch := &groundhogRunBatch{
		log:      log,
		tasks:    newBatchCache[GroundhogRun](tx.Bucket(bucketGroundhogRuns), taskName),
		attempts: newBatchCache[AttemptRecord](tx.Bucket(bucketGroundhogAttempts), attemptName),
	}
	return folding[*groundhogRunBatch]{batch, groundhogRunFolds}, nil
}

func (groundhogRunView) recordChecks() []recordCheck {
	return []recordCheck{
		records(bucketGroundhogRuns, func(k []byte, r *GroundhogRun) error {
			for _, c := range r.Checkpoints {
				if len(c.Attempts) > 0 {
					return errors.New("the record holds attempts, which are stored apart")
				}
			}
			return mustMatch("task id", r.TaskID, string(k))
		}),
		records(bucketGroundhogAttempts, func(k []byte, a *AttemptRecord) error {
			task, _, ok := bytes.Cut(k, []byte{0})
			if !ok {
				return errors.New("the key names no day")
			}
			if attemptKey(string(task), a.Day) != string(k) {
				return fmt.Errorf("the record is of day %d, which is not its key's", a.Day)
			}
			return nil
		}),
	}
}
