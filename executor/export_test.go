package executor

import (
	"context"
	"os"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/interpreter"
)

// ResendStepCommand stores the command of one attempt of a top-level step
// again, under a fresh message id, as if it had never been acknowledged.
func ResendStepCommand(ctx context.Context, log *events.Log, runID, key string, attempt int, job *assets.Job, root string) (string, error) {
	cmd, err := interpreter.Command(interpreter.Config{RunID: runID, Job: job, Workspace: root, Env: os.LookupEnv}, key, attempt, nil)
	if err != nil {
		return "", err
	}
	name := interpreter.StepCommandName(cmd.Activity.Type, runID, key, attempt)
	return name, log.Send(ctx, name, events.NewID(), cmd)
}
