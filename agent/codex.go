package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
)

// OutputCodex is the codex adapter: Orbit builds Codex's exec command line
// from the agent_loop spec and reads its JSONL events as they come.
const OutputCodex = assets.OutputCodex

// codexProvider names Codex in agent.turn events.
const codexProvider = "codex"

// codexArgs is Codex's command line for one invocation: exec, the
// executor's own args (exec options: a profile, config overrides), then
// JSONL events, no session files, the sandbox the allowlist maps to, the
// workspace, approvals never asked for, none of the tools no Orbit tool
// stands for (web search, sub-agents, goals, image generation), the model
// and the instruction as developer instructions, and the output schema's
// file when an answer is asked for (schema: "" when none is), the hook
// and the MCP servers turned off (extra), and Orbit's MCP server. The
// prompt is read from stdin ("-").
//
// IMPORTANT: --skip-git-repo-check because Orbit, not Codex's trust check,
// decides where the agent works: a step's workspace need not be a git
// repository, and without the flag Codex refuses to start outside one
// (an error no retry mends). approval_policy never means no command waits
// on a question: what the sandbox refuses fails, and the model hears so.
func codexArgs(cfg *CLIConfig, grant assets.CodexGrantData, schema string, extra []string) []string {
	args := append([]string{"exec"}, cfg.Spec.Args...)
	args = append(args, "--json")
	if !cfg.persist() {
		args = append(args, "--ephemeral")
	}
	args = append(args, "--skip-git-repo-check", "--sandbox", grant.Sandbox,
		"-C", cfg.Workspace, "-c", `approval_policy="never"`, "-c", `web_search="disabled"`,
		"--disable", "multi_agent", "--disable", "goals", "--disable", "image_generation")
	if m := cfg.Envelope.Model; m != "" {
		args = append(args, "--model", m)
	}
	if s := cfg.Envelope.Instruction; s != "" {
		args = append(args, "-c", "developer_instructions="+tomlString(s))
	}
	if schema != "" {
		args = append(args, "--output-schema", schema)
	}
	args = append(args, extra...)
	if cfg.MCP != nil {
		args = append(args, cfg.MCP.CodexOverrides...)
	}
	if cfg.Resume != "" {
		// exec's options hold for the thread fork starts.
		args = append(args, "fork", cfg.Resume)
	}
	return append(args, "-")
}

// codexResponseSchema is the output schema of a codex agent's answer: any
// JSON object, written as its entries. Codex sends an output schema in
// strict mode, where every object lists all its properties and allows no
// other, so "any object" cannot be said as {"type":"object"}; an object is
// therefore a list of {key, value} entries, and a value any JSON value
// (an object again as entries), through $defs, which strict mode allows to
// recurse. codexAnswer reads it back.
const codexResponseSchema = `{
  "type": "object",
  "properties": {"entries": {"type": "array", "items": {"$ref": "#/$defs/entry"}}},
  "required": ["entries"],
  "additionalProperties": false,
  "$defs": {
    "entry": {
      "type": "object",
      "properties": {"key": {"type": "string"}, "value": {"$ref": "#/$defs/value"}},
      "required": ["key", "value"],
      "additionalProperties": false
    },
    "value": {
      "anyOf": [
        {"type": "string"},
        {"type": "number"},
        {"type": "boolean"},
        {"type": "null"},
        {"type": "array", "items": {"$ref": "#/$defs/value"}},
        {
          "type": "object",
          "properties": {"entries": {"type": "array", "items": {"$ref": "#/$defs/entry"}}},
          "required": ["entries"],
          "additionalProperties": false
        }
      ]
    }
  }
}`

// codexAnswer reads a final message given in codexResponseSchema as the
// object it stands for.
func codexAnswer(msg string) (map[string]any, error) {
	var v any
	if err := json.Unmarshal([]byte(msg), &v); err != nil {
		return nil, err
	}
	obj, ok := codexEntries(v)
	if !ok {
		return nil, errors.New(`not an object of {"entries": [{"key", "value"}, …]}`)
	}
	return obj, nil
}

// codexEntries is the object v's entries stand for; ok is false when v is
// not an object given as entries.
func codexEntries(v any) (map[string]any, bool) {
	m, ok := v.(map[string]any)
	if !ok || len(m) != 1 {
		return nil, false
	}
	list, ok := m["entries"].([]any)
	if !ok {
		return nil, false
	}
	obj := make(map[string]any, len(list))
	for _, e := range list {
		entry, ok := e.(map[string]any)
		key, isKey := entry["key"].(string)
		value, hasValue := entry["value"]
		if !ok || !isKey || !hasValue || len(entry) != 2 {
			return nil, false
		}
		if value, ok = codexValue(value); !ok {
			return nil, false
		}
		obj[key] = value
	}
	return obj, true
}

// codexValue is the JSON value v stands for in codexResponseSchema.
func codexValue(v any) (any, bool) {
	switch v := v.(type) {
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			var ok bool
			if out[i], ok = codexValue(x); !ok {
				return nil, false
			}
		}
		return out, true
	case map[string]any:
		return codexEntries(v)
	}
	return v, true
}

// tomlString quotes s as a TOML basic string: JSON's escapes are all valid
// in one, and a -c value that parses as TOML is taken as written.
func tomlString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// codexStream reads Codex's JSONL events one line at a time and records the
// session as it goes. It is used from one goroutine.
//
// Codex does not show its model requests, only what came of them: agent
// messages, and items for the commands it ran and the files it changed. A
// turn is therefore recorded per tool call (the model response that asked
// for it, with the messages said since the turn before), when the call
// starts, and once more at turn.completed for the final message. The call
// itself is recorded as tool.called when its item completes; the usage
// Codex reports for the whole session is the outcome's.
//
// IMPORTANT: Codex 0.169 was seen leaving out the items of a command that
// ends at once in about half the runs, though 42 runs since left out none
// (testdata/cli/README.md): a command with no item is on no record but
// Codex's own, and its effects (a file written) are seen only in the
// workspace. A call whose item.started came and whose item.completed did
// not is recorded at the end (unfinished).
type codexStream struct {
	cfg   *CLIConfig
	grant assets.CodexGrantData
	// stop ends the agent: with the first denial when on_denial is
	// terminate, or at the turn limit.
	stop func(error)

	turn      int
	text      []string // messages said since the last recorded turn
	items     map[string]*codexCall
	order     []string // the items' ids, as they started
	out       Outcome
	completed bool   // a turn.completed was read
	failure   string // turn.failed's message
	denied    *DeniedError
	limit     error
	records   int
	err       error // the first failure to record; nothing more is recorded after it
}

// codexRecord is one JSONL line, as far as Orbit reads it.
type codexRecord struct {
	Type     string     `json:"type"`
	ThreadID string     `json:"thread_id"` // thread.started
	Item     *codexItem `json:"item"`
	Message  string     `json:"message"` // error
	Error    struct {
		Message string `json:"message"`
	} `json:"error"` // turn.failed
	Usage struct {
		InputTokens       int64 `json:"input_tokens"`
		CachedInputTokens int64 `json:"cached_input_tokens"`
		OutputTokens      int64 `json:"output_tokens"`
	} `json:"usage"` // turn.completed
}

// codexItem is an item of a Codex turn.
type codexItem struct {
	ID   string `json:"id"`
	Type string `json:"type"`
	Text string `json:"text"` // agent_message
	// command_execution
	Command          string `json:"command"`
	AggregatedOutput string `json:"aggregated_output"`
	ExitCode         *int   `json:"exit_code"`
	Status           string `json:"status"`
	// file_change
	Changes []struct {
		Path string `json:"path"`
		Kind string `json:"kind"`
	} `json:"changes"`
	// mcp_tool_call
	Server    string          `json:"server"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	Result    json.RawMessage `json:"result"`
	MCPError  *codexError     `json:"error"`
	// web_search
	Query string `json:"query"`
}

// codexError is an MCP call's error.
type codexError struct {
	Message string `json:"message"`
}

// codexCall is a tool call whose turn is recorded.
type codexCall struct {
	item   *codexItem // as it started
	turn   int
	at     time.Time
	denied bool
	done   bool // its tool.called is recorded
}

func newCodexStream(cfg *CLIConfig, grant assets.CodexGrantData, stop func(error)) *codexStream {
	return &codexStream{cfg: cfg, grant: grant, stop: stop, items: map[string]*codexCall{},
		out: Outcome{StopReason: StopEndTurn, Model: cfg.Envelope.Model}}
}

// line reads one line of stdout. A line that is not a JSON record is left
// to the cli.output record.
func (s *codexStream) line(ctx context.Context, line []byte) {
	if s.err != nil {
		return
	}
	var rec codexRecord
	if json.Unmarshal(line, &rec) != nil || rec.Type == "" {
		return
	}
	s.records++
	switch rec.Type {
	case "thread.started":
		if s.cfg.persist() {
			s.out.CLISession = rec.ThreadID
		}
	case "item.started":
		if rec.Item != nil && rec.Item.tool() {
			s.err = s.start(ctx, rec.Item)
		}
	case "item.completed":
		if rec.Item == nil {
			return
		}
		switch {
		case rec.Item.Type == "agent_message":
			s.text = append(s.text, rec.Item.Text)
			s.out.FinalMessage = rec.Item.Text
		case rec.Item.tool():
			if s.err = s.start(ctx, rec.Item); s.err == nil {
				s.err = s.complete(ctx, rec.Item)
			}
		}
	case "turn.completed":
		// An error before it (a reconnect) was one Codex recovered from.
		s.completed, s.failure = true, ""
		s.out.Usage = s.out.Usage.Add(Usage{InputTokens: rec.Usage.InputTokens, OutputTokens: rec.Usage.OutputTokens,
			CacheReadTokens: rec.Usage.CachedInputTokens})
		s.err = s.recordTurn(ctx, nil)
	case "turn.failed":
		s.failure = rec.Error.Message
	}
}

// tool reports whether the item is a call of a tool.
func (it *codexItem) tool() bool {
	switch it.Type {
	case "agent_message", "reasoning", "todo_list", "error":
		return false
	}
	return true
}

// agentTool is the item's name as Codex's: its type, and for an MCP call
// the server and tool.
func (it *codexItem) agentTool() string {
	if it.Type == "mcp_tool_call" {
		return "mcp:" + it.Server + "/" + it.Tool
	}
	return it.Type
}

// orbitName is the Orbit tool the item stands for, or "" when it stands for
// none. A change of several files of several kinds is an fs.edit; a call of
// an MCP tool stands for what the session's MCP server maps it to (mcp: nil
// when it has none).
func (it *codexItem) orbitName(mcp *CLIMCP) string {
	if it.Type == "mcp_tool_call" {
		if mcp == nil {
			return ""
		}
		return mcp.Tools[it.agentTool()]
	}
	if it.Type != "file_change" {
		return assets.CodexOrbitTool(it.Type, "")
	}
	kind := ""
	for _, c := range it.Changes {
		if kind != "" && c.Kind != kind {
			return assets.CodexOrbitTool(it.Type, "update")
		}
		kind = c.Kind
	}
	return assets.CodexOrbitTool(it.Type, kind)
}

// input is what the item was asked to do, for the digest of tool.called.
func (it *codexItem) input() []byte {
	switch it.Type {
	case "command_execution":
		return []byte(it.Command)
	case "file_change":
		b, _ := json.Marshal(it.Changes)
		return b
	case "web_search":
		return []byte(it.Query)
	case "mcp_tool_call":
		return it.Arguments
	}
	return nil
}

// output is what came of the item, for the result of tool.called.
func (it *codexItem) output() string {
	if it.Type == "mcp_tool_call" {
		if it.MCPError != nil {
			return it.MCPError.Message
		}
		if len(it.Result) == 0 || string(it.Result) == "null" {
			return ""
		}
		return string(it.Result)
	}
	return it.AggregatedOutput
}

// start records the turn that asked for a call, once per item, and refuses
// a call of a tool the allowlist does not grant. At the turn limit the
// agent is stopped: it is still calling tools.
func (s *codexStream) start(ctx context.Context, it *codexItem) error {
	if s.items[it.ID] != nil {
		return nil
	}
	if err := s.recordTurn(ctx, it); err != nil {
		return err
	}
	s.items[it.ID] = &codexCall{item: it, turn: s.turn, at: time.Now()}
	s.order = append(s.order, it.ID)
	if s.cfg.MaxTurns > 0 && s.turn > s.cfg.MaxTurns && s.limit == nil {
		s.limit = fmt.Errorf("%w: Codex was still calling tools after %d turns", ErrTurnLimit, s.cfg.MaxTurns)
		s.out.StopReason = StopTurnLimit
		s.stop(s.limit)
	}
	name := it.orbitName(s.cfg.MCP)
	switch {
	case name == "":
		return s.denial(ctx, it, "not in the allowlist: Orbit grants Codex no "+it.Type)
	case it.Type == "file_change" && !s.grant.Writes:
		return s.denial(ctx, it, "not in the allowlist: no tool that writes was granted (Codex's sandbox is read-only)")
	}
	return nil
}

// recordTurn records the turn that asked for it (it: nil for the end of the
// session), with the messages said since the turn before.
//
// IMPORTANT: a turn carries no usage. Codex reports usage for the session
// only, and the session's usage is on its cli.invocation.finished, which
// orbit metrics adds to the model's as it adds the turns': on a turn too,
// it would be counted twice.
func (s *codexStream) recordTurn(ctx context.Context, it *codexItem) error {
	if it == nil && s.turn > 0 && len(s.text) == 0 {
		return nil
	}
	s.turn++
	s.out.Turns = s.turn
	data := events.AgentTurnData{Attempt: s.cfg.Attempt, Turn: s.turn, Provider: codexProvider, Model: s.cfg.Envelope.Model,
		StopReason: StopEndTurn}
	if it != nil {
		data.StopReason, data.ToolUses = StopToolUse, []string{it.agentTool()}
	}
	text := strings.Join(s.text, "\n")
	s.text = nil
	if len(text) > textCap {
		ref, err := s.cfg.Emitter.PutBlob(ctx, []byte(text))
		if err != nil {
			return err
		}
		data.Response = &ref
	}
	data.Text = capText(text, textCap)
	return s.cfg.Emitter.Emit(ctx, events.AgentTurn, data)
}

// complete records a finished call: tool.called, or tool.denied when Codex
// declined it.
func (s *codexStream) complete(ctx context.Context, it *codexItem) error {
	c := s.items[it.ID]
	if c.denied || c.done {
		return nil
	}
	c.done = true
	if it.Status == "declined" {
		return s.denial(ctx, it, "declined by Codex")
	}
	in, out := it.input(), it.output()
	sum := sha256.Sum256(in)
	data := events.ToolCalledData{
		Attempt: s.cfg.Attempt, Turn: c.turn, ToolUseID: it.ID, Name: it.orbitName(s.cfg.MCP), AgentTool: it.agentTool(),
		InputDigest: "sha256-" + hex.EncodeToString(sum[:]), InputSize: len(in),
		ResultSize: len(out), DurationMS: time.Since(c.at).Milliseconds(),
	}
	switch {
	case it.Status == "failed" && it.ExitCode != nil:
		data.Error = capText(fmt.Sprintf("exit code %d: %s", *it.ExitCode, out), textCap)
	case it.Status == "failed":
		data.Error = capText("failed: "+out, textCap)
	}
	if len(out) > blobCap {
		ref, err := s.cfg.Emitter.PutBlob(ctx, []byte(out))
		if err != nil {
			return err
		}
		data.Result = &ref
	}
	if err := s.cfg.Emitter.Emit(ctx, events.ToolCalled, data); err != nil {
		return err
	}
	s.out.ToolCalls++
	return nil
}

// denial records a refused call, once, and stops the agent when on_denial
// is terminate.
func (s *codexStream) denial(ctx context.Context, it *codexItem, reason string) error {
	c := s.items[it.ID]
	if c.denied {
		return nil
	}
	c.denied = true
	onDenial := s.cfg.OnDenial
	if onDenial == "" {
		onDenial = OnDenialTerminate
	}
	name := it.orbitName(s.cfg.MCP)
	if name == "" {
		name = it.agentTool()
	}
	if err := s.cfg.Emitter.Emit(ctx, events.ToolDenied, events.ToolDeniedData{
		Attempt: s.cfg.Attempt, Turn: c.turn, ToolUseID: it.ID, Name: name, AgentTool: it.agentTool(),
		Reason: capText(reason, textCap), OnDenial: onDenial,
	}); err != nil {
		return err
	}
	if s.denied == nil {
		s.denied = &DeniedError{Tool: name, Reason: capText(reason, 200)}
		if onDenial == OnDenialTerminate {
			s.out.StopReason = StopDenied
			s.stop(s.denied)
		}
	}
	return nil
}

// hookDenied records a call the PreToolUse hook refused, before it ran:
// Codex prints no item for it, so the hook's record is the only one. The
// call is a turn (the model response that asked for it) and a tool.denied
// with the hook's reason. It reports whether the agent is being stopped for
// it: under on_denial terminate (Codex takes no continue: false from a
// hook, so it is stopped), or for a call once a terminal verb has closed
// the session (grace, when watched, records it as acting after the stop).
func (s *codexStream) hookDenied(ctx context.Context, req hookRequest, reason string, grace *stopGrace) bool {
	if s.err != nil {
		return true
	}
	it := codexHookItem(req)
	if s.items[it.ID] == nil {
		if s.err = s.recordTurn(ctx, it); s.err != nil {
			return true
		}
		s.items[it.ID] = &codexCall{item: it, turn: s.turn, at: time.Now()}
		s.order = append(s.order, it.ID)
	}
	if reason == closedByVerb && grace != nil {
		s.items[it.ID].denied = true
		if grace.denied == nil {
			name := it.orbitName(s.cfg.MCP)
			if name == "" {
				name = it.agentTool()
			}
			grace.halt(ErrActedAfterStop)
			grace.record(ctx, it.ID, name, it.agentTool(), closedByVerb)
		}
		return true
	}
	s.err = s.denial(ctx, it, reason)
	return s.err != nil || closed(s.cfg.Stop) || s.cfg.onDenial() == OnDenialTerminate
}

// unfinished records the calls that started and never completed: the
// session ended while they ran (a terminal verb, whose MCP call Codex is
// stopped in the middle of, or a kill). Each is a tool.called whose error
// says so, in the order the calls started.
func (s *codexStream) unfinished(ctx context.Context) error {
	for _, id := range s.order {
		c := s.items[id]
		if c.done || c.denied {
			continue
		}
		const why = "the session ended before the call returned"
		it := *c.item
		it.Status, it.ExitCode, it.AggregatedOutput, it.MCPError = "failed", nil, why, &codexError{Message: why}
		if err := s.complete(ctx, &it); err != nil {
			return err
		}
	}
	return nil
}

// outcome is how the session ended, and the error that fails the step when
// it did not end well: a denial under on_denial terminate, the turn limit,
// a failed turn (Codex's words), or no completed turn at all (then tail,
// the end of what Codex printed, says what happened).
func (s *codexStream) outcome(ctx context.Context, tail string) (*Outcome, error) {
	if s.err == nil {
		s.err = s.unfinished(ctx)
	}
	out := s.out
	switch {
	case s.err != nil:
		return &out, s.err
	case s.denied != nil && out.StopReason == StopDenied:
		return &out, s.denied
	case s.limit != nil:
		return &out, s.limit
	case s.failure != "":
		return &out, &ProviderError{Provider: codexProvider, Message: "Codex's turn failed: " + capText(s.failure, 500), Retryable: true}
	case !s.completed:
		return &out, &ProviderError{Provider: codexProvider,
			Message: fmt.Sprintf("Codex printed no turn.completed (%d records read)%s", s.records, tail)}
	case s.cfg.ResponseSchema != "":
		answer, err := codexAnswer(out.FinalMessage)
		if err != nil {
			return &out, &ProviderError{Provider: codexProvider, Retryable: true,
				Message: "Codex's final message is not an answer in its output schema: " + err.Error()}
		}
		out.Response = answer
	}
	return &out, nil
}
