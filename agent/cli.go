package agent

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/proc"
	"github.com/orbitrun/orbit/internal/sandbox"
)

// Output formats of CLI agents.
const (
	OutputClaudeJSON = "claude_json" // claude -p --output-format json: one result object
	OutputCodexJSONL = "codex_jsonl" // codex exec --json: one event per line
	OutputText       = "text"        // the whole of stdout is the final message
)

const (
	cliLineEvents = 2000    // lines of a stream recorded as cli.output events
	cliLineCap    = 4 << 10 // longest line recorded in a cli.output event
	cliCapture    = 32 << 20
	cliKillGrace  = 2 * time.Second
)

// Envelope is what a CLI agent reads on stdin, as one JSON object.
type Envelope struct {
	Instruction string   `json:"instruction"`
	Prompt      string   `json:"prompt"`
	Tools       []string `json:"tools"`
	Model       string   `json:"model,omitempty"`
	Input       any      `json:"input"`
	RunID       string   `json:"run_id"`
	StepKey     string   `json:"step_key"`
	Attempt     int      `json:"attempt"`
	Workspace   string   `json:"workspace"`
}

// CLIConfig is one invocation of a CLI agent.
type CLIConfig struct {
	Executor  string // its name, for the record
	Spec      assets.ExecutorSpec
	Envelope  Envelope
	Workspace string
	Env       []string // what the agent's environment is taken from (AgentEnviron); nil: the engine's
	// Traceparent, when set, is given to the agent as TRACEPARENT (W3C:
	// the span of the step attempt it runs in), whatever Env holds.
	Traceparent string
	Timeout     time.Duration // wall-clock limit (0: none but ctx)
	Attempt     int
	Emitter     Emitter
	// What the claude_code and codex adapters grant and enforce through the
	// agent's own options; other outputs see them in the envelope or not at
	// all.
	AllowedPrograms []string
	MaxTurns        int    // max_iterations; 0: the agent's own limit
	OnDenial        string // OnDenialTerminate (default) or OnDenialContinue
	// Budget, when set, is checked after every turn the claude_code
	// adapter records: once spent, the agent is stopped.
	Budget *Budget
	// MCP, when set, gives a claude_code or codex agent one MCP server's
	// tools besides its built-in ones.
	MCP *CLIMCP
	// Stop, when closed, closes the agent's session: RunCLI returns what
	// was read, with StopTerminalTool and no error (a Groundhog attempt
	// whose agent called a terminal verb). With no StopGrace its group is
	// killed at once.
	Stop <-chan struct{}
	// StopGrace is how long an agent told to stop may take to end its turn
	// on its own, so that it prints the record that carries its usage
	// (Codex's turn.completed, Claude Code's result); its group is killed
	// when it runs out. It may start nothing more: a tool call or command
	// it starts once the call that closed its session has returned is
	// recorded as tool.denied and stops it at once (stopGrace), and RunCLI
	// returns ErrActedAfterStop. Only the claude_code and codex outputs
	// with an MCP server are watched.
	StopGrace time.Duration
	// Sandbox, when set, starts the agent in the sandbox of this policy
	// where the machine allows one (internal/sandbox); the invocation's
	// record says whether it did. Nil runs it as the engine's other
	// programs run.
	Sandbox *sandbox.Policy
	// Profile bounds where a claude_code agent's file tools may write,
	// checked by its PreToolUse hook (nil: DefaultProfile).
	Profile *FSProfile
	// ResponseSchema, when set, is the JSON Schema of the answer a
	// claude_code agent must give through its StructuredOutput tool
	// (--json-schema); the outcome's Response is that answer. A codex
	// agent, when it is set, answers in codexResponseSchema instead
	// (--output-schema): any JSON object, in the form OpenAI's strict
	// structured outputs accept.
	ResponseSchema string
	// Persist keeps a claude_code or codex agent's session on disk, in the
	// agent's own home, so that a later invocation may continue it: the
	// outcome's CLISession names it.
	Persist bool
	// Orbit is the orbit executable a codex agent's PreToolUse hook runs
	// (`orbit hook codex-pre-tool`); "" is this process's own, which in the
	// engine is orbit (never one found on PATH).
	Orbit string
	// Resume, when set, is the session a claude_code or codex agent
	// continues (a CLISession of an invocation before). It is forked, not
	// appended to: the session named stays as it was, so an invocation cut
	// short and run again continues from the same point, and a new one is
	// kept (implies Persist).
	Resume string
}

// CLIMCP is an MCP server an agent is given. Claude Code reads it from
// ConfigPath (--mcp-config with --strict-mcp-config: no other server it
// may find is started) and is allowed its tools by name; Codex is given it
// by CodexOverrides on its command line.
type CLIMCP struct {
	// ConfigPath is the file Claude Code reads with --mcp-config.
	ConfigPath string
	// CodexOverrides are the `-c` arguments that start the server in Codex
	// (mcp.CodexOverrides).
	CodexOverrides []string
	// Env is added to the agent's environment: the server's variables,
	// which Codex forwards to it by the env_vars of CodexOverrides rather
	// than from its command line (mcp.Scope.Environ).
	Env []string
	// Tools maps the server's tools as the agent reports them (Claude
	// Code: mcp__<server>__<tool>; Codex: mcp:<server>/<tool>) to the Orbit
	// names they are recorded under.
	Tools map[string]string
}

// errStopped is the cause of an agent stopped through CLIConfig.Stop.
var errStopped = errors.New("the agent was stopped: its session is over")

// RunCLI runs a CLI agent in its own process group in the workspace, with
// the envelope on stdin. Its stdout and stderr are recorded line by line as
// cli.output events and whole as blobs; at the wall-clock limit the group
// gets SIGTERM, then SIGKILL, and whatever is left of it is killed when the
// program exits. The final message and usage are parsed from stdout in the
// executor's output format.
//
// The claude_code and codex outputs are adapters: the command line is the
// agent's own (claudeCodeArgs, codexArgs), the prompt is its stdin, and its
// records are recorded as agent.turn, tool.called and tool.denied events as
// they come. A denial under on_denial terminate stops the agent at once.
func RunCLI(ctx context.Context, cfg CLIConfig) (*Outcome, error) {
	stdin, err := json.Marshal(cfg.Envelope)
	if err != nil {
		return nil, err
	}
	args := cfg.Spec.Args
	// streamMu orders the stream's reading of stdout (and grace's) with
	// what a hook records from its own goroutine.
	var streamMu sync.Mutex
	var grace *stopGrace
	var agentHook *preToolHook
	// waitCtx ends when the agent must be stopped before it is done.
	waitCtx, stopAgent := context.WithCancelCause(ctx)
	defer stopAgent(nil)
	var stream cliStream
	switch cfg.Spec.Output {
	case OutputClaudeCode:
		grant, err := assets.ClaudeCodeGrant(cfg.Envelope.Tools, cfg.AllowedPrograms)
		if err != nil {
			return nil, &ProviderError{Provider: cfg.Executor, Message: err.Error()}
		}
		if cfg.MCP != nil {
			grant = grantMCP(grant, cfg.MCP)
		}
		// A denial ends the session under on_denial terminate, and any
		// call once a terminal verb has closed it.
		hook, err := startPreToolHook(hookConfig{decide: claudeCodeDecision(&cfg, grant), stop: func() bool {
			return cfg.onDenial() == OnDenialTerminate || closed(cfg.Stop)
		}})
		if err != nil {
			return nil, err
		}
		defer hook.close()
		agentHook = hook
		args, stdin = claudeCodeArgs(&cfg, grant, hook.endpoint), []byte(cfg.Envelope.Prompt)
		cs := newClaudeStream(&cfg, grant, func(d *DeniedError) { stopAgent(d) })
		cs.halt, cs.hook = stopAgent, hook
		stream = cs
	case OutputCodex:
		grant, err := assets.CodexGrant(cfg.Envelope.Tools)
		if err != nil {
			return nil, &ProviderError{Provider: cfg.Executor, Message: err.Error()}
		}
		schema := ""
		if cfg.ResponseSchema != "" {
			dir, err := os.MkdirTemp("", "orbit-codex-schema-")
			if err != nil {
				return nil, err
			}
			defer os.RemoveAll(dir)
			schema = filepath.Join(dir, "response.schema.json")
			if err := os.WriteFile(schema, []byte(codexResponseSchema), 0o644); err != nil {
				return nil, err
			}
		}
		orbit := cfg.Orbit
		if orbit == "" {
			if orbit, err = os.Executable(); err != nil {
				return nil, fmt.Errorf("the orbit executable for the agent's hook: %w", err)
			}
		}
		cs := newCodexStream(&cfg, grant, stopAgent)
		hook, err := startPreToolHook(hookConfig{decide: codexDecision(&cfg, grant), denied: func(req hookRequest, reason string) bool {
			streamMu.Lock()
			defer streamMu.Unlock()
			return cs.hookDenied(ctx, req, reason, grace)
		}})
		if err != nil {
			return nil, err
		}
		defer hook.close()
		agentHook = hook
		extra := append(codexHookArgs(orbit, hook.endpoint),
			codexMCPOff(codexMCPServers(ctx, cfg.Spec.Command, cfg.Workspace, agentEnv(&cfg)), cfg.MCP)...)
		args, stdin = codexArgs(&cfg, grant, schema, extra), []byte(cfg.Envelope.Prompt)
		stream = cs
	}
	cmd := exec.Command(cfg.Spec.Command, args...)
	if cmd.Err != nil {
		// A program that is not there will not be there on a retry.
		return nil, &ProviderError{Provider: cfg.Executor, Message: fmt.Sprintf("executor %q: %v (PATH=%s)",
			cfg.Executor, cmd.Err, os.Getenv("PATH"))}
	}
	cmd.Dir = cfg.Workspace
	cmd.Stdin = bytes.NewReader(stdin)
	cmd.Env = agentEnv(&cfg)
	if agentHook != nil {
		cmd.Env = append(cmd.Env, EnvHookToken+"="+agentHook.token)
	}
	mode, unenforced := sandbox.ModeNone, ""
	if cfg.Sandbox != nil {
		// The workspace's git directory is run by the engine's git later,
		// outside the sandbox: the agent may not change it.
		p := cfg.Sandbox.ForWorkspace(cfg.Workspace)
		if cfg.MCP != nil && cfg.MCP.ConfigPath != "" {
			// The engine's file, its own to read: the agent reads it
			// through a binding of its own (a root engine's agent is
			// nobody), and may not change it.
			p.Keep = append(slices.Clip(p.Keep), cfg.MCP.ConfigPath)
		}
		if p.Confine {
			if p, cmd.Env, err = withCLIHome(p, cmd.Env, cfg.Spec.Output); err != nil {
				return nil, err
			}
		}
		if mode, err = sandbox.Wrap(cmd, p); err != nil {
			return nil, err
		}
		unenforced = sandbox.Unenforced(mode)
	}
	// Our own pipes rather than cmd's: the program's exit is then seen when
	// it exits, even if something it started still holds its output open
	// (that is killed with the group, which ends the reads).
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer outR.Close()
	errR, errW, err := os.Pipe()
	if err != nil {
		outW.Close()
		return nil, err
	}
	defer errR.Close()
	cmd.Stdout, cmd.Stderr = outW, errW
	began := time.Now()
	g, err := proc.Start(ctx, cmd)
	outW.Close()
	errW.Close()
	if err != nil {
		return nil, fmt.Errorf("starting %s: %w", cfg.Spec.Command, err)
	}
	var wg sync.WaitGroup
	stdout := &lineRecorder{stream: "stdout", cfg: &cfg}
	if stream != nil {
		streamMu.Lock()
		if cfg.Stop != nil && cfg.StopGrace > 0 {
			grace = newStopGrace(&cfg, stream, stopAgent)
		}
		streamMu.Unlock()
		stdout.onLine = func(ctx context.Context, line []byte) {
			streamMu.Lock()
			defer streamMu.Unlock()
			stream.line(ctx, line)
			if grace != nil {
				grace.line(ctx, line)
			}
		}
	}
	if cfg.Spec.Output == OutputClaudeCode {
		stdout.quiet = isClaudeStreamEvent
	}
	stderr := &lineRecorder{stream: "stderr", cfg: &cfg}
	defer wg.Wait()
	defer g.Kill()
	if err := cfg.Emitter.Emit(ctx, events.CLIInvocationStarted, events.CLIInvocationStartedData{
		Attempt: cfg.Attempt, Executor: cfg.Executor, Command: cfg.Spec.Command, Args: args, PID: g.PID(), Sandbox: mode,
		Unenforced: unenforced,
	}); err != nil {
		return nil, err
	}
	wg.Add(2)
	go func() { defer wg.Done(); stdout.read(ctx, outR) }()
	go func() { defer wg.Done(); stderr.read(ctx, errR) }()
	if cfg.Stop != nil {
		go func() {
			select {
			case <-cfg.Stop:
			case <-waitCtx.Done():
				return
			}
			if grace != nil {
				t := time.NewTimer(cfg.StopGrace)
				defer t.Stop()
				select {
				case <-t.C:
				case <-waitCtx.Done():
					return
				}
			}
			stopAgent(errStopped)
		}()
	}
	res := g.Wait(waitCtx, cfg.Timeout, cliKillGrace)
	if agentHook != nil {
		agentHook.agentExited()
	}
	wg.Wait()

	fin := events.CLIInvocationFinishedData{Attempt: cfg.Attempt, Executor: cfg.Executor, TimedOut: res.TimedOut,
		DurationMS: time.Since(began).Milliseconds(), ExitCode: res.ExitCode, Signal: res.Signal}
	if fin.Stdout, err = stdout.finish(ctx); err != nil {
		return nil, err
	}
	if fin.Stderr, err = stderr.finish(ctx); err != nil {
		return nil, err
	}
	var out *Outcome
	var perr error
	if stream != nil {
		// A hook call still being answered (Codex's, held for the agent's
		// end) records into the stream: it is done before the outcome is
		// read.
		if agentHook != nil {
			agentHook.close()
		}
		streamMu.Lock()
		out, perr = stream.outcome(ctx, lastLines(stdout.buf.Bytes(), stderr.buf.Bytes()))
		streamMu.Unlock()
		for _, r := range agentHook.takeRefusals() {
			if err := cfg.Emitter.Emit(ctx, events.CLIHookRefused, events.CLIHookRefusedData{Attempt: cfg.Attempt,
				ToolUseID: capText(r.req.ToolUseID, 200), AgentTool: capText(r.req.ToolName, 200), Reason: r.reason}); err != nil {
				return nil, err
			}
		}
	} else {
		out, perr = parseCLIOutput(cfg.Spec.Output, stdout.buf.Bytes())
	}
	fin.FinalMessage = capText(out.FinalMessage, textCap)
	fin.Model, fin.Usage, fin.CostUSD, fin.UsageInTurns = out.Model, tokenUsage(out.Usage), out.CostUSD, out.UsageInTurns
	if err := cfg.Emitter.Emit(ctx, events.CLIInvocationFinished, fin); err != nil {
		return nil, err
	}
	switch {
	case res.TimedOut:
		out.StopReason = StopTimeout
		return out, fmt.Errorf("%w: %s ran past %s; its process group was killed", ErrTimeout, cfg.Spec.Command, cfg.Timeout)
	case ctx.Err() != nil:
		return out, ctx.Err()
	case grace != nil && grace.err != nil:
		return out, grace.err
	case grace != nil && grace.denied != nil:
		out.StopReason = StopTerminalTool
		return out, fmt.Errorf("%w: %w", ErrActedAfterStop, grace.denied)
	case closed(cfg.Stop):
		// Closed by the caller: however the agent ended after that (on its
		// own or at the grace's end), its session is over as a finished
		// one.
		out.StopReason = StopTerminalTool
		return out, nil
	case stream != nil && perr != nil:
		// The agent's own account (its error result, a denial that stopped
		// it, its turn limit) says more than its exit code.
		return out, perr
	case fin.Signal != "" || fin.ExitCode != 0:
		return out, &ProviderError{Provider: cfg.Executor, Message: fmt.Sprintf("%s exited with %s%s",
			cfg.Spec.Command, describeExit(fin.ExitCode, fin.Signal), proc.LastLine(stderr.buf.Bytes())), Retryable: true}
	case errors.Is(perr, ErrNoCompletion):
		return out, perr
	case perr != nil:
		return out, &ProviderError{Provider: cfg.Executor, Message: perr.Error()}
	}
	return out, nil
}

// agentEnv is the environment the agent starts with: built from an
// allowlist, whatever the engine's holds (AgentEnviron); the executor's env,
// the MCP server's and the step's TRACEPARENT are given as written.
func agentEnv(cfg *CLIConfig) []string {
	base := cfg.Env
	if base == nil {
		base = os.Environ()
	}
	env := AgentEnviron(base, cfg.Spec.Pass)
	for _, k := range slices.Sorted(maps.Keys(cfg.Spec.Env)) {
		env = append(env, k+"="+cfg.Spec.Env[k])
	}
	if cfg.MCP != nil {
		env = append(env, cfg.MCP.Env...)
	}
	if cfg.Traceparent != "" {
		env = append(env, "TRACEPARENT="+cfg.Traceparent)
	}
	return env
}

// closed reports whether ch is closed (a nil ch never is).
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// cliStream is an adapter's reading of its agent's records: line sees each
// line of stdout as it comes, outcome says how the session ended once the
// agent has exited (tail quotes the end of its output).
type cliStream interface {
	line(ctx context.Context, line []byte)
	outcome(ctx context.Context, tail string) (*Outcome, error)
}

// lineRecorder records a stream line by line and keeps all of it.
type lineRecorder struct {
	stream string
	cfg    *CLIConfig
	onLine func(ctx context.Context, line []byte) // sees every line as it comes, if set
	quiet  func(line []byte) bool                 // a line onLine reads but nothing records, if set
	buf    bytes.Buffer
	size   int64
	lines  int
	err    error
}

func (r *lineRecorder) read(ctx context.Context, rd io.Reader) {
	br := bufio.NewReaderSize(rd, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 && r.quiet != nil && r.quiet(line) {
			r.onLine(ctx, bytes.TrimSpace(line))
		} else if len(line) > 0 {
			r.size += int64(len(line))
			if room := cliCapture - r.buf.Len(); room > 0 {
				r.buf.Write(line[:min(room, len(line))])
			}
			r.lines++
			if r.onLine != nil {
				r.onLine(ctx, bytes.TrimSpace(line))
			}
			if r.lines <= cliLineEvents && r.err == nil {
				text := strings.TrimRight(string(line), "\r\n")
				r.err = r.cfg.Emitter.Emit(ctx, events.CLIOutput, events.CLIOutputData{
					Attempt: r.cfg.Attempt, Stream: r.stream, Line: r.lines, Text: capText(text, cliLineCap),
				})
			}
		}
		if err != nil {
			return
		}
	}
}

// finish stores the whole stream as a blob and describes it.
func (r *lineRecorder) finish(ctx context.Context) (events.OutputStream, error) {
	data := r.buf.Bytes()
	st := events.OutputStream{Size: r.size, Truncated: r.size > int64(len(data))}
	st.Preview = string(data[max(0, len(data)-512):])
	if r.err != nil {
		return st, r.err
	}
	if len(data) > 0 {
		ref, err := r.cfg.Emitter.PutBlob(ctx, data)
		if err != nil {
			return st, err
		}
		st.Blob = &ref
	}
	return st, nil
}

// parseCLIOutput reads the final message and usage from a CLI agent's
// stdout.
func parseCLIOutput(format string, stdout []byte) (*Outcome, error) {
	out := &Outcome{StopReason: StopEndTurn}
	switch format {
	case OutputClaudeJSON:
		var res struct {
			Type     string  `json:"type"`
			Subtype  string  `json:"subtype"`
			IsError  bool    `json:"is_error"`
			Result   string  `json:"result"`
			NumTurns int     `json:"num_turns"`
			CostUSD  float64 `json:"total_cost_usd"`
			Usage    struct {
				InputTokens              int64 `json:"input_tokens"`
				OutputTokens             int64 `json:"output_tokens"`
				CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
				CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
			} `json:"usage"`
			ModelUsage map[string]json.RawMessage `json:"modelUsage"`
		}
		line := lastJSONLine(stdout)
		if line == nil {
			return out, fmt.Errorf("%w: no JSON result object on stdout", ErrNoCompletion)
		}
		if err := json.Unmarshal(line, &res); err != nil {
			return out, fmt.Errorf("result object: %v", err)
		}
		out.FinalMessage, out.Turns, out.CostUSD = res.Result, res.NumTurns, res.CostUSD
		out.Usage = Usage{InputTokens: res.Usage.InputTokens, OutputTokens: res.Usage.OutputTokens,
			CacheReadTokens: res.Usage.CacheReadInputTokens, CacheWriteTokens: res.Usage.CacheCreationInputTokens}
		out.Model = strings.Join(slices.Sorted(maps.Keys(res.ModelUsage)), ",")
		if res.IsError || (res.Subtype != "" && res.Subtype != "success") {
			return out, fmt.Errorf("the agent reported %s: %s", res.Subtype, capText(res.Result, 200))
		}
	case OutputCodexJSONL:
		var failure string
		for _, line := range bytes.Split(stdout, []byte("\n")) {
			var ev struct {
				Type string `json:"type"`
				Item struct {
					Type string `json:"type"`
					Text string `json:"text"`
				} `json:"item"`
				Usage struct {
					InputTokens       int64 `json:"input_tokens"`
					CachedInputTokens int64 `json:"cached_input_tokens"`
					OutputTokens      int64 `json:"output_tokens"`
				} `json:"usage"`
				Error   struct{ Message string } `json:"error"`
				Message string                   `json:"message"`
			}
			if json.Unmarshal(bytes.TrimSpace(line), &ev) != nil {
				continue
			}
			switch ev.Type {
			case "item.completed":
				if ev.Item.Type == "agent_message" {
					out.FinalMessage = ev.Item.Text
				}
			case "turn.completed":
				// An error before a completed turn is one Codex recovered
				// from (a reconnect): the turn's end is what counts.
				failure = ""
				out.Turns++
				out.Usage = out.Usage.Add(Usage{InputTokens: ev.Usage.InputTokens, OutputTokens: ev.Usage.OutputTokens,
					CacheReadTokens: ev.Usage.CachedInputTokens})
			case "turn.failed":
				failure = ev.Error.Message
			case "error":
				failure = ev.Message
			}
		}
		if failure != "" {
			return out, fmt.Errorf("the agent failed: %s", failure)
		}
		if out.Turns == 0 {
			return out, fmt.Errorf("%w: no turn.completed event on stdout", ErrNoCompletion)
		}
	default:
		out.FinalMessage = strings.TrimSpace(string(stdout))
	}
	return out, nil
}

func lastJSONLine(b []byte) []byte {
	lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
	for i := len(lines) - 1; i >= 0; i-- {
		if l := bytes.TrimSpace(lines[i]); len(l) > 0 && l[0] == '{' {
			return l
		}
	}
	return nil
}

func describeExit(code int, signal string) string {
	if signal != "" {
		return "signal " + signal
	}
	return fmt.Sprintf("code %d", code)
}

// lastLines quotes the end of an agent's output for an error that has
// nothing better to say: the last line of stderr, else of stdout.
func lastLines(stdout, stderr []byte) string {
	if l := proc.LastLine(stderr); l != "" {
		return l
	}
	return proc.LastLine(stdout)
}

// persist reports whether the agent keeps its session on disk.
func (cfg *CLIConfig) persist() bool {
	return cfg.Persist || cfg.Resume != ""
}

// hookToolContext is what the PreToolUse hook checks a call's paths
// against: the workspace, under the step's filesystem profile or
// DefaultProfile.
func (cfg *CLIConfig) hookToolContext() *ToolContext {
	tc := &ToolContext{Workspace: cfg.Workspace, Profile: DefaultProfile}
	if cfg.Profile != nil {
		tc.Profile = *cfg.Profile
	}
	return tc
}

// onDenial is what a denial does: OnDenialTerminate unless the step said
// otherwise.
func (cfg *CLIConfig) onDenial() string {
	if cfg.OnDenial == "" {
		return OnDenialTerminate
	}
	return cfg.OnDenial
}
