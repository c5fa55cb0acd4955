package executor

import (
	"context"
	"os"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
)

// ResendStepCommand stores the command of one attempt of a top-level step
// again, under a fresh message id, as if it had never been acknowledged.
func ResendStepCommand(ctx context.Context, log *events.Log, runID, key string, attempt int, job *assets.Job, root string) (string, error) {
	x := newInterpreter(interpreterConfig{runID: runID, job: job, workspace: root, env: os.LookupEnv})
	for i := range job.Spec.Steps {
		st := &job.Spec.Steps[i]
		if st.ID != key {
			continue
		}
		cmd, err := x.prepare(newScope(nil, root, ""), st, key, attempt, nil)
		if err != nil {
			return "", err
		}
		name := stepCommandName(cmd.Activity.Type, runID, key, attempt)
		return name, log.Send(ctx, name, events.NewID(), cmd)
	}
	return "", os.ErrNotExist
}
