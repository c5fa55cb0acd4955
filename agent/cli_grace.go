package agent

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
)

// ErrActedAfterStop is the error of a session whose agent started a tool
// call or a command after it was told to stop (CLIConfig.Stop): it was
// stopped, but what it started may have begun to run. It comes with the
// call's *DeniedError.
var ErrActedAfterStop = errors.New("the agent acted after its session was closed")

// closedReason is the reason recorded for a call started after the
// session was closed.
const closedReason = "called after the session was closed by a terminal verb: the agent was stopped"

// stopGrace watches an agent told to stop (CLIConfig.Stop with a
// StopGrace): it may end its turn on its own, printing the record that
// carries its usage, but it may start nothing more. The close is seen in
// the stream as the result of the MCP call that closed the session (the
// first result of a call of one of CLIMCP.Tools read once Stop is closed:
// the call is answered only after Stop is closed); the first tool call or
// command that starts after it is recorded as tool.denied and stops the
// agent at once.
//
// line runs on the goroutine that reads stdout, after the adapter's own
// reading of the line.
type stopGrace struct {
	cfg    *CLIConfig
	stream cliStream
	halt   func(error)

	verbIDs map[string]bool // Claude Code: ids of the calls of the MCP server's tools
	closed  bool            // the closing call's result has been read
	denied  *DeniedError    // the call refused
	err     error           // the failure to record the denial
}

func newStopGrace(cfg *CLIConfig, stream cliStream, halt func(error)) *stopGrace {
	return &stopGrace{cfg: cfg, stream: stream, halt: halt, verbIDs: map[string]bool{}}
}

func (g *stopGrace) line(ctx context.Context, line []byte) {
	if g.denied != nil || g.cfg.MCP == nil {
		return
	}
	switch g.cfg.Spec.Output {
	case OutputCodex:
		g.codexLine(ctx, line)
	case OutputClaudeCode:
		g.claudeLine(ctx, line)
	}
}

func (g *stopGrace) codexLine(ctx context.Context, line []byte) {
	var rec codexRecord
	if json.Unmarshal(line, &rec) != nil || rec.Item == nil || !rec.Item.tool() {
		return
	}
	it := rec.Item
	switch {
	case rec.Type == "item.completed" && !g.closed && it.Type == "mcp_tool_call" && g.cfg.MCP.Tools[it.agentTool()] != "":
		g.closed = closed(g.cfg.Stop)
	case rec.Type == "item.started" && g.closed:
		if cs, ok := g.stream.(*codexStream); ok && cs.items[it.ID] != nil {
			// Its denial stands for it: no tool.called for a call that
			// was stopped as it started.
			cs.items[it.ID].denied = true
		}
		name := it.orbitName(g.cfg.MCP)
		if name == "" {
			name = it.agentTool()
		}
		g.deny(ctx, it.ID, name, it.agentTool())
	}
}

func (g *stopGrace) claudeLine(ctx context.Context, line []byte) {
	var rec ccRecord
	if json.Unmarshal(line, &rec) != nil {
		return
	}
	var m ccMessage
	if (rec.Type != "assistant" && rec.Type != "user") || json.Unmarshal(rec.Message, &m) != nil {
		return
	}
	for _, b := range m.Content {
		switch {
		case b.Type == "tool_use" && g.closed:
			name := g.cfg.MCP.Tools[b.Name]
			if name == "" {
				name = assets.ClaudeCodeOrbitTool(b.Name)
			}
			// Claude Code's PreToolUse hook refuses every call once Stop is
			// closed, and its answer ends the session: the call does not
			// run, so the agent is left to end on its own (and print its
			// usage). Its denial stands for it in the stream.
			if cs, ok := g.stream.(*claudeStream); ok && cs.calls[b.ID] != nil {
				cs.calls[b.ID].denied = true
			}
			g.record(ctx, b.ID, name, b.Name, closedByVerb)
			return
		case b.Type == "tool_use" && g.cfg.MCP.Tools[b.Name] != "":
			g.verbIDs[b.ID] = true
		case b.Type == "tool_result" && g.verbIDs[b.ToolUseID]:
			g.closed = g.closed || closed(g.cfg.Stop)
		}
	}
}

// deny stops the agent and records the call as refused.
func (g *stopGrace) deny(ctx context.Context, id, name, agentTool string) {
	g.halt(ErrActedAfterStop)
	g.record(ctx, id, name, agentTool, closedReason)
}

// record records the call as refused.
func (g *stopGrace) record(ctx context.Context, id, name, agentTool, reason string) {
	g.denied = &DeniedError{Tool: name, Reason: reason}
	g.err = g.cfg.Emitter.Emit(ctx, events.ToolDenied, events.ToolDeniedData{
		Attempt: g.cfg.Attempt, ToolUseID: id, Name: name, AgentTool: agentTool,
		Reason: reason, OnDenial: OnDenialTerminate,
	})
}
