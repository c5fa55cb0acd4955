package projector

import (
	"fmt"

	"github.com/orbitrun/orbit/events"
)

// CheckpointMetrics counts the attempts of one checkpoint of one task, one
// count per event: an interrupted attempt, which is also rewound, counts in
// both Interrupted and Rewound.
type CheckpointMetrics struct {
	// Started counts groundhog.attempt.started events.
	Started int64 `json:"started,omitempty"`
	// Committed, Rewound and Interrupted count how attempts ended.
	Committed   int64 `json:"committed,omitempty"`
	Rewound     int64 `json:"rewound,omitempty"`
	Interrupted int64 `json:"interrupted,omitempty"`
	// Abandoned counts groundhog.abandoned events: the times the
	// checkpoint's budget was spent.
	Abandoned int64 `json:"abandoned,omitempty"`
}

// VerifierMetrics counts the verifier's results for the criteria of one
// kind, over every groundhog.verification (passed or not). Success
// criteria and anti-criteria of the same kind are counted apart, each by
// its recorded outcome: for an anti-criterion "pass" means that what it
// forbids did not happen.
type VerifierMetrics struct {
	Criteria     OutcomeCounts `json:"criteria,omitzero"`
	AntiCriteria OutcomeCounts `json:"anti_criteria,omitzero"`
}

// OutcomeCounts counts criterion results by outcome.
type OutcomeCounts struct {
	Pass    int64 `json:"pass,omitempty"`
	Fail    int64 `json:"fail,omitempty"`
	Skipped int64 `json:"skipped,omitempty"`
}

// Criterion outcomes, as events.CriterionResult records them.
const (
	outcomePass    = "pass"
	outcomeFail    = "fail"
	outcomeSkipped = "skipped"
)

// TaskMetrics counts a task's Groundhog setbacks.
type TaskMetrics struct {
	// Rewinds counts groundhog.rewound events, Abandons
	// groundhog.abandoned events.
	Rewinds  int64 `json:"rewinds,omitempty"`
	Abandons int64 `json:"abandons,omitempty"`
}

// Groundhog attempts run agent sessions too, recorded as Groundhog events
// of the task rather than agent events of a run: their turns and tool
// calls count in Models and Tools like those of agent steps.

func (b *metricsBatch) groundhogTurn(ev events.Event, d *events.GroundhogTurnData) error {
	return b.countTurn(&d.Turn)
}

func (b *metricsBatch) groundhogToolCalled(ev events.Event, d *events.GroundhogToolCalledData) error {
	return b.countToolCall(&d.Call)
}

func (b *metricsBatch) groundhogToolDenied(ev events.Event, d *events.GroundhogToolDeniedData) error {
	return b.countDenial(&d.Denial)
}

// countCheckpoint counts a Groundhog event against the checkpoint it
// names: count adds one to the counter the event's type stands for.
func (b *metricsBatch) countCheckpoint(ev events.Event, checkpoint string, count func(*CheckpointMetrics)) error {
	c, err := record[CheckpointMetrics](b, checkpointMetricsKey(ev.TaskID, checkpoint))
	if err != nil {
		return err
	}
	count(c)
	return nil
}

// countSetback counts a Groundhog setback against the checkpoint it names
// and against its task. Both records are read before either is counted,
// so an event whose task record cannot be read counts nowhere.
func (b *metricsBatch) countSetback(ev events.Event, checkpoint string, count func(*CheckpointMetrics, *TaskMetrics)) error {
	c, err := record[CheckpointMetrics](b, checkpointMetricsKey(ev.TaskID, checkpoint))
	if err != nil {
		return err
	}
	t, err := record[TaskMetrics](b, taskMetricsKey(ev.TaskID))
	if err != nil {
		return err
	}
	count(c, t)
	return nil
}

func (b *metricsBatch) groundhogAttempt(ev events.Event, d *events.GroundhogAttemptData) error {
	return b.countCheckpoint(ev, d.Checkpoint, func(c *CheckpointMetrics) { c.Started++ })
}

func (b *metricsBatch) groundhogCommitted(ev events.Event, d *events.GroundhogCommittedData) error {
	return b.countCheckpoint(ev, d.Checkpoint, func(c *CheckpointMetrics) { c.Committed++ })
}

func (b *metricsBatch) groundhogInterrupted(ev events.Event, d *events.GroundhogInterruptedData) error {
	return b.countCheckpoint(ev, d.Checkpoint, func(c *CheckpointMetrics) { c.Interrupted++ })
}

func (b *metricsBatch) groundhogRewound(ev events.Event, d *events.GroundhogRewoundData) error {
	return b.countSetback(ev, d.Checkpoint, func(c *CheckpointMetrics, t *TaskMetrics) {
		c.Rewound++
		t.Rewinds++
	})
}

func (b *metricsBatch) groundhogAbandoned(ev events.Event, d *events.GroundhogAbandonedData) error {
	return b.countSetback(ev, d.Checkpoint, func(c *CheckpointMetrics, t *TaskMetrics) {
		c.Abandoned++
		t.Abandons++
	})
}

// groundhogVerification counts every result of a verification. A result
// whose outcome is not pass, fail or skipped makes the whole event
// invalid, before anything is counted.
func (b *metricsBatch) groundhogVerification(ev events.Event, d *events.GroundhogVerificationData) error {
	for _, r := range d.Results {
		switch r.Outcome {
		case outcomePass, outcomeFail, outcomeSkipped:
		default:
			return fmt.Errorf("%w: %s %s at sequence %d: criterion %d: %q is not a criterion outcome",
				events.ErrInvalidEvent, ev.Type, ev.ID, ev.Seq, r.Index, r.Outcome)
		}
	}
	for _, r := range d.Results {
		v, err := record[VerifierMetrics](b, verifierKey(r.Kind))
		if err != nil {
			return err
		}
		counts := &v.Criteria
		if r.Anti {
			counts = &v.AntiCriteria
		}
		switch r.Outcome {
		case outcomePass:
			counts.Pass++
		case outcomeFail:
			counts.Fail++
		case outcomeSkipped:
			counts.Skipped++
		}
	}
	return nil
}
