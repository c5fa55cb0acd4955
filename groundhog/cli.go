package groundhog

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/orbitrun/orbit/agent"
	"github.com/orbitrun/orbit/assets"
)

// MCP tool names of the verbs as Claude Code offers them: the tools of the
// MCP server named orbit (package mcp), prefixed mcp__orbit__.
const (
	ClaudeToolSuccess    = "mcp__orbit__checkpoint_success"
	ClaudeToolFailure    = "mcp__orbit__checkpoint_failure"
	ClaudeToolSideEffect = "mcp__orbit__side_effect"
)

// The verbs as Codex offers them: the functions of the namespace
// mcp__orbit, named in Codex's own way of naming a namespace's function.
// A Codex session reports a call of one as an mcp_tool_call item of server
// orbit, recorded as mcp:orbit/<tool>.
const (
	CodexToolSuccess    = "mcp__orbit.checkpoint_success"
	CodexToolFailure    = "mcp__orbit.checkpoint_failure"
	CodexToolSideEffect = "mcp__orbit.side_effect"
)

// claudeNoAutoMemory turns Claude Code's auto memory off (2.1.331 reads
// it from the environment).
const claudeNoAutoMemory = "CLAUDE_CODE_DISABLE_AUTO_MEMORY=1"

// claudeVerbs maps the verbs' Claude Code names to the verbs they are
// recorded as.
var claudeVerbs = map[string]string{
	ClaudeToolSuccess:    VerbSuccess,
	ClaudeToolFailure:    VerbFailure,
	ClaudeToolSideEffect: VerbSideEffect,
}

// codexVerbs maps the verbs as a Codex session reports their calls to the
// verbs they are recorded as.
var codexVerbs = map[string]string{
	"mcp:orbit/checkpoint_success": VerbSuccess,
	"mcp:orbit/checkpoint_failure": VerbFailure,
	"mcp:orbit/side_effect":        VerbSideEffect,
}

// cliVerbNames renames the verbs to the names a CLI agent sees them by,
// in what it is told: its system prompt, and the synthetic failure report
// the next attempt reads.
var cliVerbNames = map[string]*strings.Replacer{
	assets.OutputClaudeCode: strings.NewReplacer(VerbSuccess, ClaudeToolSuccess, VerbFailure, ClaudeToolFailure, VerbSideEffect, ClaudeToolSideEffect),
	assets.OutputCodex:      strings.NewReplacer(VerbSuccess, CodexToolSuccess, VerbFailure, CodexToolFailure, VerbSideEffect, CodexToolSideEffect),
}

// cliNames renames the verbs in text to the names the run's CLI agent sees
// them by.
func (r *runner) cliNames(text string) string {
	if es := r.cfg.Spec.ExecutorSpec; es != nil {
		if rep := cliVerbNames[es.Output]; rep != nil {
			return rep.Replace(text)
		}
	}
	return text
}

// VerbGrace is how long a CLI agent that has called a terminal verb may
// take to end its turn on its own, printing the record that carries its
// usage and cost (Codex prints its usage only there). Its session is
// closed: the first tool call or command it starts is denied and stops
// it, and it is stopped when the grace runs out.
const VerbGrace = 20 * time.Second

// cliSession runs the attempt as a fresh CLI agent session in the
// workspace: the prompt is Prompt's (the same bytes as over HTTP), the
// instruction and the protocol its system prompt, and the verbs reach the
// attempt through `orbit mcp`, scoped by a token registered for this
// attempt alone. serveVerbs answers them beside the session; a terminal
// verb closes it: the agent may end its turn within VerbGrace and do
// nothing more. The token is unregistered when the session ends,
// so a verb sent after it is refused as stale.
func (a *attempt) cliSession(ctx context.Context, cp *assets.Checkpoint, mem *Memory) (*agent.Outcome, error) {
	r := a.r
	spec := &r.cfg.Spec
	if spec.ExecutorSpec == nil {
		return nil, fmt.Errorf("checkpoint %s: backend cli: no executor definition in the activity", cp.ID)
	}
	scope, err := r.cfg.CLI.Attempts.Register(r.cfg.TaskID, a.id)
	if err != nil {
		return nil, err
	}
	defer r.cfg.CLI.Attempts.Unregister(scope)
	server, cleanup, err := a.mcpServer(scope)
	if err != nil {
		return nil, err
	}
	defer cleanup()

	stop := make(chan struct{})
	var once sync.Once
	verbCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		// The session is closed before the agent hears the verb's answer:
		// from then on it may only end its turn (StopGrace).
		a.serveVerbs(verbCtx, scope, func() { once.Do(func() { close(stop) }) })
	}()
	name := spec.Executor
	if name == "" {
		name = spec.Provider
	}
	env := r.cfg.Env
	if env == nil {
		env = os.Environ()
	}
	// Claude Code's auto memory would carry what one attempt learnt into
	// the next, outside GroundhogMemory: it is off. (Codex keeps no memory
	// across sessions run with --ephemeral.)
	if spec.ExecutorSpec.Output == assets.OutputClaudeCode {
		env = append(slices.Clip(env), claudeNoAutoMemory)
	}
	out, err := agent.RunCLI(ctx, agent.CLIConfig{
		Executor: name,
		Spec:     *spec.ExecutorSpec,
		Envelope: agent.Envelope{Instruction: r.cliNames(systemPrompt(spec.Instruction)), Prompt: Prompt(r.plan, mem, cp),
			Tools: spec.Tools, Model: spec.Model, RunID: r.cfg.RunID, StepKey: r.cfg.StepKey, Attempt: a.id.Day, Workspace: r.repo.Dir},
		Workspace:       r.repo.Dir,
		Env:             env,
		Timeout:         time.Duration(spec.WallClockTimeoutSeconds) * time.Second,
		Attempt:         a.id.Day,
		Emitter:         &emitter{a: a},
		AllowedPrograms: spec.AllowedPrograms,
		MaxTurns:        spec.MaxIterations,
		OnDenial:        spec.OnDenial,
		MCP:             server,
		Stop:            stop,
		StopGrace:       VerbGrace,
		Sandbox:         r.cfg.CLI.Sandbox,
		Profile:         &r.cfg.Profile,
	})
	cancel()
	wg.Wait()
	return out, err
}

// mcpServer is how the attempt's agent is given `orbit mcp` with the
// scope's token: a --mcp-config file for Claude Code (removed by cleanup),
// -c overrides for Codex, the token in its environment.
func (a *attempt) mcpServer(scope *Scope) (server *agent.CLIMCP, cleanup func(), err error) {
	r := a.r
	if r.cfg.Spec.ExecutorSpec.Output == assets.OutputCodex {
		if r.cfg.CLI.CodexOverrides == nil {
			return nil, nil, fmt.Errorf("the attempt's MCP server: %w", ErrNoCLIBackend)
		}
		overrides, env, err := r.cfg.CLI.CodexOverrides(r.cfg.TaskID, scope.Token)
		if err != nil {
			return nil, nil, err
		}
		return &agent.CLIMCP{CodexOverrides: overrides, Env: env, Tools: codexVerbs}, func() {}, nil
	}
	dir, err := os.MkdirTemp("", "orbit-attempt-")
	if err != nil {
		return nil, nil, fmt.Errorf("the attempt's MCP config: %w", err)
	}
	config := filepath.Join(dir, "mcp.json")
	if err := r.cfg.CLI.WriteMCPConfig(config, r.cfg.TaskID, scope.Token); err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	return &agent.CLIMCP{ConfigPath: config, Tools: claudeVerbs}, func() { os.RemoveAll(dir) }, nil
}
