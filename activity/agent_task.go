package activity

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"strings"

	"github.com/orbitrun/orbit/agent"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/interpreter"
)

// TaskBinder binds an agent step to the task its input names
// (input.task_id): the engine gives the agent the task as it is recorded
// now, and a way to record what it did.
type TaskBinder interface {
	// Bind returns the binding of the step attempt to task taskID. A task
	// the engine does not know is an error wrapping events.ErrNotFound.
	Bind(ctx context.Context, step StepRef, taskID string) (*TaskBinding, error)
}

// StepRef names one attempt of a step.
type StepRef struct {
	RunID   string
	StepKey string
	Attempt int
}

// TaskBinding is an agent step's hold on its task.
type TaskBinding struct {
	// Snapshot is the task record the agent is given, as input.task.
	Snapshot any
	// Token scopes the task's summary to this attempt for a CLI agent,
	// which sends it from its own process (ORBIT_TASK_TOKEN).
	Token string
	// RecordSummary records the agent's execution summary of the task.
	RecordSummary func(ctx context.Context, summary string) error
	// Release ends the binding: the token is refused from then on.
	Release func()
}

// Environment variables a CLI agent bound to a task is started with.
const (
	EnvTaskID    = "ORBIT_TASK_ID"
	EnvTaskToken = "ORBIT_TASK_TOKEN"
)

// ToolTaskSummary is the tool an agent bound to a task records its
// execution summary with. Like the Groundhog verbs it is always offered
// to such an agent, whatever its activity's tools.
const ToolTaskSummary = "orbit.task.summary"

// bindTask binds the step to the task its input names, when it names one
// and the worker binds tasks: the input it returns carries the task
// snapshot as task. Without a task it returns the input unchanged and a
// nil binding.
func (a *agentStep) bindTask(ctx context.Context) (any, *TaskBinding, error) {
	taskID, _ := inputString(a.cmd.Input, "task_id")
	if taskID == "" || a.w.cfg.Tasks == nil {
		return a.cmd.Input, nil, nil
	}
	b, err := a.w.cfg.Tasks.Bind(ctx, StepRef{RunID: a.cmd.RunID, StepKey: a.cmd.StepKey, Attempt: a.cmd.Attempt}, taskID)
	if errors.Is(err, events.ErrNotFound) {
		return nil, nil, interpreter.Fail(events.KindValidation, false, "input.task_id: %v", err)
	}
	if err != nil {
		return nil, nil, err
	}
	in := maps.Clone(a.cmd.Input.(map[string]any))
	in["task"] = b.Snapshot
	return in, b, nil
}

// taskSummaryTool records the execution summary of the task an agent step
// is bound to.
type taskSummaryTool struct{ b *TaskBinding }

var _ agent.Tool = taskSummaryTool{}

func (t taskSummaryTool) Spec() agent.ToolSpec {
	return agent.ToolSpec{
		Name: ToolTaskSummary,
		Description: "Record your execution summary of the task you implement: what you changed, why, and how you " +
			"checked it. Delivery (the reviewer, a pull request's description) reads this record, not your final message. " +
			"Calling it again replaces the summary.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"summary":{"type":"string","description":"what was done, in a few sentences"}},"required":["summary"],"additionalProperties":false}`),
	}
}

func (t taskSummaryTool) Call(ctx context.Context, _ *agent.ToolContext, input json.RawMessage) (string, error) {
	var in struct {
		Summary string `json:"summary"`
	}
	dec := json.NewDecoder(strings.NewReader(string(input)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return "", errors.New("want {\"summary\": \"...\"}: " + err.Error())
	}
	if strings.TrimSpace(in.Summary) == "" {
		return "", errors.New("summary is empty: say what you did")
	}
	if err := t.b.RecordSummary(ctx, in.Summary); err != nil {
		return "", err
	}
	return "recorded", nil
}
