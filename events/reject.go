package events

import (
	"context"
	"fmt"
)

// ReasonNoDecision is the reason integrity.rejected records for a step
// command that verifies but that no recorded decision stands behind: the
// log holds no step.started for its run, step and attempt.
const ReasonNoDecision = "no step.started for this command"

// RejectCommand refuses a command that verifies but must not be acted on
// (reason says why, e.g. ReasonNoDecision): it records integrity.rejected
// under the run the command's subject names (see SubjectRun) and then
// removes the command from the queue for good.
//
// The record's id is derived from the command's sequence, so refusing the
// same command again (a lost Term redelivers it) stores it once. When the
// record cannot be stored the command is left as it is and the error
// (wrapping ErrUnavailable, or the append's) is returned: the caller leaves
// the command for redelivery.
func (l *Log) RejectCommand(ctx context.Context, c *Command, reason string) error {
	_, err := l.Append(ctx, Event{
		ID:    DecisionID(IntegrityRejected, c.Stream, fmt.Sprint(c.StreamSeq)),
		Type:  IntegrityRejected,
		RunID: SubjectRun(c.Subject),
	}, IntegrityRejectedData{Stream: c.Stream, Subject: c.Subject, Seq: c.StreamSeq, Reason: reason})
	if err != nil {
		return fmt.Errorf("recording the rejection of command %s: %w", c.ID, err)
	}
	l.log.Warn("rejecting a command", "seq", c.StreamSeq, "subject", c.Subject, "reason", reason)
	if err := c.Term(); err != nil {
		return fmt.Errorf("%w: removing command %s: %v", ErrUnavailable, c.ID, err)
	}
	return nil
}
