package executor

import (
	"context"

	"github.com/orbitrun/orbit/events"
)

// RequestCancel records that a run should be cancelled. The orchestrator
// that owns the run stops dispatching, the workers stop the run's running
// activities (SIGTERM to their process groups, SIGKILL after a grace
// period), and the run ends cancelled. A pending run is cancelled at once.
// Cancelling twice records one request; a finished run never changes. The
// request records who signed the API request ctx serves, if any
// (events.RequestSigner).
func RequestCancel(ctx context.Context, log *events.Log, runID, requester, reason string) error {
	_, err := log.Append(ctx, events.Event{
		ID:       events.DecisionID(events.RunCancelRequested, runID),
		Type:     events.RunCancelRequested,
		RunID:    runID,
		ParentID: events.DecisionID(events.RunRequested, runID),
	}, events.RunCancelRequestedData{Requester: requester, Reason: reason, Signer: events.RequestSigner(ctx)})
	return err
}
