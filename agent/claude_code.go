package agent

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
)

// OutputClaudeCode is the claude_code adapter: Orbit builds Claude Code's
// command line from the agent_loop spec and reads its stream-json records
// as they come.
const OutputClaudeCode = assets.OutputClaudeCode

// claudeCodeProvider names Claude Code in agent.turn events.
const claudeCodeProvider = "claude_code"

// claudeCodeArgs is Claude Code's command line for one invocation: the
// executor's own args first, then print mode with stream-json records (and
// the partial-message records that carry each message's final usage), the
// model, the instruction appended to Claude Code's system prompt, the turn
// limit, and the allowlist as Claude Code's own permissions. The prompt
// goes on stdin.
//
// IMPORTANT: --permission-mode dontAsk denies, without asking, every tool
// use that no --allowedTools rule allows, and --tools offers only the
// built-in tools the allowlist maps to: no step can wait on a permission
// prompt, and nothing outside the allowlist runs.
func claudeCodeArgs(cfg *CLIConfig, grant assets.ClaudeCodeGrantData, hookEndpoint string) []string {
	args := append([]string(nil), cfg.Spec.Args...)
	args = append(args, "-p", "--output-format=stream-json", "--verbose", "--include-partial-messages")
	switch {
	case cfg.Resume != "":
		args = append(args, "--resume="+cfg.Resume, "--fork-session")
	case !cfg.Persist:
		args = append(args, "--no-session-persistence")
	}
	// No settings file is loaded but the hook's: the workspace's
	// (.claude/settings.json, .claude/settings.local.json) and the CLI's
	// own directory are the agent's to write, and their permission rules
	// would add to the step's allowlist in the next session. Executor args
	// that name --setting-sources choose for themselves.
	if !slices.ContainsFunc(cfg.Spec.Args, func(a string) bool { return strings.HasPrefix(a, claudeSettingSources) }) {
		args = append(args, claudeSettingSources+"=")
	}
	args = append(args, "--settings="+claudeCodeHookSettings(hookEndpoint),
		"--permission-mode=dontAsk", "--tools="+strings.Join(grant.Tools, ","))
	if len(grant.Allowed) > 0 {
		args = append(args, "--allowedTools="+strings.Join(grant.Allowed, ","))
	}
	args = append(args, "--disallowedTools="+strings.Join(grant.Denied, ","))
	if m := cfg.Envelope.Model; m != "" {
		args = append(args, "--model="+m)
	}
	if s := cfg.Envelope.Instruction; s != "" {
		args = append(args, "--append-system-prompt="+s)
	}
	if cfg.MaxTurns > 0 {
		args = append(args, "--max-turns="+strconv.Itoa(cfg.MaxTurns))
	}
	if cfg.ResponseSchema != "" {
		args = append(args, "--json-schema="+cfg.ResponseSchema)
	}
	// --strict-mcp-config: no MCP server of the user's or the project's
	// configuration is started, only Orbit's (when it gives one).
	if cfg.MCP != nil {
		args = append(args, "--mcp-config="+cfg.MCP.ConfigPath)
	}
	return append(args, "--strict-mcp-config")
}

// claudeSettingSources is Claude Code's flag that lists the settings
// files it loads (user, project, local).
const claudeSettingSources = "--setting-sources"

// claudeCodeWrites are the Claude Code tools that write a file, and the
// field of their input that names it.
var claudeCodeWrites = map[string]string{"Write": "file_path", "Edit": "file_path", "MultiEdit": "file_path", "NotebookEdit": "notebook_path"}

// claudeStructuredOutput is the tool through which Claude Code's model
// gives the answer --json-schema asks for: no Orbit tool, and not a call
// the session records, but its answer (the result's structured_output).
const claudeStructuredOutput = "StructuredOutput"

// closedByVerb is the hook's reason for a call made once a terminal verb
// has closed the session.
const closedByVerb = "called after the session was closed by a terminal verb: refused by the PreToolUse hook before it ran"

// claudeCodeDecision decides each call Claude Code's PreToolUse hook asks
// about, before the tool runs: nothing once the session is closed (a
// terminal verb was called), nothing outside the allowlist, and no write
// the workspace's filesystem profile refuses (outside the workspace, in
// .git/ or .orbit/, or outside its write globs). Claude Code's own
// permission rules still apply to what the hook lets through.
func claudeCodeDecision(cfg *CLIConfig, grant assets.ClaudeCodeGrantData) func(hookRequest) string {
	tc := cfg.hookToolContext()
	return func(req hookRequest) string {
		if closed(cfg.Stop) {
			return closedByVerb
		}
		if req.ToolName == claudeStructuredOutput && cfg.ResponseSchema != "" {
			return ""
		}
		orbit, ok := grant.Orbit[req.ToolName]
		if !ok {
			return "not in the allowlist: Orbit granted Claude Code no " + req.ToolName
		}
		if field, ok := claudeCodeWrites[req.ToolName]; ok {
			var in map[string]any
			_ = json.Unmarshal(req.ToolInput, &in)
			path, _ := in[field].(string)
			if path == "" {
				return "no " + field + " in the call"
			}
			return writePathDenial(tc, orbit, path)
		}
		return ""
	}
}

// grantMCP adds an MCP server's tools to a grant: allowed by name, and
// recorded under their Orbit names.
func grantMCP(grant assets.ClaudeCodeGrantData, m *CLIMCP) assets.ClaudeCodeGrantData {
	orbit := make(map[string]string, len(grant.Orbit)+len(m.Tools))
	maps.Copy(orbit, grant.Orbit)
	allowed := slices.Clone(grant.Allowed)
	for _, tool := range slices.Sorted(maps.Keys(m.Tools)) {
		orbit[tool] = m.Tools[tool]
		allowed = append(allowed, tool)
	}
	grant.Orbit, grant.Allowed = orbit, allowed
	return grant
}

// claudeStream reads Claude Code's stream-json records one line at a time
// and records the session as it goes: agent.turn when a model message is
// complete, tool.called when a tool's result comes back, tool.denied when
// Claude Code refuses a call or the model calls a tool it was not offered.
// It is used from one goroutine.
//
// IMPORTANT: Claude Code prints one model message as several assistant
// records (one a content block, same message id) and runs each tool as
// soon as its block is complete, so tool results come between the records
// of the message that called them. A message is complete only when a record
// of the next one (or the result) comes: until then what its calls record
// is queued, so that the log reads turn, then that turn's calls. A denial
// still stops the agent at once.
type claudeStream struct {
	cfg   *CLIConfig
	grant assets.ClaudeCodeGrantData
	// deny is called with the first denial when on_denial is terminate: it
	// stops the agent.
	deny func(*DeniedError)
	// halt stops the agent when its run's budget is spent (spent says so).
	halt func(error)
	// hook is the PreToolUse hook's record of what it denied.
	hook  *preToolHook
	used  Usage
	spent error

	turn    int
	msg     *ccMessage         // the model message being read (one per turn)
	final   map[string]ccUsage // each message's usage as its stream events left it, by message id
	apiMsg  string             // the message whose stream events are being read
	queue   []queued           // what its calls recorded while it was being read
	calls   map[string]*ccCall
	out     Outcome
	result  *ccResult
	denied  *DeniedError // the first denial
	records int
	err     error // the first failure to record; nothing more is recorded after it
}

type ccMessage struct {
	ID      string      `json:"id"`
	Model   string      `json:"model"`
	Content []ccContent `json:"content"`
	Usage   ccUsage     `json:"usage"`
}

type ccContent struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"` // tool_result: a string or text blocks
	IsError   bool            `json:"is_error"`
}

type ccUsage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
}

func (u ccUsage) usage() Usage {
	return Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens,
		CacheReadTokens: u.CacheReadInputTokens, CacheWriteTokens: u.CacheCreationInputTokens}
}

// ccUsageDelta is the usage of a message_delta stream event: the message's
// totals so far, for the fields it has.
type ccUsageDelta struct {
	InputTokens              *int64 `json:"input_tokens"`
	OutputTokens             *int64 `json:"output_tokens"`
	CacheReadInputTokens     *int64 `json:"cache_read_input_tokens"`
	CacheCreationInputTokens *int64 `json:"cache_creation_input_tokens"`
}

// apply sets u's fields to those the delta has.
func (d ccUsageDelta) apply(u ccUsage) ccUsage {
	for _, f := range []struct {
		to   *int64
		from *int64
	}{{&u.InputTokens, d.InputTokens}, {&u.OutputTokens, d.OutputTokens},
		{&u.CacheReadInputTokens, d.CacheReadInputTokens}, {&u.CacheCreationInputTokens, d.CacheCreationInputTokens}} {
		if f.from != nil {
			*f.to = *f.from
		}
	}
	return u
}

// ccStreamEvent is the Messages API stream event a stream_event record
// (--include-partial-messages) carries, as far as Orbit reads it.
type ccStreamEvent struct {
	Type    string `json:"type"`
	Message struct {
		ID    string  `json:"id"`
		Usage ccUsage `json:"usage"`
	} `json:"message"` // message_start
	Usage ccUsageDelta `json:"usage"` // message_delta
}

// ccRecord is one stream-json line, as far as Orbit reads it.
type ccRecord struct {
	Type    string `json:"type"`
	Subtype string `json:"subtype"`
	// stream_event
	Event        json.RawMessage `json:"event"`
	APIMessageID string          `json:"api_message_id"`
	// assistant, user
	Message json.RawMessage `json:"message"`
	// system/init and result: the session's id
	SessionID string `json:"session_id"`
	// system/permission_denied (message is then a string)
	ToolName  string `json:"tool_name"`
	ToolUseID string `json:"tool_use_id"`
	// user: how Claude Code's permissions decided each call. A deny rule's
	// refusal is said only here (and in the result), not as a
	// permission_denied record.
	ToolResultMeta []struct {
		ID                 string `json:"id"`
		PermissionDecision struct {
			Decision string `json:"decision"`
		} `json:"permission_decision"`
	} `json:"tool_result_meta"`
}

// ccResult is the record that ends a session.
type ccResult struct {
	Subtype           string                     `json:"subtype"`
	IsError           bool                       `json:"is_error"`
	Result            string                     `json:"result"`
	Errors            []string                   `json:"errors"`
	TotalCostUSD      float64                    `json:"total_cost_usd"`
	Usage             ccUsage                    `json:"usage"`
	ModelUsage        map[string]json.RawMessage `json:"modelUsage"`
	StructuredOutput  json.RawMessage            `json:"structured_output"`
	PermissionDenials []struct {
		ToolName  string `json:"tool_name"`
		ToolUseID string `json:"tool_use_id"`
	} `json:"permission_denials"`
	TerminalReason string `json:"terminal_reason"`
}

// queued is an event held until the turn it belongs to is recorded.
type queued struct {
	typ     string
	payload any
}

// ccCall is a tool call the model made, waiting for its result.
type ccCall struct {
	name   string
	input  json.RawMessage
	turn   int
	at     time.Time
	denied bool
}

func newClaudeStream(cfg *CLIConfig, grant assets.ClaudeCodeGrantData, deny func(*DeniedError)) *claudeStream {
	return &claudeStream{cfg: cfg, grant: grant, deny: deny, calls: map[string]*ccCall{},
		final: map[string]ccUsage{}, out: Outcome{StopReason: StopEndTurn}}
}

// line reads one line of stdout. A line that is not a JSON record (Claude
// Code prints none, but a wrapper might) is left to the cli.output record.
func (s *claudeStream) line(ctx context.Context, line []byte) {
	if s.err != nil {
		return
	}
	var rec ccRecord
	if json.Unmarshal(line, &rec) != nil || rec.Type == "" {
		return
	}
	if rec.Type == "stream_event" {
		s.streamEvent(rec)
		return
	}
	s.records++
	switch rec.Type {
	case "assistant":
		s.err = s.assistant(ctx, rec.Message)
	case "user":
		rejected := map[string]bool{}
		for _, m := range rec.ToolResultMeta {
			if m.PermissionDecision.Decision == "reject" {
				rejected[m.ID] = true
			}
		}
		s.err = s.user(ctx, rec.Message, rejected)
		// Tool results: the model's turn is over, the next not yet asked.
		s.checkBudget()
	case "system":
		if rec.Subtype == "init" && s.cfg.persist() {
			s.out.CLISession = rec.SessionID
		}
		if rec.Subtype == "permission_denied" {
			var reason string
			_ = json.Unmarshal(rec.Message, &reason)
			s.err = s.denial(ctx, rec.ToolUseID, rec.ToolName, reason)
		}
	case "result":
		var res ccResult
		if err := json.Unmarshal(line, &res); err == nil {
			if rec.SessionID != "" && s.cfg.persist() {
				s.out.CLISession = rec.SessionID
			}
			s.result = &res
			if s.err = s.flush(ctx); s.err == nil {
				s.err = s.finish(ctx)
			}
		}
	}
}

// assistant adds a record of a model message: the first of the next
// message completes the one before.
func (s *claudeStream) assistant(ctx context.Context, raw json.RawMessage) error {
	var m ccMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil
	}
	if s.msg != nil && s.msg.ID != m.ID {
		if err := s.flush(ctx); err != nil {
			return err
		}
	}
	if s.msg == nil {
		s.turn++
		s.msg = &ccMessage{ID: m.ID, Model: m.Model}
	}
	s.msg.Content = append(s.msg.Content, m.Content...)
	s.msg.Usage = m.Usage
	if u, ok := s.final[m.ID]; ok {
		s.msg.Usage = u
	}
	for _, b := range m.Content {
		if b.Type != "tool_use" {
			continue
		}
		if b.Name == claudeStructuredOutput && s.cfg.ResponseSchema != "" {
			continue
		}
		s.calls[b.ID] = &ccCall{name: b.Name, input: b.Input, turn: s.turn, at: time.Now()}
		// Claude Code answers a call to a tool it was not offered itself, as
		// an unknown tool: for Orbit it is a tool outside the allowlist.
		if _, ok := s.grant.Orbit[b.Name]; !ok {
			if err := s.denial(ctx, b.ID, b.Name, "not in the allowlist: Claude Code was not offered "+b.Name); err != nil {
				return err
			}
		}
	}
	return nil
}

// streamEvent reads a message's usage from its stream events. An assistant
// record carries the usage of the message's start (its output tokens are
// 1): the final count comes only in the message_delta event, printed after
// the message's last assistant record and before the next message's.
//
// IMPORTANT: a turn's usage is what metrics and budgets add up
// (usage_in_turns), so it must be the message's final usage, not the
// assistant record's.
func (s *claudeStream) streamEvent(rec ccRecord) {
	var ev ccStreamEvent
	if json.Unmarshal(rec.Event, &ev) != nil {
		return
	}
	switch ev.Type {
	case "message_start":
		s.apiMsg = ev.Message.ID
		s.final[s.apiMsg] = ev.Message.Usage
	case "message_delta":
		id := rec.APIMessageID
		if id == "" {
			id = s.apiMsg
		}
		u := ev.Usage.apply(s.final[id])
		s.final[id] = u
		if s.msg != nil && s.msg.ID == id {
			s.msg.Usage = u
			s.checkBudget()
		}
	}
}

// isClaudeStreamEvent says whether a stdout line is a stream_event record:
// read for usage, but not recorded as cli.output nor kept in the output
// blob, since the assistant records say the same whole.
func isClaudeStreamEvent(line []byte) bool {
	return bytes.HasPrefix(line, []byte(`{"type":"stream_event"`))
}

// emit records an event, or queues it while a model message is being read.
func (s *claudeStream) emit(ctx context.Context, typ string, payload any) error {
	if s.msg != nil {
		s.queue = append(s.queue, queued{typ, payload})
		return nil
	}
	return s.cfg.Emitter.Emit(ctx, typ, payload)
}

// flush records the model message read so far as a turn, then what its
// calls recorded meanwhile.
func (s *claudeStream) flush(ctx context.Context) error {
	m := s.msg
	if m == nil {
		return nil
	}
	s.msg = nil
	delete(s.final, m.ID)
	q := s.queue
	s.queue = nil
	s.out.Turns, s.out.UsageInTurns = s.turn, true
	if m.Model != "" && !strings.HasPrefix(m.Model, "<") {
		s.out.Model = m.Model
	}
	data := events.AgentTurnData{Attempt: s.cfg.Attempt, Turn: s.turn, Provider: claudeCodeProvider,
		Model: m.Model, StopReason: StopEndTurn, Usage: tokenUsage(m.Usage.usage())}
	for _, b := range m.Content {
		switch b.Type {
		case "text":
			data.Text += b.Text
		case "tool_use":
			data.StopReason = StopToolUse
			data.ToolUses = append(data.ToolUses, b.Name)
		}
	}
	if full, err := json.Marshal(m.Content); err == nil && (len(data.Text) > textCap || len(full) > blobCap) {
		ref, err := s.cfg.Emitter.PutBlob(ctx, full)
		if err != nil {
			return err
		}
		data.Response = &ref
		data.Text = capText(data.Text, textCap)
	}
	if err := s.cfg.Emitter.Emit(ctx, events.AgentTurn, data); err != nil {
		return err
	}
	for _, e := range q {
		if err := s.cfg.Emitter.Emit(ctx, e.typ, e.payload); err != nil {
			return err
		}
	}
	s.used = s.used.Add(m.Usage.usage())
	s.checkBudget()
	return nil
}

// checkBudget stops the agent once the turns read so far (the one being
// read included) spend its run's budget. A session whose result has come
// is over already: the next step's check stops the run instead.
func (s *claudeStream) checkBudget() {
	if s.spent != nil || s.result != nil {
		return
	}
	u := s.used
	if s.msg != nil {
		u = u.Add(s.msg.Usage.usage())
	}
	if err := s.cfg.Budget.check(u, 0); err != nil {
		s.spent, s.out.StopReason, s.out.Usage = err, StopBudget, u
		if s.halt != nil {
			s.halt(err)
		}
	}
}

// orbitName is the Orbit tool a Claude Code tool stands for (the one
// granted, else the table's), or the Claude Code name when it stands for
// none.
func (s *claudeStream) orbitName(tool string) string {
	if name, ok := s.grant.Orbit[tool]; ok {
		return name
	}
	if name := assets.ClaudeCodeOrbitTool(tool); name != "" {
		return name
	}
	return tool
}

// denial records a refused call, once, and stops the agent when on_denial
// is terminate.
func (s *claudeStream) denial(ctx context.Context, id, tool, reason string) error {
	c := s.calls[id]
	if c == nil {
		c = &ccCall{name: tool, turn: s.turn}
		s.calls[id] = c
	}
	if c.denied {
		return nil
	}
	c.denied = true
	// The hook's reason is what the agent was told; a call the hook denied
	// never ran, and the hook's answer ends the session by itself.
	hooked := false
	if r, ok := s.hook.reason(id); ok {
		reason, hooked = r, true
	}
	onDenial := s.cfg.onDenial()
	if err := s.emit(ctx, events.ToolDenied, events.ToolDeniedData{
		Attempt: s.cfg.Attempt, Turn: c.turn, ToolUseID: id, Name: s.orbitName(tool), AgentTool: tool,
		Reason: capText(reason, textCap), OnDenial: onDenial,
	}); err != nil {
		return err
	}
	if s.denied == nil {
		s.denied = &DeniedError{Tool: s.orbitName(tool), Reason: capText(reason, 200)}
		if onDenial == OnDenialTerminate {
			s.out.StopReason = StopDenied
			if !hooked {
				s.deny(s.denied)
			}
		}
	}
	return nil
}

// hookDenials records the calls the hook denied that nothing else has
// recorded yet (the session ended before their results were printed). A
// denial for a call Claude Code never printed was asked for by something
// else holding the token (the agent's own Bash): the hook keeps it as
// refused, and nothing is recorded against the id.
func (s *claudeStream) hookDenials(ctx context.Context) error {
	if s.hook == nil {
		return nil
	}
	ids := s.hook.ids()
	slices.Sort(ids)
	for _, id := range ids {
		c := s.calls[id]
		if c == nil {
			s.hook.refuse(id, refusedUnseen)
			continue
		}
		if err := s.denial(ctx, id, c.name, ""); err != nil {
			return err
		}
	}
	return nil
}

// user reads the tool results Claude Code sends back to the model: each is
// a tool.called, unless the call was denied (rejected: by the ids Claude
// Code's permissions rejected).
func (s *claudeStream) user(ctx context.Context, raw json.RawMessage, rejected map[string]bool) error {
	var m struct {
		Content []ccContent `json:"content"`
	}
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	for _, b := range m.Content {
		if b.Type != "tool_result" {
			continue
		}
		c := s.calls[b.ToolUseID]
		if c == nil || c.denied {
			continue
		}
		out := toolResultText(b.Content)
		if _, hooked := s.hook.reason(b.ToolUseID); rejected[b.ToolUseID] || hooked {
			if err := s.denial(ctx, b.ToolUseID, c.name, out); err != nil {
				return err
			}
			continue
		}
		delete(s.calls, b.ToolUseID)
		sum := sha256.Sum256(c.input)
		data := events.ToolCalledData{
			Attempt: s.cfg.Attempt, Turn: c.turn, ToolUseID: b.ToolUseID, Name: s.orbitName(c.name), AgentTool: c.name,
			InputDigest: "sha256-" + hex.EncodeToString(sum[:]), InputSize: len(c.input),
			ResultSize: len(out), DurationMS: time.Since(c.at).Milliseconds(),
		}
		if b.IsError {
			data.Error = capText(out, textCap)
		}
		if len(out) > blobCap {
			ref, err := s.cfg.Emitter.PutBlob(ctx, []byte(out))
			if err != nil {
				return err
			}
			data.Result = &ref
		}
		if err := s.emit(ctx, events.ToolCalled, data); err != nil {
			return err
		}
		s.out.ToolCalls++
	}
	return nil
}

// toolResultText is a tool_result's content: a string, or text blocks.
func toolResultText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(raw, &blocks)
	parts := make([]string, 0, len(blocks))
	for _, b := range blocks {
		parts = append(parts, b.Text)
	}
	return strings.Join(parts, "\n")
}

// finish takes the final message, turns and usage from the result record,
// and records the denials it lists that were not seen as they happened.
func (s *claudeStream) finish(ctx context.Context) error {
	res := s.result
	// Turns are the model messages read, not the result's num_turns, which
	// counts a message printed as several records several times.
	s.out.FinalMessage, s.out.Usage, s.out.CostUSD = res.Result, res.Usage.usage(), res.TotalCostUSD
	if len(res.StructuredOutput) > 0 {
		_ = json.Unmarshal(res.StructuredOutput, &s.out.Response)
	}
	if err := s.hookDenials(ctx); err != nil {
		return err
	}
	for _, d := range res.PermissionDenials {
		if err := s.denial(ctx, d.ToolUseID, d.ToolName, "denied by Claude Code's permissions"); err != nil {
			return err
		}
	}
	return nil
}

// outcome is how the session ended, and the error that fails the step when
// it did not end well: a denial under on_denial terminate, an error result
// (its own words), the turn limit, or no result at all (then tail, the end
// of what the agent printed, says what happened).
func (s *claudeStream) outcome(ctx context.Context, tail string) (*Outcome, error) {
	if s.err == nil {
		// A stream cut short: what was read is recorded all the same.
		s.err = s.flush(ctx)
	}
	if s.err == nil {
		s.err = s.hookDenials(ctx)
	}
	out := s.out
	if s.err != nil {
		return &out, s.err
	}
	if s.spent != nil {
		return &out, s.spent
	}
	if s.denied != nil && out.StopReason == StopDenied {
		return &out, s.denied
	}
	res := s.result
	switch {
	case res == nil:
		return &out, &ProviderError{Provider: claudeCodeProvider,
			Message: fmt.Sprintf("Claude Code printed no result record (%d records read)%s", s.records, tail)}
	case res.Subtype == "error_max_turns" || res.TerminalReason == "max_turns":
		out.StopReason = StopTurnLimit
		return &out, fmt.Errorf("%w: Claude Code stopped after %d turns", ErrTurnLimit, out.Turns)
	case res.IsError || res.Subtype != "success":
		reason := res.Result
		if reason == "" {
			reason = strings.Join(res.Errors, "; ")
		}
		return &out, &ProviderError{Provider: claudeCodeProvider, Message: fmt.Sprintf("Claude Code reported an error (%s, %s): %s",
			res.Subtype, res.TerminalReason, capText(reason, 500)), Retryable: res.TerminalReason == "api_error"}
	}
	return &out, nil
}
