package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
)

// replayClaude feeds a recorded stream-json file through the adapter's
// reader, as RunCLI does line by line.
func replayClaude(t *testing.T, file string, tools []string, onDenial string) (*recorder, *Outcome, error, *DeniedError) {
	t.Helper()
	grant, err := assets.ClaudeCodeGrant(tools, nil)
	require.NoError(t, err)
	rec := &recorder{}
	var stopped *DeniedError
	s := newClaudeStream(&CLIConfig{Attempt: 1, Emitter: rec, OnDenial: onDenial}, grant, func(d *DeniedError) { stopped = d })
	feed(s, cliRecording(t, file))
	out, err := s.outcome(context.Background(), "")
	return rec, out, err, stopped
}

func TestClaudeStreamRecordsTurnsAndCalls(t *testing.T) {
	rec, out, err, stopped := replayClaude(t, "claude-write-allowed.jsonl", []string{"fs.write"}, "")
	require.NoError(t, err)
	assert.Nil(t, stopped)
	assert.Equal(t, []string{events.AgentTurn, events.ToolCalled, events.AgentTurn}, rec.types)
	turn := rec.payloads[0].(events.AgentTurnData)
	assert.Equal(t, 1, turn.Turn)
	assert.Equal(t, []string{"Write"}, turn.ToolUses)
	assert.Equal(t, StopToolUse, turn.StopReason)
	call := rec.payloads[1].(events.ToolCalledData)
	assert.Equal(t, "fs.write", call.Name)
	assert.Equal(t, "Write", call.AgentTool)
	assert.Equal(t, "toolu_001_1", call.ToolUseID)
	assert.Empty(t, call.Error)
	assert.Equal(t, "done", rec.payloads[2].(events.AgentTurnData).Text)
	assert.Equal(t, "done", out.FinalMessage)
	assert.Equal(t, 2, out.Turns)
	assert.Equal(t, 1, out.ToolCalls)
	assert.Equal(t, "claude-orbit-test", out.Model)
	assert.Equal(t, int64(200), out.Usage.InputTokens, "usage is the result's total")
	assert.InDelta(t, 0.0016, out.CostUSD, 1e-9)
}

func TestClaudeStreamDenials(t *testing.T) {
	for _, file := range []string{"claude-write-denied-default.jsonl", "claude-write-denied-dontAsk.jsonl"} {
		t.Run(file, func(t *testing.T) {
			rec, out, err, stopped := replayClaude(t, file, []string{"fs.read"}, "")
			var denied *DeniedError
			require.ErrorAs(t, err, &denied)
			assert.Equal(t, "fs.write", denied.Tool)
			assert.Same(t, denied, stopped, "the agent is stopped at the denial")
			assert.Equal(t, StopDenied, out.StopReason)
			// Denied once, though the record, the result and the tool list all
			// say so.
			assert.Equal(t, []string{events.AgentTurn, events.ToolDenied, events.AgentTurn}, rec.types)
			d := rec.payloads[1].(events.ToolDeniedData)
			assert.Equal(t, "fs.write", d.Name)
			assert.Equal(t, "Write", d.AgentTool)
			assert.Equal(t, OnDenialTerminate, d.OnDenial)
			assert.NotEmpty(t, d.Reason)
		})
	}
	t.Run("continue", func(t *testing.T) {
		rec, out, err, stopped := replayClaude(t, "claude-write-denied-dontAsk.jsonl", []string{"fs.read", "fs.write"}, OnDenialContinue)
		require.NoError(t, err)
		assert.Nil(t, stopped)
		assert.Equal(t, "done", out.FinalMessage)
		assert.Equal(t, OnDenialContinue, rec.payloads[1].(events.ToolDeniedData).OnDenial)
	})
}

// TestClaudeStreamOneMessageManyRecords: the three calls of one message
// come as three records with tool results between them; they are one turn,
// recorded before what its calls did.
func TestClaudeStreamOneMessageManyRecords(t *testing.T) {
	rec, out, err, _ := replayClaude(t, "claude-write-deny-rule.jsonl", []string{"fs.write"}, OnDenialContinue)
	require.NoError(t, err)
	assert.Equal(t, []string{events.AgentTurn, events.ToolDenied, events.ToolDenied, events.ToolCalled, events.AgentTurn}, rec.types)
	turn := rec.payloads[0].(events.AgentTurnData)
	assert.Equal(t, []string{"Write", "Write", "Write"}, turn.ToolUses)
	assert.Equal(t, 1, turn.Turn)
	for _, p := range rec.payloads[1:3] {
		d := p.(events.ToolDeniedData)
		assert.Equal(t, 1, d.Turn)
		assert.Equal(t, "fs.write", d.Name)
	}
	assert.Contains(t, rec.payloads[1].(events.ToolDeniedData).Reason, "denied by your permission settings")
	assert.Equal(t, 1, rec.payloads[3].(events.ToolCalledData).Turn)
	assert.Equal(t, 2, rec.payloads[4].(events.AgentTurnData).Turn)
	assert.Equal(t, 2, out.Turns)
	assert.Equal(t, 1, out.ToolCalls)
}

func TestClaudeStreamErrorResult(t *testing.T) {
	_, _, err, _ := replayClaude(t, "claude-api-error.jsonl", nil, "")
	var perr *ProviderError
	require.ErrorAs(t, err, &perr)
	assert.True(t, perr.Retryable, "an API error may pass")
	assert.Contains(t, perr.Message, "API Error: 500")
	assert.Contains(t, perr.Message, "scripted outage")
}

func TestClaudeStreamWithoutResult(t *testing.T) {
	grant, _ := assets.ClaudeCodeGrant(nil, nil)
	s := newClaudeStream(&CLIConfig{Emitter: &recorder{}}, grant, func(*DeniedError) {})
	s.line(context.Background(), []byte(`{"type":"system","subtype":"init","model":"m"}`))
	s.line(context.Background(), []byte(`{"type":"assistant","message":{"id":"msg_1","content":[{"type":"text","text":"hal`))
	_, err := s.outcome(context.Background(), ": killed")
	var perr *ProviderError
	require.ErrorAs(t, err, &perr)
	assert.False(t, perr.Retryable)
	assert.Equal(t, "claude_code: Claude Code printed no result record (1 records read): killed", perr.Error())
}

// TestClaudeStreamTurnUsageIsEachMessagesFinal: a turn's usage is its
// message's as the message_delta event left it (the output tokens the
// server sent), not the assistant record's start; the turns add up to the
// result's total.
func TestClaudeStreamTurnUsageIsEachMessagesFinal(t *testing.T) {
	rec, out, err, _ := replayClaude(t, "claude-partial-usage.jsonl", []string{"fs.write"}, "")
	require.NoError(t, err)
	assert.Equal(t, []string{events.AgentTurn, events.ToolCalled, events.AgentTurn}, rec.types)
	first, second := rec.payloads[0].(events.AgentTurnData), rec.payloads[2].(events.AgentTurnData)
	assert.Equal(t, events.TokenUsage{InputTokens: 300, OutputTokens: 37}, first.Usage)
	assert.Equal(t, events.TokenUsage{InputTokens: 400, OutputTokens: 53}, second.Usage)
	assert.True(t, out.UsageInTurns)
	assert.Equal(t, Usage{InputTokens: 700, OutputTokens: 90}, out.Usage)
}

// TestClaudeStreamStopsWhenAMessagesFinalUsageSpendsTheBudget: the output
// tokens of the message_delta event count against the run's budget at
// once, before the next record.
func TestClaudeStreamStopsWhenAMessagesFinalUsageSpendsTheBudget(t *testing.T) {
	data := cliRecording(t, "claude-partial-usage.jsonl")
	grant, err := assets.ClaudeCodeGrant([]string{"fs.write"}, nil)
	require.NoError(t, err)
	s := newClaudeStream(&CLIConfig{Attempt: 1, Emitter: &recorder{}, Budget: &Budget{MaxTokens: 337}}, grant, func(*DeniedError) {})
	var halted error
	s.halt = func(err error) { halted = err }
	for _, line := range bytes.Split(data, []byte("\n")) {
		s.line(context.Background(), bytes.TrimSpace(line))
		if halted != nil {
			assert.Contains(t, string(line), `"message_delta"`, "the first message's start is 301 tokens, its end 337")
			break
		}
	}
	require.ErrorIs(t, halted, ErrBudgetExhausted)
}

// TestClaudeCodeHookSettingsNameTheToken: Claude Code's hook settings
// name the variable that holds the token, in the Authorization header
// and in allowedEnvVars (without which Claude Code sends the header
// empty), and hold no token: the URL is the bare endpoint.
func TestClaudeCodeHookSettingsNameTheToken(t *testing.T) {
	var s struct {
		Hooks struct {
			PreToolUse []struct {
				Hooks []struct {
					Type, URL, OnFailure string
					Headers              map[string]string
					AllowedEnvVars       []string
				}
			}
		}
	}
	require.NoError(t, json.Unmarshal([]byte(claudeCodeHookSettings("http://127.0.0.1:1/pre-tool")), &s))
	require.Len(t, s.Hooks.PreToolUse, 1)
	require.Len(t, s.Hooks.PreToolUse[0].Hooks, 1)
	h := s.Hooks.PreToolUse[0].Hooks[0]
	assert.Equal(t, "http", h.Type)
	assert.Equal(t, "http://127.0.0.1:1/pre-tool", h.URL)
	assert.Equal(t, "block", h.OnFailure)
	assert.Equal(t, map[string]string{"Authorization": "Bearer $ORBIT_HOOK_TOKEN"}, h.Headers)
	assert.Equal(t, []string{EnvHookToken}, h.AllowedEnvVars)
}

func TestClaudeCodeArgs(t *testing.T) {
	grant, err := assets.ClaudeCodeGrant([]string{"fs.read", "shell.exec"}, []string{"git"})
	require.NoError(t, err)
	cfg := &CLIConfig{Spec: assets.ExecutorSpec{Args: []string{"--debug-to-stderr"}}, MaxTurns: 7,
		Envelope: Envelope{Model: "claude-x", Instruction: "-- be careful", Prompt: "not an argument"}}
	assert.Equal(t, []string{"--debug-to-stderr", "-p", "--output-format=stream-json", "--verbose", "--include-partial-messages", "--no-session-persistence",
		"--setting-sources=", "--settings=" + claudeCodeHookSettings("http://hook"), "--permission-mode=dontAsk", "--tools=Bash,Read", "--allowedTools=Read(./**),Bash(git:*)",
		"--disallowedTools=Read(./.git/**),Read(./.orbit/**),Edit(./.git/**),Edit(./.orbit/**)", "--model=claude-x", "--append-system-prompt=-- be careful", "--max-turns=7", "--strict-mcp-config"}, claudeCodeArgs(cfg, grant, "http://hook"))

	none, err := assets.ClaudeCodeGrant(nil, nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"-p", "--output-format=stream-json", "--verbose", "--include-partial-messages", "--no-session-persistence",
		"--setting-sources=", "--settings=" + claudeCodeHookSettings("http://hook"), "--permission-mode=dontAsk", "--tools=",
		"--disallowedTools=Read(./.git/**),Read(./.orbit/**),Edit(./.git/**),Edit(./.orbit/**)", "--strict-mcp-config"},
		claudeCodeArgs(&CLIConfig{}, none, "http://hook"), "no tools offered, nothing allowed, no MCP server")

	// A session continued is forked from the one named, and kept.
	args := claudeCodeArgs(&CLIConfig{Resume: "sess-1"}, none, "http://hook")
	assert.Contains(t, args, "--resume=sess-1")
	assert.Contains(t, args, "--fork-session")
	assert.NotContains(t, args, "--no-session-persistence")
	assert.NotContains(t, claudeCodeArgs(&CLIConfig{Persist: true}, none, "http://hook"), "--no-session-persistence")

	// Executor args that name the settings files to load choose for
	// themselves.
	args = claudeCodeArgs(&CLIConfig{Spec: assets.ExecutorSpec{Args: []string{"--setting-sources=user"}}}, none, "http://hook")
	assert.Contains(t, args, "--setting-sources=user")
	assert.NotContains(t, args, "--setting-sources=")
}

// FuzzClaudeStream: whatever Claude Code prints, the reader neither panics
// nor counts a call it did not record.
func FuzzClaudeStream(f *testing.F) {
	fuzzCLIStream(f, "claude-*.jsonl", []string{
		`{"type":"system","subtype":"permission_denied","tool_name":"Bash","tool_use_id":"x","message":{}}`,
		`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"nobody","content":[{"text":1}]}]}}`,
	}, func(rec *recorder) cliStream {
		grant, _ := assets.ClaudeCodeGrant([]string{"fs.read", "fs.write", "shell.exec"}, []string{"git"})
		return newClaudeStream(&CLIConfig{Emitter: rec, OnDenial: OnDenialContinue}, grant, func(*DeniedError) {})
	})
}

// TestClaudeCodeDecision: what Claude Code's PreToolUse hook refuses
// before the tool runs: a tool outside the allowlist, a write the
// profile refuses (outside its write globs, under .git/ or .orbit/,
// outside the workspace, with no path), and any call once a terminal verb
// has closed the session; the answer --json-schema asks for passes.
func TestClaudeCodeDecision(t *testing.T) {
	ws := t.TempDir()
	writes, err := assets.ClaudeCodeGrant([]string{"fs.read", "fs.write", "fs.edit"}, nil)
	require.NoError(t, err)
	reads, err := assets.ClaudeCodeGrant([]string{"fs.read"}, nil)
	require.NoError(t, err)
	docs := FSProfile{Name: "docs_writer", Read: []string{"**"}, Write: []string{"docs/**"}}
	stop := make(chan struct{})
	close(stop)
	write := func(path string) string { return `{"file_path":"` + path + `","content":"x"}` }
	for name, tc := range map[string]struct {
		cfg    *CLIConfig
		grant  assets.ClaudeCodeGrantData
		tool   string
		input  string
		reason string
	}{
		"a read":                          {&CLIConfig{}, reads, "Read", `{"file_path":"a.txt"}`, ""},
		"a write the profile allows":      {&CLIConfig{Profile: &docs}, writes, "Write", write("docs/a.md"), ""},
		"an edit outside its write globs": {&CLIConfig{Profile: &docs}, writes, "Edit", write(filepath.Join(ws, "src/a.go")), `not in fsProfile "docs_writer" write globs [docs/**]`},
		"a write under .git":              {&CLIConfig{}, writes, "Write", write(".git/config"), ".git/ is never writable"},
		"a write under .orbit":            {&CLIConfig{}, writes, "Write", write(".orbit/config.yaml"), ".orbit/ is never writable"},
		"a write outside the workspace":   {&CLIConfig{}, writes, "Write", write("/etc/passwd"), "outside the workspace"},
		"a write with no path":            {&CLIConfig{}, writes, "Write", `{"content":"x"}`, "no file_path in the call"},
		"a tool outside the allowlist":    {&CLIConfig{}, reads, "Write", write("a.txt"), "not in the allowlist: Orbit granted Claude Code no Write"},
		"a tool Orbit has no name for":    {&CLIConfig{}, writes, "WebFetch", `{"url":"http://example.com"}`, "not in the allowlist: Orbit granted Claude Code no WebFetch"},
		"the structured answer":           {&CLIConfig{ResponseSchema: `{"type":"object"}`}, reads, "StructuredOutput", `{}`, ""},
		"StructuredOutput unasked":        {&CLIConfig{}, reads, "StructuredOutput", `{}`, "not in the allowlist: Orbit granted Claude Code no StructuredOutput"},
		"anything after a terminal verb":  {&CLIConfig{Stop: stop}, reads, "Read", `{"file_path":"a.txt"}`, closedByVerb},
	} {
		t.Run(name, func(t *testing.T) {
			tc.cfg.Workspace = ws
			got := claudeCodeDecision(tc.cfg, tc.grant)(hookRequest{ToolName: tc.tool, ToolInput: json.RawMessage(tc.input), ToolUseID: "c"})
			if tc.reason == "" {
				assert.Empty(t, got)
				return
			}
			assert.Equal(t, tc.reason, got)
		})
	}
}
