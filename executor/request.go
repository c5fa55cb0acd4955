package executor

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/orbitrun/orbit/activity"
	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/interpreter"
)

// cmdRunRequest is the name of a run request on ORBIT_COMMANDS.
const cmdRunRequest = "run.request"

// RunRequest asks the orchestrator to run a job (see
// interpreter.RunRequest: a run's interpreter requests its child runs
// with one).
type RunRequest = interpreter.RunRequest

// Admission and TaskStatus are what an engine answers before an
// invoke_and_wait dispatches a child for tasks (see Config.Admission and
// interpreter.Admission).
type (
	Admission  = interpreter.Admission
	TaskStatus = interpreter.TaskStatus
)

// FailureActivityKey is the step key of a job's failure_activity (see
// interpreter.FailureActivityKey).
const FailureActivityKey = interpreter.FailureActivityKey

// NewRunRequest checks that the executor can run job and builds a request
// for it with a new run id and the job input merge rule applied to input.
func NewRunRequest(job *assets.Job, input any, requester string) (*RunRequest, error) {
	if err := activity.ValidateJob(job); err != nil {
		return nil, err
	}
	return &RunRequest{
		RunID:     events.NewID(),
		Job:       *job,
		Input:     assets.MergeInput(job.Spec.DefaultInput, input),
		Requester: requester,
	}, nil
}

// Sender publishes commands; *events.Log is one.
type Sender interface {
	Send(ctx context.Context, name, id string, payload any) error
}

var _ Sender = (*events.Log)(nil)

// Submit sends a run request. Submitting the same request twice (same run
// id) starts one run.
func Submit(ctx context.Context, log Sender, req *RunRequest) error {
	return log.Send(ctx, cmdRunRequest, events.DecisionID(cmdRunRequest, req.RunID), req)
}

func decodeJob(raw json.RawMessage) (*assets.Job, error) {
	var job assets.Job
	if err := json.Unmarshal(raw, &job); err != nil {
		return nil, fmt.Errorf("%w: decoding job: %v", ErrInvalidJob, err)
	}
	return &job, nil
}
