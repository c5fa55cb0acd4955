package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
	"github.com/anthropics/anthropic-sdk-go/packages/param"
)

// claudeDefaultMaxTokens is the max_tokens of a request that names none.
const claudeDefaultMaxTokens = 8192

// claudeProvider talks to the Anthropic Messages API through the official
// SDK. It is safe for concurrent use.
type claudeProvider struct {
	client anthropic.Client
	key    string // only to redact it from errors
}

var _ Provider = (*claudeProvider)(nil)

// newClaude builds the claude provider: key from opts.APIKey, else
// ANTHROPIC_API_KEY; base URL from opts.BaseURL, else ANTHROPIC_BASE_URL,
// else the SDK's default. A missing key is an error now rather than a 401
// on the first turn.
//
// IMPORTANT: the SDK's own environment lookup is switched off, so that
// opts.Env is the only environment the provider sees, and so are its
// retries.
func newClaude(opts ProviderOptions) (Provider, error) {
	key := firstNonEmpty(opts.APIKey, opts.getenv(EnvAnthropicAPIKey))
	if key == "" {
		return nil, errors.New("claude: no API key (set ANTHROPIC_API_KEY)")
	}
	clientOpts := []option.RequestOption{
		option.WithoutEnvironmentDefaults(),
		option.WithAPIKey(key),
		option.WithMaxRetries(0),
	}
	if base := firstNonEmpty(opts.BaseURL, opts.getenv(EnvAnthropicBaseURL)); base != "" {
		if err := checkBaseURL(ProviderClaude, base, key); err != nil {
			return nil, err
		}
		clientOpts = append(clientOpts, option.WithBaseURL(base))
	}
	if opts.HTTPClient != nil {
		clientOpts = append(clientOpts, option.WithHTTPClient(opts.HTTPClient))
	}
	return &claudeProvider{client: anthropic.NewClient(clientOpts...), key: key}, nil
}

// Name implements Provider.
func (p *claudeProvider) Name() string { return ProviderClaude }

// Complete implements Provider. A request it cannot express is a plain
// error; a failed exchange is a *ProviderError; a cancelled ctx is its
// error, wrapped.
func (p *claudeProvider) Complete(ctx context.Context, req *Request) (*Response, error) {
	params, names, err := claudeParams(req)
	if err != nil {
		return nil, fmt.Errorf("claude: %w", err)
	}
	var x exchange
	msg, err := p.client.Messages.New(ctx, params,
		option.WithMiddleware(x.middleware),
		option.WithRequestTimeout(claudeTimeout(params.MaxTokens)),
	)
	if err != nil {
		return nil, httpFailure(ctx, ProviderClaude, p.key, &x, err)
	}
	return claudeResponse(msg, names, p.key)
}

// claudeTimeout is the time one call may take. Setting it ourselves stops
// the SDK from refusing non-streaming calls whose max_tokens it expects to
// take more than ten minutes; the caller's context still bounds every call.
func claudeTimeout(maxTokens int64) time.Duration {
	const floor, ceiling = 10 * time.Minute, time.Hour
	d := time.Duration(float64(ceiling) * float64(maxTokens) / 128000)
	return min(max(d, floor), ceiling)
}

// claudeParams maps a Request to the Messages API. The system prompt and
// the last tool carry cache_control: tools then system are the prefix every
// turn of a session shares, so later turns read it from the cache.
func claudeParams(req *Request) (anthropic.MessageNewParams, *wireNames, error) {
	var params anthropic.MessageNewParams
	if req.Model == "" {
		return params, nil, errors.New("the request names no model")
	}
	names, err := newWireNames(req.Tools)
	if err != nil {
		return params, nil, err
	}
	params.Model = anthropic.Model(req.Model)
	params.MaxTokens = int64(req.MaxTokens)
	if params.MaxTokens <= 0 {
		params.MaxTokens = claudeDefaultMaxTokens
	}
	if req.System != "" {
		params.System = []anthropic.TextBlockParam{{
			Text:         req.System,
			CacheControl: anthropic.NewCacheControlEphemeralParam(),
		}}
	}
	for i, t := range req.Tools {
		tool, err := claudeTool(t, names)
		if err != nil {
			return params, nil, err
		}
		if i == len(req.Tools)-1 {
			tool.CacheControl = anthropic.NewCacheControlEphemeralParam()
		}
		params.Tools = append(params.Tools, anthropic.ToolUnionParam{OfTool: tool})
	}
	for i, m := range req.Messages {
		msg, err := claudeMessage(m, names)
		if err != nil {
			return params, nil, fmt.Errorf("messages[%d]: %w", i, err)
		}
		if len(msg.Content) > 0 {
			params.Messages = append(params.Messages, msg)
		}
	}
	return params, names, nil
}

// claudeTool maps a ToolSpec. The schema is sent as the JSON it is: the
// SDK would write its extra fields in map order, and a schema whose bytes
// change from turn to turn misses the prompt cache.
func claudeTool(t ToolSpec, names *wireNames) (*anthropic.ToolParam, error) {
	schema, err := objectSchema(t.Name, t.InputSchema)
	if err != nil {
		return nil, err
	}
	tool := &anthropic.ToolParam{
		Name:        names.toWire(t.Name),
		InputSchema: param.Override[anthropic.ToolInputSchemaParam](schema),
	}
	if t.Description != "" {
		tool.Description = anthropic.String(t.Description)
	}
	return tool, nil
}

// claudeMessage maps one message. Empty text blocks are dropped: the API
// refuses them.
func claudeMessage(m Message, names *wireNames) (anthropic.MessageParam, error) {
	var msg anthropic.MessageParam
	switch m.Role {
	case RoleUser:
		msg.Role = anthropic.MessageParamRoleUser
	case RoleAssistant:
		msg.Role = anthropic.MessageParamRoleAssistant
	default:
		return msg, fmt.Errorf("unknown role %q", m.Role)
	}
	for i, b := range m.Content {
		switch b.Kind {
		case BlockText:
			if b.Text != "" {
				msg.Content = append(msg.Content, anthropic.NewTextBlock(b.Text))
			}
		case BlockToolUse:
			if m.Role != RoleAssistant {
				return msg, fmt.Errorf("content[%d]: tool_use in a %s message", i, m.Role)
			}
			input, err := toolInput(i, b)
			if err != nil {
				return msg, err
			}
			msg.Content = append(msg.Content, anthropic.ContentBlockParamUnion{OfToolUse: &anthropic.ToolUseBlockParam{
				ID:    b.ID,
				Name:  names.toWire(b.Name),
				Input: input,
			}})
		case BlockToolResult:
			if m.Role != RoleUser {
				return msg, fmt.Errorf("content[%d]: tool_result in a %s message", i, m.Role)
			}
			result := &anthropic.ToolResultBlockParam{ToolUseID: b.ToolUseID, IsError: anthropic.Bool(b.IsError)}
			if b.Text != "" {
				result.Content = []anthropic.ToolResultBlockParamContentUnion{{OfText: &anthropic.TextBlockParam{Text: b.Text}}}
			}
			msg.Content = append(msg.Content, anthropic.ContentBlockParamUnion{OfToolResult: result})
		default:
			return msg, fmt.Errorf("content[%d]: unknown block kind %q", i, b.Kind)
		}
	}
	return msg, nil
}

// claudeResponse maps the API's message. Blocks other than text and
// tool_use (thinking, server tools) are not asked for and are dropped.
func claudeResponse(msg *anthropic.Message, names *wireNames, key string) (*Response, error) {
	if msg == nil || !msg.JSON.Content.Valid() {
		return nil, malformed(ProviderClaude, key, "not a message (no content)")
	}
	resp := &Response{
		StopReason: claudeStopReason(msg.StopReason),
		Model:      string(msg.Model),
		Usage: Usage{
			InputTokens:      msg.Usage.InputTokens,
			OutputTokens:     msg.Usage.OutputTokens,
			CacheReadTokens:  msg.Usage.CacheReadInputTokens,
			CacheWriteTokens: msg.Usage.CacheCreationInputTokens,
		},
	}
	for i, c := range msg.Content {
		switch c.Type {
		case "text":
			resp.Content = append(resp.Content, Block{Kind: BlockText, Text: c.Text})
		case "tool_use":
			if c.ID == "" || c.Name == "" {
				return nil, malformed(ProviderClaude, key, fmt.Sprintf("content[%d]: tool_use without an id or a name", i))
			}
			if !json.Valid(c.Input) {
				return nil, malformed(ProviderClaude, key, fmt.Sprintf("content[%d]: tool_use %s: input is not JSON", i, c.ID))
			}
			resp.Content = append(resp.Content, Block{
				Kind:  BlockToolUse,
				ID:    c.ID,
				Name:  names.fromWire(c.Name),
				Input: json.RawMessage(append([]byte(nil), c.Input...)),
			})
		}
	}
	return resp, nil
}

// claudeStopReason normalises a stop_reason. A stop sequence, a refusal
// and a paused turn all end the turn; running out of context is running
// out of tokens.
func claudeStopReason(r anthropic.StopReason) string {
	switch r {
	case anthropic.StopReasonToolUse:
		return StopToolUse
	case anthropic.StopReasonMaxTokens, anthropic.StopReasonModelContextWindowExceeded:
		return StopMaxTokens
	default:
		return StopEndTurn
	}
}
