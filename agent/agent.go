// Package agent runs LLM agent loops. A session asks a provider for a turn,
// enforces and executes the tools the model calls, sends their results
// back, and repeats until the model stops, a terminal tool ends the
// session, a tool is denied under on_denial: terminate, or a limit is
// reached. Every turn and every tool call is recorded.
//
// The package knows nothing of jobs or steps: the executor's agent_loop
// activity and the Groundhog runner both drive it through Run.
package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// Roles of a message.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
)

// Kinds of content blocks.
const (
	BlockText       = "text"
	BlockToolUse    = "tool_use"
	BlockToolResult = "tool_result"
)

// Stop reasons a provider reports, normalised across providers.
const (
	StopEndTurn   = "end_turn"
	StopToolUse   = "tool_use"
	StopMaxTokens = "max_tokens"
)

// Block is one piece of a message: text, a tool call by the model, or the
// result of one.
type Block struct {
	Kind string `json:"kind"`
	Text string `json:"text,omitempty"`
	// tool_use
	ID    string          `json:"id,omitempty"`
	Name  string          `json:"name,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
	// tool_result: Text holds the result.
	ToolUseID string `json:"tool_use_id,omitempty"`
	IsError   bool   `json:"is_error,omitempty"`
}

// Message is one message of a conversation.
type Message struct {
	Role    string  `json:"role"`
	Content []Block `json:"content"`
}

// ToolSpec is how a tool is described to a model.
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// Usage counts tokens.
type Usage struct {
	InputTokens      int64 `json:"input_tokens"`
	OutputTokens     int64 `json:"output_tokens"`
	CacheReadTokens  int64 `json:"cache_read_tokens,omitempty"`
	CacheWriteTokens int64 `json:"cache_write_tokens,omitempty"`
}

// Add returns the sum of two usages.
func (u Usage) Add(v Usage) Usage {
	return Usage{
		InputTokens:      u.InputTokens + v.InputTokens,
		OutputTokens:     u.OutputTokens + v.OutputTokens,
		CacheReadTokens:  u.CacheReadTokens + v.CacheReadTokens,
		CacheWriteTokens: u.CacheWriteTokens + v.CacheWriteTokens,
	}
}

// Request is one call to a model. System and Tools are the stable prefix of
// every request of a session: providers that support prompt caching mark
// them cacheable.
type Request struct {
	Model     string
	System    string
	Messages  []Message
	Tools     []ToolSpec
	MaxTokens int
}

// Response is a model's turn.
type Response struct {
	Content    []Block
	StopReason string // StopEndTurn, StopToolUse or StopMaxTokens
	Usage      Usage
	Model      string // the model that answered, as the provider names it
}

// Provider is a model behind some transport.
type Provider interface {
	// Name is the provider's name as a spec's `provider:` says it.
	Name() string
	// Complete asks for one turn. Errors are *ProviderError when the
	// provider answered badly (a status, a malformed body).
	Complete(ctx context.Context, req *Request) (*Response, error)
}

// ProviderError is a failed exchange with a provider. Its message never
// contains a credential.
type ProviderError struct {
	Provider  string
	Status    int // HTTP status, 0 when there was none
	Message   string
	Retryable bool // a rate limit, an overload, a server error, a timeout
}

func (e *ProviderError) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("%s: HTTP %d: %s", e.Provider, e.Status, e.Message)
	}
	return fmt.Sprintf("%s: %s", e.Provider, e.Message)
}

// Sentinel errors.
var (
	// ErrUnknownProvider is returned for a provider name with no transport
	// of the kind asked for. There is never a fallback to another one.
	ErrUnknownProvider = errors.New("unknown provider")
	// ErrFixture is returned for a replay fixture that cannot be read or
	// has run out of turns.
	ErrFixture = errors.New("replay fixture")
	// ErrDenied is matched by *DeniedError.
	ErrDenied = errors.New("tool denied")
)

// Tool is something a model can call.
type Tool interface {
	Spec() ToolSpec
	// Call executes the tool. A *DeniedError means the call was refused by
	// policy (nothing happened); any other error is the tool's failure and
	// is shown to the model as an error result.
	Call(ctx context.Context, tc *ToolContext, input json.RawMessage) (string, error)
}

// Terminal is implemented by tools that end the session when called (the
// Groundhog verbs): their result is recorded and no further turn is asked.
type Terminal interface {
	Terminal() bool
}

// DeniedError says that a tool call was refused, and why.
type DeniedError struct {
	Tool   string
	Reason string
	Path   string // the path that was refused, if any
}

func (e *DeniedError) Error() string {
	if e.Path != "" {
		return fmt.Sprintf("%s denied: %s: %s", e.Tool, e.Path, e.Reason)
	}
	return fmt.Sprintf("%s denied: %s", e.Tool, e.Reason)
}

func (e *DeniedError) Is(target error) bool { return target == ErrDenied }

// ToolContext is what tools act on: the workspace, the filesystem profile
// that bounds them, and the programs shell.exec may start.
type ToolContext struct {
	// Workspace is the absolute directory paths are resolved against.
	Workspace string
	// Profile bounds what the fs tools may read and write.
	Profile FSProfile
	// AllowedPrograms are the programs shell.exec may run.
	AllowedPrograms []string
	// Env is the environment of programs shell.exec starts (nil: the
	// engine's own).
	Env []string
}

// FSProfile says which paths, relative to the workspace, the fs tools may
// read and write: doublestar globs ("**" is everything). Whatever a profile
// says, nothing outside the workspace and nothing under .git/ or .orbit/
// is ever read or written.
type FSProfile struct {
	Name  string   `json:"name"`
	Read  []string `json:"read"`
	Write []string `json:"write"`
}

// DefaultProfile reads and writes anything inside the workspace (except
// .git/ and .orbit/, which no profile allows).
var DefaultProfile = FSProfile{Name: "default", Read: []string{"**"}, Write: []string{"**"}}
