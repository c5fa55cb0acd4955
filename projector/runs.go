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

// RunView is what the views know about one run. It is encoded as JSON in the
// runs bucket (without Steps) and returned by the queries.
type RunView struct {
	ID    string `json:"id"`
	Job   string `json:"job"`
	State string `json:"state"` // events.StatePending, StateRunning or a terminal state

	Input  any               `json:"input,omitempty"`
	Output any               `json:"output,omitempty"`
	Error  *events.ErrorInfo `json:"error,omitempty"`

	Requester string `json:"requester,omitempty"`
	// Signer is the identity that signed the run's request (nil: a child
	// run, or a run recorded before it was).
	Signer *events.Signer  `json:"signer,omitempty"`
	Parent *events.RunLink `json:"parent,omitempty"`
	// TraceID is the OpenTelemetry trace the run's spans are in (see
	// events.RunTraceID); empty in views folded before it was.
	TraceID string `json:"trace_id,omitempty"`
	// Children are the runs whose run.requested named this run as parent,
	// in the order they were requested: also those requested after it
	// ended (a detached job.invoke), which, like Retries, grow a terminal
	// record without moving its LastSeq.
	Children []string `json:"children,omitempty"`
	// RetryOf is the run this one retries and RetryFrom the top-level step
	// it ran again from (empty: all of them); Retries are the runs that
	// retried this one, in the order they were requested. Retries is the
	// one part of a terminal record that still grows (without moving
	// LastSeq): the lineage is shown from both ends.
	RetryOf   string   `json:"retry_of,omitempty"`
	RetryFrom string   `json:"retry_from,omitempty"`
	Retries   []string `json:"retries,omitempty"`
	// RetrySteps is what a retry with RetryFrom did with each top-level
	// step before it (reused, re-armed or ran again) and why.
	RetrySteps []events.RetryStep `json:"retry_steps,omitempty"`
	// Routine is the routine and tick the run was started for.
	Routine *events.RoutineTick `json:"routine,omitempty"`

	// Engine is the engine that started the run or last resumed it.
	Engine          string `json:"engine,omitempty"`
	Resumes         int    `json:"resumes,omitempty"`
	CancelRequested bool   `json:"cancel_requested,omitempty"`
	// Paused is set while the run is paused (orbit run pause), since
	// PausedAt; PausedMS is the time its ended pauses lasted.
	Paused   bool       `json:"paused,omitempty"`
	PausedAt *time.Time `json:"paused_at,omitempty"`
	PausedMS int64      `json:"paused_ms,omitempty"`
	// Cancel is the run's cancel request: who asked (the requester it
	// named, the identity that signed it) and why.
	Cancel *events.RunCancelRequestedData `json:"cancel,omitempty"`
	// BudgetRaises are the raises that resumed the run after its budget
	// stopped it (orbit run resume), in order.
	BudgetRaises []events.RunBudgetRaisedData `json:"budget_raises,omitempty"`
	QueuedBehind []string                     `json:"queued_behind,omitempty"`

	RequestedAt *time.Time `json:"requested_at,omitempty"`
	StartedAt   *time.Time `json:"started_at,omitempty"`
	FinishedAt  *time.Time `json:"finished_at,omitempty"`
	DurationMS  int64      `json:"duration_ms,omitempty"`

	// RequestedSeq is the stream sequence of the run's run.requested event.
	RequestedSeq uint64 `json:"requested_seq"`
	// LastSeq is the stream sequence of the last event that changed this
	// record. A terminal record never changes, so late step events (which
	// still update Steps) do not move it.
	LastSeq uint64 `json:"last_seq"`

	// Steps are filled by the RunView and LatestRun queries, in the order
	// the steps were first seen; they are stored apart from the run.
	Steps []StepView `json:"steps,omitempty"`
}

// StepView is what the views know about one step instance of a run.
type StepView struct {
	// Key is the step instance key, e.g. "build" or "loop/2/review".
	Key string `json:"key"`
	// ID is the step id: the last segment of Key that is not an iteration
	// or item number.
	ID string `json:"id"`
	// State is running, retrying, or a terminal state.
	State        string            `json:"state"`
	Attempts     int               `json:"attempts,omitempty"`
	ActivityType string            `json:"activity_type,omitempty"`
	Target       string            `json:"target,omitempty"`
	Input        any               `json:"input,omitempty"`
	Output       any               `json:"output,omitempty"`
	Error        *events.ErrorInfo `json:"error,omitempty"`
	// Deliveries is the highest delivery count a worker reported for the
	// step's command; above 1 an activity may have run in part more than
	// once.
	Deliveries int  `json:"deliveries,omitempty"`
	ExitCode   *int `json:"exit_code,omitempty"`
	// Wait is what a signal gate waits for (its signal and deadline); its
	// State is waiting until it finishes.
	Wait *events.WaitInfo `json:"wait,omitempty"`
	// ReusedFrom names the run whose recorded outcome a retry returned for
	// this step instead of running it.
	ReusedFrom string `json:"reused_from,omitempty"`
	// Item is the reference a fan-out item's step.started records instead
	// of its input (step protocol 4 on): the view keeps it, not the input,
	// and a query fills Input from the fan-out's recorded scope input and
	// the item (see fillItemInputs).
	Item *events.ItemInput `json:"item,omitempty"`

	StartedAt  *time.Time `json:"started_at,omitempty"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`
	// DurationMS is the duration of the attempt that finished last.
	DurationMS int64 `json:"duration_ms,omitempty"`
	// Order is the stream sequence of the first event about the step.
	Order uint64 `json:"order"`
}

// StateRetrying is the state of a step waiting for its next attempt.
const StateRetrying = "retrying"

// StateWaiting is the state of a signal gate waiting for its signal.
const StateWaiting = "waiting"

// ActiveRun is an entry of the active-runs index: a run that is pending or
// running.
type ActiveRun struct {
	ID           string `json:"id"`
	Job          string `json:"job"`
	State        string `json:"state"`
	RequestedSeq uint64 `json:"requested_seq"`
}

// Buckets of the runs view.
var (
	// run id → RunView without steps
	bucketRuns = []byte("runs")
	// run id + "\x00" + step key → StepView
	bucketSteps = []byte("run_steps")
	// job + "\x00" + run id → requested sequence (decimal)
	bucketRunsByJob = []byte("runs_by_job")
	// requested sequence (20 zero-padded digits) → ActiveRun, for runs that
	// are not terminal
	bucketRunsActive = []byte("runs_active")
)

// runsView folds run, step and activity events into the runs buckets.
type runsView struct{}

func (runsView) name() string { return "runs" }

// version history: 1 first format; 2 step ids drop the "@<attempt>" of a
// retried structural step ("per_item@2/3" is step per_item); 3 a run
// records the identity that signed its request (signer); 4 a child
// requested after its parent ended is among the parent's children; 5 a
// run records its trace id (trace_id, see events.RunTraceID).
func (runsView) version() int { return 5 }
func (runsView) buckets() [][]byte {
	return [][]byte{bucketRuns, bucketSteps, bucketRunsByJob, bucketRunsActive}
}

func (runsView) begin(tx *bolt.Tx, log *slog.Logger) (viewBatch, error) {
	stepName := func(key string) string {
		run, step, _ := strings.Cut(key, "\x00")
		return "step " + step + " of run " + run
	}
	batch := &runsBatch{
		log:     log,
		runs:    newBatchCache[RunView](tx.Bucket(bucketRuns), func(id string) string { return "run " + id }),
		steps:   newBatchCache[StepView](tx.Bucket(bucketSteps), stepName),
		byJobB:  tx.Bucket(bucketRunsByJob),
		activeB: tx.Bucket(bucketRunsActive),
	}
	return folding[*runsBatch]{batch, runFolds}, nil
}

func (runsView) recordChecks() []recordCheck {
	return []recordCheck{
		records(bucketRuns, func(k []byte, v *RunView) error {
			if len(v.Steps) > 0 {
				return errors.New("the record holds steps, which are stored apart")
			}
			return mustMatch("id", v.ID, string(k))
		}),
		records(bucketSteps, func(k []byte, s *StepView) error {
			_, key, ok := bytes.Cut(k, []byte{0})
			if !ok {
				return errors.New("the key names no step")
			}
			return mustMatch("key", s.Key, string(key))
		}),
		{bucket: bucketRunsByJob, check: func(k, raw []byte) error {
			if !bytes.Contains(k, []byte{0}) {
				return errors.New("the key names no run")
			}
			if !isDecimal(raw) {
				return fmt.Errorf("the value %q is not a sequence", raw)
			}
			return nil
		}},
		records(bucketRunsActive, func(k []byte, a *ActiveRun) error {
			return mustMatch("requested sequence", string(activeKey(a.RequestedSeq)), string(k))
		}),
	}
}
