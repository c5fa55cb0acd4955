package agent

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
)

// graceReplay feeds lines to a stopGrace, closing the session's Stop
// before the line at closeAt, and returns what it recorded and the cause
// it stopped the agent with.
func graceReplay(t *testing.T, output string, tools map[string]string, lines []string, closeAt int) (*recorder, error) {
	t.Helper()
	rec := &recorder{}
	stop := make(chan struct{})
	cfg := CLIConfig{Spec: assets.ExecutorSpec{Output: output}, Attempt: 1, Emitter: rec, Stop: stop, MCP: &CLIMCP{Tools: tools}}
	var halted error
	g := newStopGrace(&cfg, nil, func(err error) { halted = err })
	for i, l := range lines {
		if i == closeAt {
			close(stop)
		}
		g.line(context.Background(), []byte(l))
	}
	require.NoError(t, g.err)
	return rec, halted
}

// TestStopGraceDeniesWhatCodexStartsAfterTheClosingCall: a command that
// started before the verb, or whose start is read after Stop closed but
// before the verb's result, is left alone; the final message is allowed;
// the first item started after the verb's result is denied and stops
// the agent.
func TestStopGraceDeniesWhatCodexStartsAfterTheClosingCall(t *testing.T) {
	lines := []string{
		`{"type":"item.started","item":{"id":"item_0","type":"command_execution","command":"echo one > one.txt"}}`,
		`{"type":"item.started","item":{"id":"item_1","type":"mcp_tool_call","server":"orbit","tool":"checkpoint_success"}}`,
		`{"type":"item.started","item":{"id":"item_2","type":"command_execution","command":"true"}}`,
		`{"type":"item.completed","item":{"id":"item_1","type":"mcp_tool_call","server":"orbit","tool":"checkpoint_success","status":"completed"}}`,
		`{"type":"item.completed","item":{"id":"item_3","type":"agent_message","text":"Done."}}`,
		`{"type":"item.started","item":{"id":"item_4","type":"command_execution","command":"echo late > late.txt"}}`,
		`{"type":"item.started","item":{"id":"item_5","type":"command_execution","command":"echo later > later.txt"}}`,
	}
	tools := map[string]string{"mcp:orbit/checkpoint_success": "orbit.groundhog.checkpoint_success"}
	rec, halted := graceReplay(t, OutputCodex, tools, lines, 2)
	assert.ErrorIs(t, halted, ErrActedAfterStop)
	require.Equal(t, []string{events.ToolDenied}, rec.types, "one denial: the first call after the verb's result")
	d := rec.payloads[0].(events.ToolDeniedData)
	assert.Equal(t, "item_4", d.ToolUseID)
	assert.Equal(t, "command_execution", d.AgentTool)
	assert.Equal(t, "shell.exec", d.Name)
	assert.Equal(t, OnDenialTerminate, d.OnDenial)

	// A session never closed is never watched into a denial.
	rec, halted = graceReplay(t, OutputCodex, tools, lines, len(lines))
	assert.NoError(t, halted)
	assert.Empty(t, rec.types)
}

// TestStopGraceDeniesWhatClaudeCodeCallsAfterTheClosingCall: the result of
// a verb refused before the session closed does not close it; the result
// of the closing call does, and the next tool_use is denied.
func TestStopGraceDeniesWhatClaudeCodeCallsAfterTheClosingCall(t *testing.T) {
	lines := []string{
		`{"type":"assistant","message":{"content":[{"type":"tool_use","id":"v0","name":"mcp__orbit__checkpoint_success","input":{"summary":" "}}]}}`,
		`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"v0","content":"summary must not be blank","is_error":true}]}}`,
		`{"type":"assistant","message":{"content":[{"type":"tool_use","id":"w1","name":"Write","input":{"file_path":"one.txt","content":"one"}}]}}`,
		`{"type":"assistant","message":{"content":[{"type":"tool_use","id":"v1","name":"mcp__orbit__checkpoint_success","input":{"summary":"Add one.txt"}}]}}`,
		`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"v1","content":"Recorded."}]}}`,
		`{"type":"assistant","message":{"content":[{"type":"text","text":"Done."}]}}`,
		`{"type":"assistant","message":{"content":[{"type":"tool_use","id":"b1","name":"Bash","input":{"command":"echo late > late.txt"}}]}}`,
	}
	tools := map[string]string{"mcp__orbit__checkpoint_success": "orbit.groundhog.checkpoint_success"}
	rec, halted := graceReplay(t, OutputClaudeCode, tools, lines, 4)
	assert.NoError(t, halted, "the PreToolUse hook refuses the call and ends the session: no kill")
	require.Equal(t, []string{events.ToolDenied}, rec.types)
	d := rec.payloads[0].(events.ToolDeniedData)
	assert.Equal(t, closedByVerb, d.Reason)
	assert.Equal(t, "b1", d.ToolUseID)
	assert.Equal(t, "Bash", d.AgentTool)
	assert.Equal(t, "shell.exec", d.Name)
}
