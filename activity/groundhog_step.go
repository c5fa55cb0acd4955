package activity

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/orbitrun/orbit/agent"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/groundhog"
	"github.com/orbitrun/orbit/interpreter"
)

// runGroundhog executes a groundhog step: the task named by input.task_id,
// one checkpoint at a time. The step succeeds when every checkpoint is
// committed; a blocked or drifted task fails it, and is not retried.
func (w *Worker) runGroundhog(ctx context.Context, cmd *interpreter.StepCommand) (any, error) {
	taskID, _ := inputString(cmd.Input, "task_id")
	if taskID == "" {
		return nil, interpreter.Fail(events.KindValidation, false, "a groundhog step needs input.task_id")
	}
	if w.cfg.GroundhogMemory == nil {
		return nil, interpreter.Fail(events.KindValidation, false, "this engine has no GroundhogMemory view")
	}
	spec := cmd.Activity
	profile, err := w.profile(spec.FSProfile)
	if err != nil {
		return nil, err
	}
	res, err := groundhog.Run(ctx, groundhog.Config{
		Log:      w.cfg.Log,
		TaskID:   taskID,
		RunID:    cmd.RunID,
		StepKey:  cmd.StepKey,
		Job:      cmd.Job,
		Activity: cmd.ActivityName,
		Spec:     spec,
		NewProvider: func(ctx context.Context, start func(fixture string) int) (agent.Provider, error) {
			return w.newProvider(ctx, &spec, taskID, func(fixture string) (int, error) { return start(fixture), nil })
		},
		Memory: func(ctx context.Context, taskID string, minSeq uint64) (*groundhog.Memory, error) {
			raw, err := w.cfg.GroundhogMemory(ctx, taskID, minSeq)
			if err != nil {
				return nil, err
			}
			var m groundhog.Memory
			if err := json.Unmarshal(raw, &m); err != nil {
				return nil, fmt.Errorf("GroundhogMemory of %s: %w", taskID, err)
			}
			return &m, nil
		},
		Profile: profile,
		CLI:     w.cfg.GroundhogCLI,
		ReserveWorkspace: func(ctx context.Context, path string) (string, error) {
			return w.locks.tryReserve(ctx, cmd.RunID, cmd.StepKey, []string{workspaceResource(path)}, 0)
		},
		ReleaseWorkspace: func(ctx context.Context, path string) error {
			_, err := w.locks.release(ctx, cmd.RunID, []string{workspaceResource(path)})
			return err
		},
		Logger: w.log,
	})
	if err != nil {
		return nil, err
	}
	out := map[string]any{"task_id": taskID, "state": res.State, "committed": float64(res.Committed), "message": res.Message}
	switch res.State {
	case events.GroundhogDone:
		return out, nil
	case events.GroundhogBudgetExhausted:
		return nil, interpreter.Fail(events.KindBudget, false, "task %s %s: %s", taskID, res.State, res.Message)
	case events.GroundhogBlocked, events.GroundhogDrifted, events.GroundhogBaselineRed:
		return nil, interpreter.Fail(events.KindActivity, false, "task %s %s: %s", taskID, res.State, res.Message)
	}
	return nil, interpreter.Fail(events.KindActivity, false, "task %s: %s", taskID, res.Message)
}

// profile returns a named filesystem profile ("" and "default" are the
// default, which the config may redefine).
func (w *Worker) profile(name string) (agent.FSProfile, error) {
	if name == "" {
		name = agent.DefaultProfile.Name
	}
	if p, ok := w.settings().FSProfiles[name]; ok {
		return p, nil
	}
	if name == agent.DefaultProfile.Name {
		return agent.DefaultProfile, nil
	}
	return agent.FSProfile{}, interpreter.Fail(events.KindValidation, false, "fsProfile %q is not defined in .orbit/config.yaml", name)
}

func inputString(input any, key string) (string, bool) {
	m, ok := input.(map[string]any)
	if !ok {
		return "", false
	}
	s, ok := m[key].(string)
	return s, ok
}
