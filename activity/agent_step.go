package activity

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/orbitrun/orbit/agent"
	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/interpreter"
)

// Environment variables that switch every agent loop to the replay
// provider with the named fixture: the offline switch for tests and demos.
var replayEnv = []string{agent.EnvReplayFixture, agent.EnvReplayFixtureLegacy}

// ProviderSettings configure an HTTP provider for every agent loop of an
// engine (from the project's config).
type ProviderSettings struct {
	BaseURL   string
	APIKeyEnv string // the environment variable that holds the key
}

// agentStep executes one attempt of an agent_loop step.
type agentStep struct {
	w    *Worker
	cmd  *interpreter.StepCommand
	emit emitFunc
	// last records agent.session, which the worker stores with the
	// step's end.
	last func(typ string, payload any)
}

// emitter adapts a worker's emit function to agent.Emitter.
type emitter struct {
	log  *events.Log
	emit emitFunc
}

func (e emitter) Emit(ctx context.Context, typ string, payload any) error {
	return e.emit(ctx, typ, payload)
}

func (e emitter) PutBlob(ctx context.Context, data []byte) (events.BlobRef, error) {
	return e.log.PutBlob(ctx, data)
}

func (a *agentStep) run(ctx context.Context) (any, error) {
	spec := &a.cmd.Activity
	em := emitter{log: a.w.cfg.Log, emit: a.emit}
	input, task, err := a.bindTask(ctx)
	if err != nil {
		return nil, err
	}
	if task != nil {
		defer task.Release()
	}
	prompt := agentPrompt(input)
	if spec.Backend == "cli" {
		return a.runCLI(ctx, spec, em, prompt, input, task)
	}
	taskID, _ := inputString(a.cmd.Input, "task_id")
	provider, err := a.provider(ctx, spec, taskID)
	if err != nil {
		return nil, err
	}
	tc, err := a.toolContext(spec)
	if err != nil {
		return nil, err
	}
	var tools []agent.Tool
	for _, name := range spec.Tools {
		t, ok := agent.Builtin(name)
		if !ok {
			return nil, interpreter.Fail(events.KindValidation, false, "unknown tool %q (known: %s)", name, strings.Join(agent.BuiltinNames(), ", "))
		}
		tools = append(tools, t)
	}
	if task != nil {
		tools = append(tools, taskSummaryTool{task})
	}
	history, err := a.sessionHistory(ctx)
	if err != nil {
		return nil, err
	}
	budget, err := a.agentBudget(ctx, a.cmd.Budget)
	if err != nil {
		return nil, err
	}
	out, runErr := agent.Run(ctx, agent.Config{
		Provider:  provider,
		Model:     spec.Model,
		System:    spec.Instruction,
		Tools:     tools,
		ToolCtx:   tc,
		OnDenial:  spec.OnDenial,
		MaxTurns:  spec.MaxIterations,
		WallClock: time.Duration(spec.WallClockTimeoutSeconds) * time.Second,
		MaxTokens: spec.MaxTokens,
		History:   history,
		Budget:    budget,
		Session:   a.cmd.Session,
		Attempt:   a.cmd.Attempt,
		Emitter:   em,
	}, prompt)
	if err := a.saveSession(ctx, em, out); err != nil {
		return nil, err
	}
	if runErr != nil {
		return nil, agentFailure(runErr)
	}
	if !out.Completed() && spec.CompletionRequired() {
		return nil, incomplete("stop_reason %s, not end_turn", out.StopReason)
	}
	return responseOutput(spec, out)
}

// agentPrompt is the user message of an agent step: input.prompt when it
// is a string, else the whole step input as JSON.
func agentPrompt(input any) string {
	if m, ok := input.(map[string]any); ok {
		if p, ok := m["prompt"].(string); ok {
			return p
		}
	}
	b, err := json.MarshalIndent(input, "", "  ")
	if err != nil {
		return fmt.Sprint(input)
	}
	return string(b)
}

func agentOutput(out *agent.Outcome) map[string]any {
	m := map[string]any{
		"final_message": out.FinalMessage,
		"stop_reason":   out.StopReason,
		"turns":         float64(out.Turns),
		"tool_calls":    float64(out.ToolCalls),
		"model":         out.Model,
		"usage": map[string]any{
			"input_tokens":       float64(out.Usage.InputTokens),
			"output_tokens":      float64(out.Usage.OutputTokens),
			"cache_read_tokens":  float64(out.Usage.CacheReadTokens),
			"cache_write_tokens": float64(out.Usage.CacheWriteTokens),
		},
	}
	if out.CostUSD > 0 {
		m["cost_usd"] = out.CostUSD
	}
	return m
}

// agentFailure classifies how an agent step ended without an answer.
func agentFailure(err error) error {
	var denied *agent.DeniedError
	var perr *agent.ProviderError
	switch {
	case errors.As(err, &denied):
		return interpreter.Fail(events.KindToolDenied, false, "%v (on_denial: terminate)", denied)
	case errors.Is(err, agent.ErrTimeout):
		return interpreter.Fail(events.KindTimeout, true, "%v", err)
	case errors.Is(err, agent.ErrBudgetExhausted):
		return interpreter.Fail(events.KindBudget, false, "%v", err)
	case errors.Is(err, agent.ErrTurnLimit):
		return interpreter.Fail(events.KindActivity, true, "%v", err)
	case errors.Is(err, agent.ErrNoCompletion):
		return incomplete("%v", err)
	case errors.Is(err, agent.ErrFixture):
		return interpreter.Fail(events.KindValidation, false, "%v", err)
	case errors.As(err, &perr):
		return interpreter.Fail(events.KindActivity, perr.Retryable, "%v", perr)
	}
	return err
}

// provider builds the step's provider: the replay provider when the engine
// runs with ORBIT_REPLAY_FIXTURE set, else the one the spec names.
func (a *agentStep) provider(ctx context.Context, spec *assets.ActivitySpec, taskID string) (agent.Provider, error) {
	return a.w.newProvider(ctx, spec, taskID, func(fixture string) (int, error) {
		return replayStart(ctx, a.w.cfg.Log, a.cmd.RunID, fixture)
	})
}

// newProvider builds an agent provider for a spec, for a step bound to
// task taskID (or none); start says where a replay fixture resumes.
//
// ORBIT_REPLAY_FIXTURE may name a directory: a step bound to a task then
// replays <directory>/<task id>.json, so that a demo of several tasks
// replays each task's own agent.
func (w *Worker) newProvider(ctx context.Context, spec *assets.ActivitySpec, taskID string, start func(fixture string) (int, error)) (agent.Provider, error) {
	opts := agent.ProviderOptions{Name: spec.Provider, Fixture: spec.Fixture, BaseURL: spec.BaseURL, Env: w.getenv}
	for _, name := range replayEnv {
		if f := w.getenv(name); f != "" {
			opts.Name, opts.Fixture = "replay", f
			if fi, err := os.Stat(f); err == nil && fi.IsDir() {
				if taskID == "" {
					return nil, interpreter.Fail(events.KindValidation, false, "%s names the directory %s, which holds one fixture per task (<task id>.json), and this step is bound to no task (input.task_id)", name, f)
				}
				opts.Fixture = filepath.Join(f, taskID+".json")
			}
			break
		}
	}
	if s, ok := w.settings().Providers[opts.Name]; ok {
		if opts.BaseURL == "" {
			opts.BaseURL = s.BaseURL
		}
		if s.APIKeyEnv != "" {
			opts.APIKey = w.getenv(s.APIKeyEnv)
		}
	}
	if opts.Name == "replay" {
		if opts.Fixture == "" {
			return nil, interpreter.Fail(events.KindValidation, false, "the replay provider needs a fixture (spec fixture: or ORBIT_REPLAY_FIXTURE)")
		}
		if name, ok := strings.CutPrefix(opts.Fixture, assets.SeededPrefix); ok {
			data, err := assets.SeededFile(name)
			if err != nil {
				return nil, interpreter.Fail(events.KindValidation, false, "fixture %s: %v", opts.Fixture, err)
			}
			opts.FixtureData = data
		}
		n, err := start(opts.Fixture)
		if err != nil {
			return nil, err
		}
		opts.Start = n
	}
	p, err := agent.NewProvider(opts)
	if err != nil {
		// A provider that cannot be built (unknown, no key, a bad fixture)
		// will not be built by trying again.
		return nil, interpreter.Fail(events.KindValidation, false, "%v", err)
	}
	return p, nil
}

// replayStart is where a replay fixture resumes within a run: after every
// turn it gave to step attempts that have finished. Turns given to an
// attempt that was cut short (the engine died) are given again to its
// rerun, so a restarted run replays the same script.
func replayStart(ctx context.Context, log *events.Log, runID, fixture string) (int, error) {
	evs, err := log.Read(ctx, events.FollowOptions{Filters: []string{
		events.EventSubject(events.AggregateRun, runID, events.AgentTurn),
		events.EventSubject(events.AggregateRun, runID, events.StepFinished),
	}})
	if err != nil {
		return 0, err
	}
	finished := map[string]bool{}
	for _, ev := range evs {
		if ev.Type == events.StepFinished {
			var d events.StepFinishedData
			if ev.Decode(&d) == nil {
				finished[interpreter.AttemptKey(ev.StepKey, d.Attempt)] = true
			}
		}
	}
	n := 0
	for _, ev := range evs {
		if ev.Type != events.AgentTurn {
			continue
		}
		var d events.AgentTurnData
		if ev.Decode(&d) == nil && d.Fixture == fixture && finished[interpreter.AttemptKey(ev.StepKey, d.Attempt)] {
			n++
		}
	}
	return n, nil
}

// toolContext is what the step's tools may act on.
func (a *agentStep) toolContext(spec *assets.ActivitySpec) (*agent.ToolContext, error) {
	profile, err := a.w.profile(spec.FSProfile)
	if err != nil {
		return nil, err
	}
	return &agent.ToolContext{Workspace: a.cmd.Workspace, Profile: profile, AllowedPrograms: spec.AllowedPrograms}, nil
}

// lastSession is the record of the step's named session as the last step
// that used it in this run left it (nil: none has).
func (a *agentStep) lastSession(ctx context.Context) (*events.AgentSessionData, error) {
	if a.cmd.Session == "" {
		return nil, nil
	}
	evs, err := a.w.cfg.Log.Read(ctx, events.FollowOptions{Filters: []string{
		events.EventSubject(events.AggregateRun, a.cmd.RunID, events.AgentSession),
	}})
	if err != nil {
		return nil, err
	}
	var last *events.AgentSessionData
	for _, ev := range evs {
		var d events.AgentSessionData
		if ev.Decode(&d) == nil && d.Session == a.cmd.Session {
			last = &d
		}
	}
	return last, nil
}

// sessionHistory returns the transcript of the step's named session as the
// last step that used it in this run left it.
func (a *agentStep) sessionHistory(ctx context.Context) ([]agent.Message, error) {
	last, err := a.lastSession(ctx)
	if err != nil || last == nil {
		return nil, err
	}
	if last.CLISession != "" {
		return nil, interpreter.Fail(events.KindValidation, false, "session %s was last continued by a CLI agent (%s), which keeps its own transcript: an agent_loop over HTTP cannot continue it",
			a.cmd.Session, last.Agent)
	}
	data, err := a.w.cfg.Log.GetBlob(ctx, last.Transcript.Digest)
	if err != nil {
		return nil, err
	}
	var msgs []agent.Message
	if err := json.Unmarshal(data, &msgs); err != nil {
		return nil, fmt.Errorf("session %s transcript: %w", a.cmd.Session, err)
	}
	return msgs, nil
}

// saveSession stores the step's transcript as a blob and records it, so a
// later step of the same session — or this run after a restart — continues
// from it, and an auditor can read the whole conversation.
func (a *agentStep) saveSession(ctx context.Context, em emitter, out *agent.Outcome) error {
	if out == nil || len(out.Transcript) == 0 {
		return nil
	}
	data, err := json.Marshal(out.Transcript)
	if err != nil {
		return err
	}
	ref, err := em.PutBlob(ctx, data)
	if err != nil {
		return err
	}
	a.last(events.AgentSession, events.AgentSessionData{
		Attempt: a.cmd.Attempt, Session: a.cmd.Session, Messages: len(out.Transcript), Transcript: ref,
	})
	return nil
}

// runCLI runs the step on its CLI executor. An agent bound to a task is
// started with its id and token in its environment (EnvTaskID,
// EnvTaskToken), and its envelope's input carries the task.
func (a *agentStep) runCLI(ctx context.Context, spec *assets.ActivitySpec, em emitter, prompt string, input any, task *TaskBinding) (any, error) {
	if spec.ExecutorSpec == nil {
		return nil, interpreter.Fail(events.KindValidation, false, "backend cli: no executor definition in the job")
	}
	name := spec.Executor
	if name == "" {
		name = spec.Provider
	}
	budget, err := a.agentBudget(ctx, a.cmd.Budget)
	if err != nil {
		return nil, err
	}
	resume, err := a.cliSession(ctx, spec.ExecutorSpec.Output)
	if err != nil {
		return nil, err
	}
	profile, err := a.w.profile(spec.FSProfile)
	if err != nil {
		return nil, err
	}
	server, err := a.taskMCP(spec, input, task)
	if err != nil {
		return nil, err
	}
	if server != nil {
		defer server.cleanup()
	}
	out, err := agent.RunCLI(ctx, agent.CLIConfig{
		Executor: name,
		Spec:     *spec.ExecutorSpec,
		Envelope: agent.Envelope{
			Instruction: spec.Instruction, Prompt: prompt, Tools: spec.Tools, Model: spec.Model,
			Input: input, RunID: a.cmd.RunID, StepKey: a.cmd.StepKey, Attempt: a.cmd.Attempt, Workspace: a.cmd.Workspace,
		},
		Env:         taskEnv(input, task),
		Traceparent: a.cmd.Traceparent,
		Workspace:   a.cmd.Workspace,
		Timeout:     time.Duration(spec.WallClockTimeoutSeconds) * time.Second,
		Attempt:     a.cmd.Attempt,
		Emitter:     em,

		AllowedPrograms: spec.AllowedPrograms,
		MaxTurns:        spec.MaxIterations,
		OnDenial:        spec.OnDenial,
		Budget:          budget,
		Sandbox:         a.w.cfg.AgentSandbox,
		Profile:         &profile,
		ResponseSchema:  responseSchema(spec),
		Persist:         a.cmd.Session != "",
		Resume:          resume,
		MCP:             server.config(),
	})
	if errors.Is(err, agent.ErrNoCompletion) && !spec.CompletionRequired() {
		err = nil
	}
	if err != nil {
		return nil, agentFailure(err)
	}
	if out.CLISession != "" && a.cmd.Session != "" {
		a.last(events.AgentSession, events.AgentSessionData{Attempt: a.cmd.Attempt, Session: a.cmd.Session,
			Messages: out.Turns, Agent: spec.ExecutorSpec.Output, CLISession: out.CLISession})
	}
	return responseOutput(spec, out)
}

// cliSession is the CLI agent's own session the step continues: the one
// the last step of its named session left, if any. Only the claude_code
// and codex adapters continue one; a session another agent started is
// not theirs to continue.
//
// IMPORTANT: a session is recorded only when the invocation that forked it
// succeeded. An attempt that failed, or was cut short by the engine's
// death, is run again from the session as the step found it.
func (a *agentStep) cliSession(ctx context.Context, output string) (string, error) {
	if a.cmd.Session == "" {
		return "", nil
	}
	if output != agent.OutputClaudeCode && output != agent.OutputCodex {
		return "", interpreter.Fail(events.KindValidation, false, "session %s: output %s starts a fresh process each step with no session to continue (only claude_code and codex continue theirs)",
			a.cmd.Session, output)
	}
	last, err := a.lastSession(ctx)
	if err != nil || last == nil {
		return "", err
	}
	if last.Agent != output {
		by := "an agent_loop over HTTP"
		if last.Agent != "" {
			by = last.Agent
		}
		return "", interpreter.Fail(events.KindValidation, false, "session %s was last continued by %s: %s cannot continue it", a.cmd.Session, by, output)
	}
	return last.CLISession, nil
}

func (w *Worker) getenv(name string) string {
	if w.cfg.Env != nil {
		v, _ := w.cfg.Env(name)
		return v
	}
	return os.Getenv(name)
}

// taskServer is the orbit MCP server a CLI agent bound to a task is given,
// and how to remove its configuration.
type taskServer struct {
	cfg     *agent.CLIMCP
	cleanup func()
}

func (s *taskServer) config() *agent.CLIMCP {
	if s == nil {
		return nil
	}
	return s.cfg
}

// taskMCP returns the MCP server of a claude_code or codex agent bound to
// a task (nil for any other, or without WorkerConfig.TaskMCP).
func (a *agentStep) taskMCP(spec *assets.ActivitySpec, input any, task *TaskBinding) (*taskServer, error) {
	if task == nil || a.w.cfg.TaskMCP == nil {
		return nil, nil
	}
	output := spec.ExecutorSpec.Output
	if output != assets.OutputClaudeCode && output != assets.OutputCodex {
		return nil, nil
	}
	id, _ := inputString(input, "task_id")
	cfg, cleanup, err := a.w.cfg.TaskMCP(output, id, task.Token)
	if err != nil {
		return nil, fmt.Errorf("the task's MCP server: %w", err)
	}
	return &taskServer{cfg: cfg, cleanup: cleanup}, nil
}

// taskEnv is the environment of a CLI agent bound to a task: the engine's,
// with the task's id and token; nil (the engine's) for one bound to none.
func taskEnv(input any, task *TaskBinding) []string {
	if task == nil {
		return nil
	}
	id, _ := inputString(input, "task_id")
	return append(os.Environ(), EnvTaskID+"="+id, EnvTaskToken+"="+task.Token)
}

// responseSchema is the schema a claude_code or codex agent's answer is
// asked in when the step requires a response envelope: any JSON object.
// Claude Code then answers through its StructuredOutput tool, checked
// against it, and Codex in its output schema (--output-schema, the same
// object in the form strict mode takes), rather than in text Orbit has to
// parse.
func responseSchema(spec *assets.ActivitySpec) string {
	if !spec.RequireResponseEnvelope ||
		(spec.ExecutorSpec.Output != agent.OutputClaudeCode && spec.ExecutorSpec.Output != agent.OutputCodex) {
		return ""
	}
	return `{"type":"object"}`
}
