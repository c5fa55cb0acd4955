// Package mcp is Orbit's MCP server: it offers a CLI agent (Claude Code,
// Codex) the Groundhog verbs as MCP tools over stdio and forwards each call
// to the engine, scoped by the attempt token in the server's environment;
// or, to an agent step bound to a task, the tool that records its execution
// summary, scoped by the step's task token. It also writes the
// configuration that tells an agent to start it.
package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/orbitrun/orbit/groundhog"
)

// Tool names as the agent sees them (Claude Code prefixes them with
// mcp__orbit__).
const (
	ToolSuccess    = "checkpoint_success"
	ToolFailure    = "checkpoint_failure"
	ToolSideEffect = "side_effect"
)

// ToolTaskSummary records the execution summary of the task an agent step
// is bound to; VerbTaskSummary is what it forwards.
const (
	ToolTaskSummary = "task_summary"
	VerbTaskSummary = "task.summary"
)

// ServerName is the name the agents' configurations give the server.
const ServerName = "orbit"

// Forwarder sends a verb to the engine and returns what the agent is told.
// refused is true when the engine did not accept the call (a bad token, a
// bad input); the text then says why.
type Forwarder interface {
	Forward(ctx context.Context, verb string, input json.RawMessage) (text string, refused bool, err error)
}

// tools maps the MCP tool names onto the builtin verbs.
var tools = map[string]string{
	groundhog.VerbSuccess:    ToolSuccess,
	groundhog.VerbFailure:    ToolFailure,
	groundhog.VerbSideEffect: ToolSideEffect,
}

// NewServer returns an MCP server whose three tools forward to f. Their
// descriptions and input schemas are the builtin verbs' own, so the model
// sees what the HTTP loop's model sees.
func NewServer(version string, f Forwarder) *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: ServerName, Version: version}, nil)
	for _, spec := range groundhog.VerbSpecs() {
		verb := spec.Name
		// anthropic/alwaysLoad: Claude Code offers the verbs in every prompt
		// rather than behind its tool search (as ClaudeConfig asks too).
		meta := sdk.Meta{"anthropic/alwaysLoad": true}
		s.AddTool(&sdk.Tool{Meta: meta, Name: tools[verb], Description: spec.Description, InputSchema: spec.InputSchema},
			func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				input := req.Params.Arguments
				if len(input) == 0 || strings.TrimSpace(string(input)) == "null" {
					input = json.RawMessage(`{}`)
				}
				text, refused, err := f.Forward(ctx, verb, input)
				if err != nil {
					text, refused = fmt.Sprintf("the engine did not take %s: %v", tools[verb], err), true
				}
				return &sdk.CallToolResult{IsError: refused, Content: []sdk.Content{&sdk.TextContent{Text: text}}}, nil
			})
	}
	return s
}

// NewTaskServer returns an MCP server whose one tool, task_summary
// {summary}, forwards to f as VerbTaskSummary: the server of an agent
// step bound to a task, which records what it did.
func NewTaskServer(version string, f Forwarder) *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: ServerName, Version: version}, nil)
	schema := json.RawMessage(`{"type":"object","properties":{"summary":{"type":"string","description":"what was done, why, and how it was checked"}},"required":["summary"],"additionalProperties":false}`)
	s.AddTool(&sdk.Tool{Meta: sdk.Meta{"anthropic/alwaysLoad": true}, Name: ToolTaskSummary, InputSchema: schema,
		Description: "Record your execution summary of the task you implement: what you changed, why, and how you checked it. " +
			"Delivery (the reviewer, a pull request's description) reads this record, not your final message. Calling it again replaces it."},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			text, refused, err := f.Forward(ctx, VerbTaskSummary, req.Params.Arguments)
			if err != nil {
				text, refused = fmt.Sprintf("the engine did not take %s: %v", ToolTaskSummary, err), true
			}
			return &sdk.CallToolResult{IsError: refused, Content: []sdk.Content{&sdk.TextContent{Text: text}}}, nil
		})
	return s
}

// Serve runs the server on stdin and stdout until the client disconnects
// or ctx ends: the task server when the environment holds a task token
// (EnvTaskToken), else the verbs' server.
func Serve(ctx context.Context, version string, f Forwarder) error {
	if os.Getenv(EnvTaskToken) != "" {
		return NewTaskServer(version, f).Run(ctx, &sdk.StdioTransport{})
	}
	return NewServer(version, f).Run(ctx, &sdk.StdioTransport{})
}
