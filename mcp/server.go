// Package mcp is Orbit's MCP server: it offers a CLI agent (Claude Code,
// Codex) the Groundhog verbs as MCP tools over stdio and forwards each call
// to the engine, scoped by the attempt token in the server's environment.
// It also writes the configuration that tells an agent to start it.
package mcp

import (
	"context"
	"encoding/json"
	"fmt"
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

// Serve runs the server on stdin and stdout until the client disconnects
// or ctx ends.
func Serve(ctx context.Context, version string, f Forwarder) error {
	return NewServer(version, f).Run(ctx, &sdk.StdioTransport{})
}
