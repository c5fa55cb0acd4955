package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
)

// openAIDefaultBaseURL is the SDK's default, set explicitly so that an
// OPENAI_BASE_URL in the process environment cannot override opts.Env.
const openAIDefaultBaseURL = "https://api.openai.com/v1/"

// openAIErrorPrefix marks a tool result that is an error: chat completions
// have no is_error.
const openAIErrorPrefix = "ERROR: "

// openAIProvider talks to an OpenAI-compatible chat completions endpoint
// (OpenAI, Ollama, vLLM, llama.cpp, …) through the official SDK. It is safe
// for concurrent use.
type openAIProvider struct {
	client openai.Client
	key    string // only to redact it from errors
}

var _ Provider = (*openAIProvider)(nil)

// newOpenAICompat builds the openai_compat provider: key from opts.APIKey,
// else OPENAI_API_KEY, else none (local servers need none, and then no
// Authorization header is sent); base URL from opts.BaseURL, else
// OPENAI_BASE_URL, else OpenAI's.
//
// IMPORTANT: the SDK reads OPENAI_* from the process environment whatever
// it is told; the key and the base URL are always set here so that opts.Env
// decides them. The SDK's retries are off.
func newOpenAICompat(opts ProviderOptions) (Provider, error) {
	key := firstNonEmpty(opts.APIKey, opts.getenv(EnvOpenAIAPIKey))
	base := firstNonEmpty(opts.BaseURL, opts.getenv(EnvOpenAIBaseURL), openAIDefaultBaseURL)
	if err := checkBaseURL(ProviderOpenAICompat, base, key); err != nil {
		return nil, err
	}
	clientOpts := []option.RequestOption{
		option.WithAPIKey(key),
		option.WithBaseURL(base),
		option.WithMaxRetries(0),
	}
	if opts.HTTPClient != nil {
		clientOpts = append(clientOpts, option.WithHTTPClient(opts.HTTPClient))
	}
	return &openAIProvider{client: openai.NewClient(clientOpts...), key: key}, nil
}

// Name implements Provider.
func (p *openAIProvider) Name() string { return ProviderOpenAICompat }

// Complete implements Provider. A request it cannot express is a plain
// error; a failed exchange is a *ProviderError; a cancelled ctx is its
// error, wrapped.
func (p *openAIProvider) Complete(ctx context.Context, req *Request) (*Response, error) {
	params, names, err := openAIParams(req)
	if err != nil {
		return nil, fmt.Errorf("openai_compat: %w", err)
	}
	var x exchange
	completion, err := p.client.Chat.Completions.New(ctx, params, option.WithMiddleware(x.middleware))
	if err != nil {
		return nil, httpFailure(ctx, ProviderOpenAICompat, p.key, &x, err)
	}
	return openAIResponse(completion, names, p.key)
}

// openAIParams maps a Request to chat completions. MaxTokens goes out as
// max_completion_tokens, the field OpenAI's current models require; a zero
// MaxTokens leaves the limit to the server.
func openAIParams(req *Request) (openai.ChatCompletionNewParams, *wireNames, error) {
	var params openai.ChatCompletionNewParams
	names, err := newWireNames(req.Tools)
	if err != nil {
		return params, nil, err
	}
	params.Model = shared.ChatModel(req.Model)
	if req.MaxTokens > 0 {
		params.MaxCompletionTokens = openai.Int(int64(req.MaxTokens))
	}
	if req.System != "" {
		params.Messages = append(params.Messages, openai.SystemMessage(req.System))
	}
	for _, t := range req.Tools {
		tool, err := openAITool(t, names)
		if err != nil {
			return params, nil, err
		}
		params.Tools = append(params.Tools, tool)
	}
	for i, m := range req.Messages {
		msgs, err := openAIMessages(m, names)
		if err != nil {
			return params, nil, fmt.Errorf("messages[%d]: %w", i, err)
		}
		params.Messages = append(params.Messages, msgs...)
	}
	return params, names, nil
}

func openAITool(t ToolSpec, names *wireNames) (openai.ChatCompletionToolUnionParam, error) {
	schema, err := objectSchema(t.Name, t.InputSchema)
	if err != nil {
		return openai.ChatCompletionToolUnionParam{}, err
	}
	// Values stay raw JSON: nested order is kept, and the top-level keys are
	// written sorted, so every turn sends the same bytes.
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(schema, &fields); err != nil {
		return openai.ChatCompletionToolUnionParam{}, fmt.Errorf("tool %q: input_schema: %w", t.Name, err)
	}
	parameters := make(shared.FunctionParameters, len(fields))
	for k, v := range fields {
		parameters[k] = v
	}
	fn := shared.FunctionDefinitionParam{Name: names.toWire(t.Name), Parameters: parameters}
	if t.Description != "" {
		fn.Description = openai.String(t.Description)
	}
	return openai.ChatCompletionFunctionTool(fn), nil
}

// openAIMessages maps one message to one or more chat messages. A user
// message's tool results become `tool` messages, first, since they must
// follow the assistant message that called the tools; its text becomes one
// user message. An assistant message's text and tool calls become one
// assistant message.
func openAIMessages(m Message, names *wireNames) ([]openai.ChatCompletionMessageParamUnion, error) {
	var out []openai.ChatCompletionMessageParamUnion
	var texts []string
	var calls []openai.ChatCompletionMessageToolCallUnionParam
	for i, b := range m.Content {
		switch b.Kind {
		case BlockText:
			if b.Text != "" {
				texts = append(texts, b.Text)
			}
		case BlockToolUse:
			if m.Role != RoleAssistant {
				return nil, fmt.Errorf("content[%d]: tool_use in a %s message", i, m.Role)
			}
			input, err := toolInput(i, b)
			if err != nil {
				return nil, err
			}
			calls = append(calls, openai.ChatCompletionMessageToolCallUnionParam{
				OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
					ID: b.ID,
					Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{
						Name:      names.toWire(b.Name),
						Arguments: string(input),
					},
				},
			})
		case BlockToolResult:
			if m.Role != RoleUser {
				return nil, fmt.Errorf("content[%d]: tool_result in a %s message", i, m.Role)
			}
			text := b.Text
			if b.IsError {
				text = openAIErrorPrefix + text
			}
			out = append(out, openai.ToolMessage(text, b.ToolUseID))
		default:
			return nil, fmt.Errorf("content[%d]: unknown block kind %q", i, b.Kind)
		}
	}
	text := strings.Join(texts, "\n\n")
	switch m.Role {
	case RoleUser:
		if text != "" {
			out = append(out, openai.UserMessage(text))
		}
	case RoleAssistant:
		if text == "" && len(calls) == 0 {
			return nil, nil
		}
		msg := openai.ChatCompletionAssistantMessageParam{ToolCalls: calls}
		if text != "" {
			msg.Content.OfString = openai.String(text)
		}
		out = append(out, openai.ChatCompletionMessageParamUnion{OfAssistant: &msg})
	default:
		return nil, fmt.Errorf("unknown role %q", m.Role)
	}
	return out, nil
}

// openAIResponse maps the first choice. Tool call arguments must be JSON;
// a call without an id (some local servers send none) gets call_<index>.
func openAIResponse(c *openai.ChatCompletion, names *wireNames, key string) (*Response, error) {
	if c == nil || len(c.Choices) == 0 {
		return nil, malformed(ProviderOpenAICompat, key, "no choices")
	}
	choice := c.Choices[0]
	msg := choice.Message
	resp := &Response{Model: c.Model, Usage: openAIUsage(c.Usage)}
	switch {
	case msg.Content != "":
		resp.Content = append(resp.Content, Block{Kind: BlockText, Text: msg.Content})
	case msg.Refusal != "":
		resp.Content = append(resp.Content, Block{Kind: BlockText, Text: msg.Refusal})
	}
	for i, call := range msg.ToolCalls {
		if call.Function.Name == "" {
			return nil, malformed(ProviderOpenAICompat, key, fmt.Sprintf("tool_calls[%d]: no function name", i))
		}
		args := strings.TrimSpace(call.Function.Arguments)
		if args == "" {
			args = "{}"
		}
		if !json.Valid([]byte(args)) {
			return nil, malformed(ProviderOpenAICompat, key, fmt.Sprintf("tool_calls[%d] (%s): arguments are not valid JSON", i, call.Function.Name))
		}
		id := call.ID
		if id == "" {
			id = "call_" + strconv.Itoa(i)
		}
		resp.Content = append(resp.Content, Block{
			Kind:  BlockToolUse,
			ID:    id,
			Name:  names.fromWire(call.Function.Name),
			Input: json.RawMessage(args),
		})
	}
	resp.StopReason = openAIStopReason(choice.FinishReason, len(msg.ToolCalls) > 0)
	return resp, nil
}

// openAIStopReason normalises a finish_reason. Some local servers answer
// "stop" with tool calls; the calls win.
func openAIStopReason(reason string, hasCalls bool) string {
	switch reason {
	case "length":
		return StopMaxTokens
	case "tool_calls", "function_call":
		return StopToolUse
	}
	if hasCalls {
		return StopToolUse
	}
	return StopEndTurn
}

// openAIUsage maps usage to the Anthropic sense of the fields, which Usage
// follows: InputTokens are the prompt tokens not read from the cache, so
// that input + cache read is the whole prompt with either provider.
func openAIUsage(u openai.CompletionUsage) Usage {
	cached := u.PromptTokensDetails.CachedTokens
	return Usage{
		InputTokens:      max(u.PromptTokens-cached, 0),
		OutputTokens:     u.CompletionTokens,
		CacheReadTokens:  cached,
		CacheWriteTokens: u.PromptTokensDetails.CacheWriteTokens,
	}
}
