package interpreter

import (
	"context"
	"fmt"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
)

// joinResult applies a join to the outcomes of a group's members (in their
// order) and records step.join. The group fails unless enough members
// succeeded: all of them, any one, or a quorum of n. The error it fails
// with is a member's structural error if there is one (a job that cannot
// run must say so), else the first member failure, with how many members
// succeeded in front.
func (x *Interpreter) joinResult(ctx context.Context, key string, attempt int, parent string, join assets.Join, members []events.JoinMember) *events.ErrorInfo {
	succeeded := 0
	var first, structural *events.ErrorInfo
	for _, m := range members {
		switch {
		case m.State == events.StateSuccess || m.State == events.StateSkipped:
			succeeded++
		case m.Error != nil:
			if first == nil {
				first = m.Error
			}
			if structural == nil && m.Error.Kind == events.KindStructural {
				structural = m.Error
			}
		}
	}
	mode := join.Mode
	if mode == "" {
		mode = assets.JoinAll
	}
	need := len(members)
	switch mode {
	case assets.JoinAny:
		need = min(1, len(members))
	case assets.JoinQuorum:
		need = join.N
	}
	data := events.StepJoinData{Attempt: attempt, Mode: mode, N: join.N, Succeeded: succeeded, Members: members, State: events.StateSuccess}
	var failed *events.ErrorInfo
	if succeeded < need {
		cause := first
		if structural != nil {
			cause = structural
		}
		if cause == nil {
			cause = &events.ErrorInfo{Kind: events.KindActivity, Message: "no member succeeded"}
		}
		failed = &events.ErrorInfo{
			Kind:      cause.Kind,
			Message:   fmt.Sprintf("join %s: %d of %d succeeded, %d needed; %s: %s", mode, succeeded, len(members), need, cause.StepKey, cause.Message),
			Retryable: cause.Retryable,
			StepKey:   cause.StepKey,
		}
		data.State, data.Error = events.StateFailed, failed
	}
	if err := x.record(ctx, events.Event{ID: StepEventID(events.StepJoin, x.runID, key, attempt), Type: events.StepJoin,
		StepKey: key, ParentID: parent}, data); err != nil {
		return internal(ctx, err)
	}
	return failed
}

func member(key string, res assets.StepResult, failed *events.ErrorInfo) events.JoinMember {
	return events.JoinMember{Key: key, State: res.State, Error: failed}
}
