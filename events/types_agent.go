package events

// Agent event types: model turns, tool calls and denials, named sessions,
// and invocations of CLI agents.
const (
	AgentTurn             = "agent.turn"
	AgentSession          = "agent.session"
	ToolCalled            = "tool.called"
	ToolDenied            = "tool.denied"
	CLIInvocationStarted  = "cli.invocation.started"
	CLIInvocationFinished = "cli.invocation.finished"
	CLIOutput             = "cli.output"
	CLIHookRefused        = "cli.hook.refused"
)

func init() {
	register(AgentTurn, AggregateRun, AgentTurnData{})
	register(AgentSession, AggregateRun, AgentSessionData{})
	register(ToolCalled, AggregateRun, ToolCalledData{})
	register(ToolDenied, AggregateRun, ToolDeniedData{})
	register(CLIInvocationStarted, AggregateRun, CLIInvocationStartedData{})
	register(CLIInvocationFinished, AggregateRun, CLIInvocationFinishedData{})
	register(CLIOutput, AggregateRun, CLIOutputData{})
	register(CLIHookRefused, AggregateRun, CLIHookRefusedData{})
}

// TokenUsage counts a model's tokens.
type TokenUsage struct {
	InputTokens      int64 `json:"input_tokens"`
	OutputTokens     int64 `json:"output_tokens"`
	CacheReadTokens  int64 `json:"cache_read_tokens,omitempty"`
	CacheWriteTokens int64 `json:"cache_write_tokens,omitempty"`
}

// AgentTurnData records one model turn: who answered, why it stopped, what
// it cost, and what it asked for. The whole response is a blob.
type AgentTurnData struct {
	Attempt     int        `json:"attempt"`
	Turn        int        `json:"turn"` // 1-based within the session
	Session     string     `json:"session,omitempty"`
	Provider    string     `json:"provider"`
	Model       string     `json:"model"`
	Fixture     string     `json:"fixture,omitempty"`      // replay provider
	FixtureTurn int        `json:"fixture_turn,omitempty"` // replay provider: the fixture's turn index (0-based) + 1
	StopReason  string     `json:"stop_reason"`
	Usage       TokenUsage `json:"usage"`
	Text        string     `json:"text,omitempty"` // the turn's text, capped
	ToolUses    []string   `json:"tool_uses,omitempty"`
	Response    *BlobRef   `json:"response,omitempty"`
}

// AgentSessionData records the transcript of a named session after a step
// used it, so a later step (or a restarted engine) continues the same
// conversation. A CLI agent keeps its own transcript: the record names its
// session instead (Agent, CLISession) and has no Transcript.
type AgentSessionData struct {
	Attempt    int     `json:"attempt"`
	Session    string  `json:"session"`
	Messages   int     `json:"messages"`
	Transcript BlobRef `json:"transcript,omitzero"`
	// Agent is the adapter whose session CLISession is (claude_code,
	// codex); both are empty for the HTTP loop.
	Agent      string `json:"agent,omitempty"`
	CLISession string `json:"cli_session,omitempty"`
}

// ToolCalledData records one executed tool call. The input is identified
// by its digest; a large result is a blob.
type ToolCalledData struct {
	Attempt   int    `json:"attempt"`
	Turn      int    `json:"turn"`
	ToolUseID string `json:"tool_use_id"`
	Name      string `json:"name"`
	// AgentTool is the tool's name in a CLI agent (Claude Code's "Write"
	// for Orbit's fs.write); empty for the HTTP loop, where they agree.
	AgentTool   string   `json:"agent_tool,omitempty"`
	InputDigest string   `json:"input_digest"`
	InputSize   int      `json:"input_size"`
	ResultSize  int      `json:"result_size"`
	DurationMS  int64    `json:"duration_ms"`
	Error       string   `json:"error,omitempty"`
	Result      *BlobRef `json:"result,omitempty"`
}

// ToolDeniedData records a tool call refused by policy: a tool outside the
// allowlist, a path outside the filesystem profile, a program outside the
// shell allowlist. Nothing was executed.
type ToolDeniedData struct {
	Attempt   int    `json:"attempt"`
	Turn      int    `json:"turn"`
	ToolUseID string `json:"tool_use_id"`
	Name      string `json:"name"`
	AgentTool string `json:"agent_tool,omitempty"` // as in ToolCalledData
	Reason    string `json:"reason"`
	Path      string `json:"path,omitempty"`
	OnDenial  string `json:"on_denial"` // terminate | continue
}

// CLIInvocationStartedData records the start of a CLI agent process.
type CLIInvocationStartedData struct {
	Attempt  int      `json:"attempt"`
	Executor string   `json:"executor"`
	Command  string   `json:"command"`
	Args     []string `json:"args,omitempty"`
	PID      int      `json:"pid"`
	// Sandbox is how the agent was confined: "mount-namespace" (the
	// engine's secrets covered, see internal/sandbox) or "none" (it could
	// read whatever the engine's user can). Empty in records made before
	// agents were sandboxed.
	Sandbox string `json:"sandbox,omitempty"`
	// Unenforced says what the sandbox did not keep the agent from, and
	// why (sandbox.Unenforced): everything under "none", file permissions
	// for an engine that runs as root.
	Unenforced string `json:"unenforced,omitempty"`
}

// CLIInvocationFinishedData records how a CLI agent process ended and what
// was parsed from its output.
type CLIInvocationFinishedData struct {
	Attempt      int          `json:"attempt"`
	Executor     string       `json:"executor"`
	ExitCode     int          `json:"exit_code"`
	Signal       string       `json:"signal,omitempty"`
	TimedOut     bool         `json:"timed_out,omitempty"`
	DurationMS   int64        `json:"duration_ms"`
	Stdout       OutputStream `json:"stdout"`
	Stderr       OutputStream `json:"stderr"`
	FinalMessage string       `json:"final_message,omitempty"`
	Model        string       `json:"model,omitempty"`
	Usage        TokenUsage   `json:"usage"`
	CostUSD      float64      `json:"cost_usd,omitempty"` // as the agent reports it (Claude Code's total_cost_usd)
	// UsageInTurns says that the invocation's agent.turn events (or
	// groundhog.agent.turn, for a Groundhog attempt) carry its usage turn
	// by turn, as the claude_code adapter records them: Usage is then their
	// total by the agent's result record, and whatever sums usage counts
	// the turns and not Usage, or it would count the tokens twice. False
	// when the turns carry none (codex_jsonl) or none were recorded
	// (claude_json, text): Usage is then the only account.
	UsageInTurns bool `json:"usage_in_turns,omitempty"`
}

// CLIOutputData is one line a CLI agent printed, as it printed it.
type CLIOutputData struct {
	Attempt int    `json:"attempt"`
	Stream  string `json:"stream"` // stdout | stderr
	Line    int    `json:"line"`   // 1-based within the stream
	Text    string `json:"text"`
}

// CLIHookRefusedData records a request to a CLI agent's PreToolUse hook
// that was not taken as a call of the agent's: unreadable, with no call
// id, a second one for a call already decided, or a denial for a call the
// agent's output never showed. Something other than the CLI posted it
// (the agent's own shell can read the hook's token): the request was
// answered with a denial, and nothing is recorded against the call it
// names.
type CLIHookRefusedData struct {
	Attempt   int    `json:"attempt"`
	ToolUseID string `json:"tool_use_id,omitempty"`
	AgentTool string `json:"agent_tool,omitempty"` // the tool_name it gave
	Reason    string `json:"reason"`
}
