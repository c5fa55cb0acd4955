package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/agent"
	"github.com/orbitrun/orbit/internal/testkit"
)

// wireEnv returns an Env func that sees only vars.
func wireEnv(vars map[string]string) func(string) string {
	return func(name string) string { return vars[name] }
}

// wireJSON re-encodes a decoded value, for comparing shapes.
func wireJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

const fakeAnthropicKey = "sk-ant-test-FAKE-KEY-0123456789"

var wireTools = []agent.ToolSpec{
	{
		Name:        "fs.read",
		Description: "Read a file of the workspace.",
		InputSchema: json.RawMessage(`{"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"], "additionalProperties": false}`),
	},
	{
		Name:        "fs.write",
		Description: "Write a file of the workspace.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"}},"required":["path","content"]}`),
	},
}

func newClaude(t *testing.T, ws *testkit.WireServer) agent.Provider {
	t.Helper()
	p, err := agent.NewProvider(agent.ProviderOptions{
		Name:    agent.ProviderClaude,
		BaseURL: ws.URL(),
		APIKey:  fakeAnthropicKey,
		Env:     wireEnv(nil),
	})
	require.NoError(t, err)
	return p
}

func wireUser(text string) agent.Message {
	return agent.Message{Role: agent.RoleUser, Content: []agent.Block{{Kind: agent.BlockText, Text: text}}}
}

const claudeTextReply = `{
  "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
  "type": "message",
  "role": "assistant",
  "model": "claude-sonnet-4-5-20250929",
  "content": [{"type": "text", "text": "The file says hello."}],
  "stop_reason": "end_turn",
  "stop_sequence": null,
  "usage": {"input_tokens": 2095, "output_tokens": 503, "cache_creation_input_tokens": 1800, "cache_read_input_tokens": 0}
}`

const claudeToolUseReply = `{
  "id": "msg_01Aq9w938a90dw8q",
  "type": "message",
  "role": "assistant",
  "model": "claude-sonnet-4-5-20250929",
  "content": [
    {"type": "text", "text": "I will read a.txt."},
    {"type": "tool_use", "id": "toolu_01A09q90qw90lq917835lq9", "name": "fs_read", "input": {"path": "a.txt"}}
  ],
  "stop_reason": "tool_use",
  "stop_sequence": null,
  "usage": {"input_tokens": 12, "output_tokens": 48, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 1800}
}`

func TestClaudeTextTurn(t *testing.T) {
	t.Parallel()
	ws := testkit.NewWireServer(t, testkit.WireReply{Body: claudeTextReply})
	p := newClaude(t, ws)
	assert.Equal(t, "claude", p.Name())

	resp, err := p.Complete(context.Background(), &agent.Request{
		Model:    "claude-sonnet-4-5",
		System:   "You are a careful engineer.",
		Messages: []agent.Message{wireUser("What does a.txt say?")},
		Tools:    wireTools,
	})
	require.NoError(t, err)
	assert.Equal(t, &agent.Response{
		Content:    []agent.Block{{Kind: agent.BlockText, Text: "The file says hello."}},
		StopReason: agent.StopEndTurn,
		Usage:      agent.Usage{InputTokens: 2095, OutputTokens: 503, CacheWriteTokens: 1800},
		Model:      "claude-sonnet-4-5-20250929",
	}, resp)

	req := ws.Only()
	assert.Equal(t, http.MethodPost, req.Method)
	assert.Equal(t, "/v1/messages", req.Path)
	assert.Equal(t, fakeAnthropicKey, req.Header.Get("X-Api-Key"), "the key goes in x-api-key")
	assert.Empty(t, req.Header.Get("Authorization"))
	assert.NotEmpty(t, req.Header.Get("Anthropic-Version"))
	assert.Equal(t, "claude-sonnet-4-5", req.Body["model"])
	assert.EqualValues(t, 8192, req.Body["max_tokens"], "the default max_tokens")
	assert.NotContains(t, req.Body, "stream")

	// The system prompt is one text block, cached.
	assert.JSONEq(t, `[{"type":"text","text":"You are a careful engineer.","cache_control":{"type":"ephemeral"}}]`, wireJSON(t, req.Body["system"]))
	// Tools keep their schema; their names are what the API accepts; the
	// last one closes the cached prefix.
	assert.JSONEq(t, `[
	  {"name":"fs_read","description":"Read a file of the workspace.",
	   "input_schema":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"],"additionalProperties":false}},
	  {"name":"fs_write","description":"Write a file of the workspace.",
	   "input_schema":{"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"}},"required":["path","content"]},
	   "cache_control":{"type":"ephemeral"}}
	]`, wireJSON(t, req.Body["tools"]))
	assert.JSONEq(t, `[{"role":"user","content":[{"type":"text","text":"What does a.txt say?"}]}]`, wireJSON(t, req.Body["messages"]))
}

func TestClaudeToolUseRoundTrip(t *testing.T) {
	t.Parallel()
	ws := testkit.NewWireServer(t, testkit.WireReply{Body: claudeToolUseReply}, testkit.WireReply{Body: claudeTextReply})
	p := newClaude(t, ws)
	req := &agent.Request{
		Model:     "claude-sonnet-4-5",
		System:    "You are a careful engineer.",
		Messages:  []agent.Message{wireUser("What does a.txt say?")},
		Tools:     wireTools,
		MaxTokens: 1024,
	}

	resp, err := p.Complete(context.Background(), req)
	require.NoError(t, err)
	assert.Equal(t, agent.StopToolUse, resp.StopReason)
	require.Len(t, resp.Content, 2)
	assert.Equal(t, agent.Block{Kind: agent.BlockText, Text: "I will read a.txt."}, resp.Content[0])
	use := resp.Content[1]
	assert.Equal(t, agent.BlockToolUse, use.Kind)
	assert.Equal(t, "toolu_01A09q90qw90lq917835lq9", use.ID)
	assert.Equal(t, "fs.read", use.Name, "the wire name maps back to the tool's")
	assert.JSONEq(t, `{"path":"a.txt"}`, string(use.Input))
	assert.Equal(t, agent.Usage{InputTokens: 12, OutputTokens: 48, CacheReadTokens: 1800}, resp.Usage)

	// The second turn carries the model's turn and the tool's results.
	req.Messages = append(req.Messages,
		agent.Message{Role: agent.RoleAssistant, Content: resp.Content},
		agent.Message{Role: agent.RoleUser, Content: []agent.Block{
			{Kind: agent.BlockToolResult, ToolUseID: use.ID, Text: "hello"},
		}},
	)
	_, err = p.Complete(context.Background(), req)
	require.NoError(t, err)

	reqs := ws.Received()
	require.Len(t, reqs, 2)
	assert.EqualValues(t, 1024, reqs[1].Body["max_tokens"])
	assert.JSONEq(t, `[
	  {"role":"user","content":[{"type":"text","text":"What does a.txt say?"}]},
	  {"role":"assistant","content":[
	    {"type":"text","text":"I will read a.txt."},
	    {"type":"tool_use","id":"toolu_01A09q90qw90lq917835lq9","name":"fs_read","input":{"path":"a.txt"}}]},
	  {"role":"user","content":[
	    {"type":"tool_result","tool_use_id":"toolu_01A09q90qw90lq917835lq9","content":[{"type":"text","text":"hello"}],"is_error":false}]}
	]`, wireJSON(t, reqs[1].Body["messages"]))

	// The cached prefix is byte for byte the same on every turn.
	prefix := func(r testkit.WireRequest) string {
		var body struct{ System, Tools json.RawMessage }
		require.NoError(t, json.Unmarshal(r.Raw, &body))
		return string(body.Tools) + string(body.System)
	}
	assert.Equal(t, prefix(reqs[0]), prefix(reqs[1]))
}

func TestClaudeToolResultError(t *testing.T) {
	t.Parallel()
	ws := testkit.NewWireServer(t, testkit.WireReply{Body: claudeTextReply})
	p := newClaude(t, ws)
	_, err := p.Complete(context.Background(), &agent.Request{
		Model: "claude-sonnet-4-5",
		Messages: []agent.Message{
			wireUser("Read b.txt."),
			{Role: agent.RoleAssistant, Content: []agent.Block{{Kind: agent.BlockToolUse, ID: "toolu_1", Name: "fs.read", Input: json.RawMessage(`{"path":"b.txt"}`)}}},
			{Role: agent.RoleUser, Content: []agent.Block{
				{Kind: agent.BlockToolResult, ToolUseID: "toolu_1", Text: "b.txt: no such file", IsError: true},
				{Kind: agent.BlockText, Text: "Two turns left."},
			}},
		},
	})
	require.NoError(t, err)
	body := ws.Only().Body
	assert.NotContains(t, body, "system", "no system prompt, no system field")
	assert.NotContains(t, body, "tools")
	assert.JSONEq(t, `{"role":"user","content":[
	  {"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"b.txt: no such file"}],"is_error":true},
	  {"type":"text","text":"Two turns left."}]}`, wireJSON(t, body["messages"].([]any)[2]))
}

func TestClaudeStopReasons(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ wire, want string }{
		{"end_turn", agent.StopEndTurn},
		{"stop_sequence", agent.StopEndTurn},
		{"max_tokens", agent.StopMaxTokens},
		{"tool_use", agent.StopToolUse},
		{"refusal", agent.StopEndTurn},
		{"pause_turn", agent.StopEndTurn},
		{"model_context_window_exceeded", agent.StopMaxTokens},
	} {
		t.Run(tc.wire, func(t *testing.T) {
			t.Parallel()
			body := strings.Replace(claudeTextReply, `"stop_reason": "end_turn"`, `"stop_reason": "`+tc.wire+`"`, 1)
			ws := testkit.NewWireServer(t, testkit.WireReply{Body: body})
			resp, err := newClaude(t, ws).Complete(context.Background(), &agent.Request{Model: "m", Messages: []agent.Message{wireUser("hi")}})
			require.NoError(t, err)
			assert.Equal(t, tc.want, resp.StopReason)
		})
	}
}

func TestClaudeErrorStatus(t *testing.T) {
	t.Parallel()
	checkErrorStatuses(t, "claude", claudeTextReply, wireKey{fakeAnthropicKey, "X-Api-Key", fakeAnthropicKey}, newClaude, []statusCase{
		{
			name:      "rate limit",
			reply:     testkit.WireReply{Status: 429, Body: `{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}`},
			message:   "Number of request tokens has exceeded your per-minute rate limit (rate_limit_error)",
			retryable: true,
		},
		{
			name:    "bad request",
			reply:   testkit.WireReply{Status: 400, Body: `{"type":"error","error":{"type":"invalid_request_error","message":"messages: roles must alternate"}}`},
			message: "messages: roles must alternate (invalid_request_error)",
		},
		{
			name:    "bad key echoed",
			reply:   testkit.WireReply{Status: 401, Body: `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key ` + fakeAnthropicKey + `"}}`},
			message: "invalid x-api-key [redacted] (authentication_error)",
		},
		{
			name:      "overloaded",
			reply:     testkit.WireReply{Status: 529, Body: `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`},
			message:   "Overloaded (overloaded_error)",
			retryable: true,
		},
		{
			name:      "gateway",
			reply:     testkit.WireReply{Status: 502, ContentType: "text/html", Body: "<html><body>502 Bad Gateway</body></html>"},
			message:   "<html><body>502 Bad Gateway</body></html>",
			retryable: true,
		},
	})
}

func TestClaudeMalformedBody(t *testing.T) {
	t.Parallel()
	checkMalformed(t, newClaude, fakeAnthropicKey, []malformedCase{
		{"truncated", testkit.WireReply{Body: `{"content": [`}, "claude: malformed response: HTTP 200: "},
		{"not json", testkit.WireReply{ContentType: "text/html", Body: "<html>hello</html>"}, "claude: malformed response: HTTP 200 with text/html, not JSON"},
		{"not a message", testkit.WireReply{Body: `{"ok": true}`}, "claude: malformed response: not a message (no content)"},
		{"content not a list", testkit.WireReply{Body: `{"type":"message","content":"hello","stop_reason":"end_turn"}`}, "claude: malformed response: not a message (no content)"},
		{
			"tool_use without id",
			testkit.WireReply{Body: `{"type":"message","role":"assistant","model":"m","content":[{"type":"tool_use","name":"fs_read","input":{}}],"stop_reason":"tool_use"}`},
			"claude: malformed response: content[0]: tool_use without an id or a name",
		},
	})
}

func TestClaudeTransportFailure(t *testing.T) {
	t.Parallel()
	ws := testkit.NewWireServer(t)
	url := ws.URL()
	ws.Close() // nothing listens any more

	p, err := agent.NewProvider(agent.ProviderOptions{Name: "claude", BaseURL: url, APIKey: fakeAnthropicKey, Env: wireEnv(nil)})
	require.NoError(t, err)
	perr := failedHi(t, p, fakeAnthropicKey)
	assert.Equal(t, 0, perr.Status)
	assert.True(t, perr.Retryable, "a connection failure is worth another try")
	t.Log(perr)
}

func TestClaudeCancelled(t *testing.T) {
	t.Parallel()
	ws := testkit.NewWireServer(t, testkit.WireReply{Body: claudeTextReply})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := newClaude(t, ws).Complete(ctx, &agent.Request{Model: "m", Messages: []agent.Message{wireUser("hi")}})
	require.ErrorIs(t, err, context.Canceled)
	_, isProvider := errors.AsType[*agent.ProviderError](err)
	assert.False(t, isProvider, "a cancelled call is not the provider's failure")
}

func TestClaudeBadRequest(t *testing.T) {
	t.Parallel()
	ws := testkit.NewWireServer(t)
	checkBadRequests(t, newClaude(t, ws), ws, []badRequest{
		{"no model", agent.Request{Messages: []agent.Message{wireUser("hi")}}, "claude: the request names no model"},
		{"unknown role", agent.Request{Model: "m", Messages: []agent.Message{{Role: "system"}}}, `claude: messages[0]: unknown role "system"`},
		{"bad schema", agent.Request{Model: "m", Tools: []agent.ToolSpec{{Name: "x", InputSchema: json.RawMessage(`{"type":"string"}`)}}}, `claude: tool "x": input_schema type must be "object"`},
		{"same wire name", agent.Request{Model: "m", Tools: []agent.ToolSpec{{Name: "fs.read"}, {Name: "fs_read"}}}, `claude: tools "fs.read" and "fs_read" have the same name on the wire ("fs_read")`},
		{"bad input", agent.Request{Model: "m", Messages: []agent.Message{{Role: agent.RoleAssistant, Content: []agent.Block{{Kind: agent.BlockToolUse, ID: "t", Name: "x", Input: json.RawMessage(`{`)}}}}}, `claude: messages[0]: content[0]: tool_use "t": input is not valid JSON`},
	})
}

func TestClaudeEnvFallbacks(t *testing.T) {
	t.Parallel()
	ws := testkit.NewWireServer(t, testkit.WireReply{Body: claudeTextReply}, testkit.WireReply{Body: claudeTextReply})
	other := testkit.NewWireServer(t)

	// Both from the environment.
	saidHi(t, agent.ProviderOptions{Name: "claude", Env: wireEnv(map[string]string{
		"ANTHROPIC_API_KEY":  "sk-ant-from-env",
		"ANTHROPIC_BASE_URL": ws.URL(),
	})})

	// The options win over the environment.
	saidHi(t, agent.ProviderOptions{Name: "claude", APIKey: fakeAnthropicKey, BaseURL: ws.URL(), Env: wireEnv(map[string]string{
		"ANTHROPIC_API_KEY":  "sk-ant-from-env",
		"ANTHROPIC_BASE_URL": other.URL(),
	})})

	reqs := ws.Received()
	require.Len(t, reqs, 2)
	assert.Equal(t, "sk-ant-from-env", reqs[0].Header.Get("X-Api-Key"))
	assert.Equal(t, fakeAnthropicKey, reqs[1].Header.Get("X-Api-Key"))
	assert.Empty(t, other.Received())

	_, err := agent.NewProvider(agent.ProviderOptions{Name: "claude", Env: wireEnv(nil)})
	require.EqualError(t, err, "claude: no API key (set ANTHROPIC_API_KEY)")
	_, err = agent.NewProvider(agent.ProviderOptions{Name: "claude", APIKey: "k", BaseURL: "ftp://example.com", Env: wireEnv(nil)})
	require.EqualError(t, err, `claude: base URL "ftp://example.com": want http(s)://host[/path]`)
}

// The process environment is not consulted when Env is given: the SDK's
// own lookup is off.
func TestClaudeIgnoresProcessEnv(t *testing.T) {
	ws := testkit.NewWireServer(t, testkit.WireReply{Body: claudeTextReply})
	t.Setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:1")
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-process")
	t.Setenv("ANTHROPIC_CUSTOM_HEADERS", "X-Leak: yes")

	saidHi(t, agent.ProviderOptions{Name: "claude", Env: wireEnv(map[string]string{
		"ANTHROPIC_API_KEY":  fakeAnthropicKey,
		"ANTHROPIC_BASE_URL": ws.URL(),
	})})
	req := ws.Only()
	assert.Equal(t, fakeAnthropicKey, req.Header.Get("X-Api-Key"))
	assert.Empty(t, req.Header.Get("X-Leak"))
}

func TestClaudeLargeMaxTokens(t *testing.T) {
	t.Parallel()
	// The SDK refuses non-streaming calls it expects to be long unless the
	// caller sets a timeout; the provider does.
	ws := testkit.NewWireServer(t, testkit.WireReply{Body: claudeTextReply})
	_, err := newClaude(t, ws).Complete(context.Background(), &agent.Request{Model: "claude-opus-4-0", MaxTokens: 64000, Messages: []agent.Message{wireUser("hi")}})
	require.NoError(t, err)
	assert.EqualValues(t, 64000, ws.Only().Body["max_tokens"])
}

func TestNewProviderUnknown(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"", "anthropic", "openai", "Claude"} {
		_, err := agent.NewProvider(agent.ProviderOptions{Name: name, Env: wireEnv(nil)})
		require.ErrorIs(t, err, agent.ErrUnknownProvider)
		assert.EqualError(t, err, `unknown provider "`+name+`" (known: claude, openai_compat, replay)`)
	}
	assert.Equal(t, []string{"claude", "openai_compat", "replay"}, agent.ProviderNames())
}
