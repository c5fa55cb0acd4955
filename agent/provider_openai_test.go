package agent_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/agent"
	"github.com/orbitrun/orbit/internal/testkit"
)

const fakeOpenAIKey = "sk-proj-test-FAKE-KEY-9876543210"

func newOpenAI(t *testing.T, ws *testkit.WireServer, key string) agent.Provider {
	t.Helper()
	p, err := agent.NewProvider(agent.ProviderOptions{
		Name:    agent.ProviderOpenAICompat,
		BaseURL: ws.URL() + "/v1",
		APIKey:  key,
		Env:     wireEnv(nil),
	})
	require.NoError(t, err)
	return p
}

const openAITextReply = `{
  "id": "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT",
  "object": "chat.completion",
  "created": 1741569952,
  "model": "gpt-4.1-2025-04-14",
  "choices": [{
    "index": 0,
    "message": {"role": "assistant", "content": "The file says hello.", "refusal": null, "annotations": []},
    "logprobs": null,
    "finish_reason": "stop"
  }],
  "usage": {
    "prompt_tokens": 2048, "completion_tokens": 12, "total_tokens": 2060,
    "prompt_tokens_details": {"cached_tokens": 1920, "audio_tokens": 0},
    "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0, "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}
  },
  "service_tier": "default",
  "system_fingerprint": "fp_a1102cf978"
}`

const openAIToolCallReply = `{
  "id": "chatcmpl-abc123",
  "object": "chat.completion",
  "created": 1741569953,
  "model": "gpt-4.1-2025-04-14",
  "choices": [{
    "index": 0,
    "message": {
      "role": "assistant",
      "content": null,
      "tool_calls": [{"id": "call_DdmO9pD3xa9XTPNJ32zg2hcA", "type": "function", "function": {"name": "fs_read", "arguments": "{\"path\":\"a.txt\"}"}}],
      "refusal": null,
      "annotations": []
    },
    "logprobs": null,
    "finish_reason": "tool_calls"
  }],
  "usage": {"prompt_tokens": 82, "completion_tokens": 17, "total_tokens": 99}
}`

func TestOpenAITextTurn(t *testing.T) {
	t.Parallel()
	ws := testkit.NewWireServer(t, testkit.WireReply{Body: openAITextReply})
	p := newOpenAI(t, ws, fakeOpenAIKey)
	assert.Equal(t, "openai_compat", p.Name())

	resp, err := p.Complete(context.Background(), &agent.Request{
		Model:     "gpt-4.1",
		System:    "You are a careful engineer.",
		Messages:  []agent.Message{wireUser("What does a.txt say?")},
		Tools:     wireTools,
		MaxTokens: 2048,
	})
	require.NoError(t, err)
	assert.Equal(t, &agent.Response{
		Content:    []agent.Block{{Kind: agent.BlockText, Text: "The file says hello."}},
		StopReason: agent.StopEndTurn,
		// 2048 prompt tokens of which 1920 came from the cache.
		Usage: agent.Usage{InputTokens: 128, OutputTokens: 12, CacheReadTokens: 1920},
		Model: "gpt-4.1-2025-04-14",
	}, resp)

	req := ws.Only()
	assert.Equal(t, http.MethodPost, req.Method)
	assert.Equal(t, "/v1/chat/completions", req.Path)
	assert.Equal(t, "Bearer "+fakeOpenAIKey, req.Header.Get("Authorization"))
	assert.Equal(t, "gpt-4.1", req.Body["model"])
	assert.EqualValues(t, 2048, req.Body["max_completion_tokens"])
	assert.NotContains(t, req.Body, "max_tokens")
	assert.NotContains(t, req.Body, "stream")
	assert.JSONEq(t, `[
	  {"role":"system","content":"You are a careful engineer."},
	  {"role":"user","content":"What does a.txt say?"}
	]`, wireJSON(t, req.Body["messages"]))
	assert.JSONEq(t, `[
	  {"type":"function","function":{"name":"fs_read","description":"Read a file of the workspace.",
	    "parameters":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"],"additionalProperties":false}}},
	  {"type":"function","function":{"name":"fs_write","description":"Write a file of the workspace.",
	    "parameters":{"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"}},"required":["path","content"]}}}
	]`, wireJSON(t, req.Body["tools"]))
}

func TestOpenAIToolUseRoundTrip(t *testing.T) {
	t.Parallel()
	ws := testkit.NewWireServer(t, testkit.WireReply{Body: openAIToolCallReply}, testkit.WireReply{Body: openAITextReply})
	p := newOpenAI(t, ws, fakeOpenAIKey)
	req := &agent.Request{
		Model:    "gpt-4.1",
		System:   "You are a careful engineer.",
		Messages: []agent.Message{wireUser("Read a.txt and b.txt.")},
		Tools:    wireTools,
	}

	resp, err := p.Complete(context.Background(), req)
	require.NoError(t, err)
	assert.Equal(t, agent.StopToolUse, resp.StopReason)
	assert.Equal(t, agent.Usage{InputTokens: 82, OutputTokens: 17}, resp.Usage)
	require.Len(t, resp.Content, 1, "a null content is no text block")
	use := resp.Content[0]
	assert.Equal(t, agent.BlockToolUse, use.Kind)
	assert.Equal(t, "call_DdmO9pD3xa9XTPNJ32zg2hcA", use.ID)
	assert.Equal(t, "fs.read", use.Name, "the wire name maps back to the tool's")
	assert.JSONEq(t, `{"path":"a.txt"}`, string(use.Input))

	// The model's turn, with some text of its own and a second call, and
	// the results of both calls, one of them an error.
	turn := append([]agent.Block{{Kind: agent.BlockText, Text: "Reading both."}}, resp.Content...)
	turn = append(turn, agent.Block{Kind: agent.BlockToolUse, ID: "call_2", Name: "fs.read", Input: json.RawMessage(`{"path":"b.txt"}`)})
	req.Messages = append(req.Messages,
		agent.Message{Role: agent.RoleAssistant, Content: turn},
		agent.Message{Role: agent.RoleUser, Content: []agent.Block{
			{Kind: agent.BlockToolResult, ToolUseID: use.ID, Text: "hello"},
			{Kind: agent.BlockToolResult, ToolUseID: "call_2", Text: "b.txt: no such file", IsError: true},
			{Kind: agent.BlockText, Text: "Two turns left."},
		}},
	)
	_, err = p.Complete(context.Background(), req)
	require.NoError(t, err)

	reqs := ws.Received()
	require.Len(t, reqs, 2)
	assert.JSONEq(t, `[
	  {"role":"system","content":"You are a careful engineer."},
	  {"role":"user","content":"Read a.txt and b.txt."},
	  {"role":"assistant","content":"Reading both.","tool_calls":[
	    {"id":"call_DdmO9pD3xa9XTPNJ32zg2hcA","type":"function","function":{"name":"fs_read","arguments":"{\"path\":\"a.txt\"}"}},
	    {"id":"call_2","type":"function","function":{"name":"fs_read","arguments":"{\"path\":\"b.txt\"}"}}]},
	  {"role":"tool","tool_call_id":"call_DdmO9pD3xa9XTPNJ32zg2hcA","content":"hello"},
	  {"role":"tool","tool_call_id":"call_2","content":"ERROR: b.txt: no such file"},
	  {"role":"user","content":"Two turns left."}
	]`, wireJSON(t, reqs[1].Body["messages"]))

	// The prefix OpenAI caches automatically is the same on every turn.
	prefix := func(r testkit.WireRequest) string {
		var body struct {
			Tools    json.RawMessage
			Messages []json.RawMessage
		}
		require.NoError(t, json.Unmarshal(r.Raw, &body))
		return string(body.Tools) + string(body.Messages[0])
	}
	assert.Equal(t, prefix(reqs[0]), prefix(reqs[1]))
}

func TestOpenAIResponses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		body string
		want agent.Response
	}{
		{
			name: "length",
			body: `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"Once upon"},"finish_reason":"length"}],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}`,
			want: agent.Response{Content: []agent.Block{{Kind: agent.BlockText, Text: "Once upon"}}, StopReason: agent.StopMaxTokens, Usage: agent.Usage{InputTokens: 5, OutputTokens: 2}, Model: "m"},
		},
		{
			// Some local servers say "stop" when the model called tools,
			// and give calls no id.
			name: "stop with tool calls",
			body: `{"id":"c","object":"chat.completion","created":1,"model":"qwen2.5-coder:7b","choices":[{"index":0,"message":{"role":"assistant","content":"","tool_calls":[{"type":"function","function":{"name":"fs_write","arguments":"{\"path\":\"a\",\"content\":\"b\"}"}}]},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}`,
			want: agent.Response{Content: []agent.Block{{Kind: agent.BlockToolUse, ID: "call_0", Name: "fs.write", Input: json.RawMessage(`{"path":"a","content":"b"}`)}}, StopReason: agent.StopToolUse, Usage: agent.Usage{InputTokens: 5, OutputTokens: 2}, Model: "qwen2.5-coder:7b"},
		},
		{
			name: "empty arguments",
			body: `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_9","type":"function","function":{"name":"done","arguments":""}}]},"finish_reason":"tool_calls"}]}`,
			want: agent.Response{Content: []agent.Block{{Kind: agent.BlockToolUse, ID: "call_9", Name: "done", Input: json.RawMessage(`{}`)}}, StopReason: agent.StopToolUse, Model: "m"},
		},
		{
			name: "refusal",
			body: `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":"I can't help with that."},"finish_reason":"stop"}]}`,
			want: agent.Response{Content: []agent.Block{{Kind: agent.BlockText, Text: "I can't help with that."}}, StopReason: agent.StopEndTurn, Model: "m"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ws := testkit.NewWireServer(t, testkit.WireReply{Body: tc.body})
			resp, err := newOpenAI(t, ws, "").Complete(context.Background(), &agent.Request{Model: "m", Messages: []agent.Message{wireUser("hi")}, Tools: wireTools})
			require.NoError(t, err)
			assert.Equal(t, tc.want, *resp)
		})
	}
}

func TestOpenAIErrorStatus(t *testing.T) {
	t.Parallel()
	newProvider := func(t *testing.T, ws *testkit.WireServer) agent.Provider { return newOpenAI(t, ws, fakeOpenAIKey) }
	checkErrorStatuses(t, "openai_compat", openAITextReply, wireKey{fakeOpenAIKey, "Authorization", "Bearer " + fakeOpenAIKey}, newProvider, []statusCase{
		{
			name:      "rate limit",
			reply:     testkit.WireReply{Status: 429, Body: `{"error":{"message":"Rate limit reached for gpt-4.1 on tokens per min (TPM): Limit 30000, Used 29000, Requested 2000.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}`},
			message:   "Rate limit reached for gpt-4.1 on tokens per min (TPM): Limit 30000, Used 29000, Requested 2000. (tokens)",
			retryable: true,
		},
		{
			name:    "bad request",
			reply:   testkit.WireReply{Status: 400, Body: `{"error":{"message":"Invalid 'messages[2].tool_call_id': not found.","type":"invalid_request_error","param":"messages","code":null}}`},
			message: "Invalid 'messages[2].tool_call_id': not found. (invalid_request_error)",
		},
		{
			name:    "bad key echoed",
			reply:   testkit.WireReply{Status: 401, Body: `{"error":{"message":"Incorrect API key provided: ` + fakeOpenAIKey + `.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`},
			message: "Incorrect API key provided: [redacted]. (invalid_request_error)",
		},
		{
			name:    "ollama style",
			reply:   testkit.WireReply{Status: 404, Body: `{"error":"model \"llama9\" not found, try pulling it first"}`},
			message: `model "llama9" not found, try pulling it first`,
		},
		{
			name:      "server error",
			reply:     testkit.WireReply{Status: 503, Body: `{"object":"error","message":"The server is overloaded","type":"ServiceUnavailableError","code":503}`},
			message:   "The server is overloaded",
			retryable: true,
		},
		{
			name:      "timeout",
			reply:     testkit.WireReply{Status: 408, ContentType: "text/plain", Body: ""},
			message:   "Request Timeout",
			retryable: true,
		},
	})
}

func TestOpenAIMalformedBody(t *testing.T) {
	t.Parallel()
	newProvider := func(t *testing.T, ws *testkit.WireServer) agent.Provider { return newOpenAI(t, ws, fakeOpenAIKey) }
	checkMalformed(t, newProvider, fakeOpenAIKey, []malformedCase{
		{"truncated", testkit.WireReply{Body: `{"choices": [`}, "openai_compat: malformed response: HTTP 200: "},
		{"no choices", testkit.WireReply{Body: `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[]}`}, "openai_compat: malformed response: no choices"},
		{"not json", testkit.WireReply{ContentType: "text/html", Body: "<html></html>"}, "openai_compat: malformed response: HTTP 200 with text/html, not JSON"},
		{
			"invalid arguments",
			testkit.WireReply{Body: strings.Replace(openAIToolCallReply, `{\"path\":\"a.txt\"}`, `{\"path\":`, 1)},
			"openai_compat: malformed response: tool_calls[0] (fs_read): arguments are not valid JSON",
		},
	})
}

func TestOpenAINoKey(t *testing.T) {
	t.Parallel()
	// Local servers need no key: none is sent.
	ws := testkit.NewWireServer(t, testkit.WireReply{Body: openAITextReply})
	_, err := newOpenAI(t, ws, "").Complete(context.Background(), &agent.Request{Model: "llama3.2", Messages: []agent.Message{wireUser("hi")}})
	require.NoError(t, err)
	assert.Empty(t, ws.Only().Header.Values("Authorization"))
}

func TestOpenAIEnvFallbacks(t *testing.T) {
	t.Parallel()
	ws := testkit.NewWireServer(t, testkit.WireReply{Body: openAITextReply}, testkit.WireReply{Body: openAITextReply})
	other := testkit.NewWireServer(t)

	saidHi(t, agent.ProviderOptions{Name: "openai_compat", Env: wireEnv(map[string]string{
		"OPENAI_API_KEY":  "sk-from-env",
		"OPENAI_BASE_URL": ws.URL() + "/v1/",
	})})

	saidHi(t, agent.ProviderOptions{Name: "openai_compat", APIKey: fakeOpenAIKey, BaseURL: ws.URL() + "/api/v1", Env: wireEnv(map[string]string{
		"OPENAI_API_KEY":  "sk-from-env",
		"OPENAI_BASE_URL": other.URL(),
	})})

	reqs := ws.Received()
	require.Len(t, reqs, 2)
	assert.Equal(t, "/v1/chat/completions", reqs[0].Path)
	assert.Equal(t, "Bearer sk-from-env", reqs[0].Header.Get("Authorization"))
	assert.Equal(t, "/api/v1/chat/completions", reqs[1].Path)
	assert.Equal(t, "Bearer "+fakeOpenAIKey, reqs[1].Header.Get("Authorization"))
	assert.Empty(t, other.Received())
}

// The SDK reads OPENAI_* from the process whatever it is told; the key and
// the base URL are always set from Env, so the process's cannot leak in.
func TestOpenAIIgnoresProcessEnv(t *testing.T) {
	ws := testkit.NewWireServer(t, testkit.WireReply{Body: openAITextReply})
	t.Setenv("OPENAI_API_KEY", "sk-process-key")
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")

	saidHi(t, agent.ProviderOptions{Name: "openai_compat", Env: wireEnv(map[string]string{
		"OPENAI_BASE_URL": ws.URL() + "/v1",
	})})
	assert.Empty(t, ws.Only().Header.Values("Authorization"))
}

func TestOpenAIBadRequest(t *testing.T) {
	t.Parallel()
	ws := testkit.NewWireServer(t)
	checkBadRequests(t, newOpenAI(t, ws, ""), ws, []badRequest{
		{"tool_use from the user", agent.Request{Messages: []agent.Message{{Role: agent.RoleUser, Content: []agent.Block{{Kind: agent.BlockToolUse, ID: "x", Name: "y"}}}}}, "openai_compat: messages[0]: content[0]: tool_use in a user message"},
		{"tool_result from the model", agent.Request{Messages: []agent.Message{{Role: agent.RoleAssistant, Content: []agent.Block{{Kind: agent.BlockToolResult, ToolUseID: "x"}}}}}, "openai_compat: messages[0]: content[0]: tool_result in a assistant message"},
		{"unknown kind", agent.Request{Messages: []agent.Message{{Role: agent.RoleUser, Content: []agent.Block{{Kind: "image"}}}}}, `openai_compat: messages[0]: content[0]: unknown block kind "image"`},
		{"schema not an object", agent.Request{Tools: []agent.ToolSpec{{Name: "x", InputSchema: json.RawMessage(`[1]`)}}}, `openai_compat: tool "x": input_schema is not a JSON object`},
	})
}

func TestOpenAIEmptySchema(t *testing.T) {
	t.Parallel()
	ws := testkit.NewWireServer(t, testkit.WireReply{Body: openAITextReply})
	_, err := newOpenAI(t, ws, "").Complete(context.Background(), &agent.Request{
		Model:    "m",
		Messages: []agent.Message{wireUser("hi")},
		Tools: []agent.ToolSpec{
			{Name: "done", Description: "Finish."},
			{Name: "note", InputSchema: json.RawMessage(`{"properties":{"text":{"type":"string"}}}`)},
		},
	})
	require.NoError(t, err)
	assert.JSONEq(t, `[
	  {"type":"function","function":{"name":"done","description":"Finish.","parameters":{"type":"object"}}},
	  {"type":"function","function":{"name":"note","parameters":{"type":"object","properties":{"text":{"type":"string"}}}}}
	]`, wireJSON(t, ws.Only().Body["tools"]))
}
