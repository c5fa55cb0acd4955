package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
)

// replayCodex feeds a recorded JSONL file (or lines) through the adapter's
// reader, as RunCLI does line by line.
func replayCodex(t *testing.T, data []byte, cfg CLIConfig) (*recorder, *Outcome, error, error) {
	t.Helper()
	grant, err := assets.CodexGrant(cfg.Envelope.Tools)
	require.NoError(t, err)
	rec := &recorder{}
	cfg.Attempt, cfg.Emitter = 1, rec
	var stopped error
	s := newCodexStream(&cfg, grant, func(err error) { stopped = err })
	feed(s, data)
	out, err := s.outcome(context.Background(), "\nthe last line")
	return rec, out, err, stopped
}

func TestCodexStreamRecordsTurnsAndCalls(t *testing.T) {
	rec, out, err, stopped := replayCodex(t, cliRecording(t, "codex-exec.jsonl"),
		CLIConfig{Envelope: Envelope{Tools: []string{"fs.write"}, Model: "gpt-x"}})
	require.NoError(t, err)
	assert.Nil(t, stopped)
	assert.Equal(t, []string{events.AgentTurn, events.ToolCalled, events.AgentTurn}, rec.types)
	turn := rec.payloads[0].(events.AgentTurnData)
	assert.Equal(t, 1, turn.Turn)
	assert.Equal(t, []string{"command_execution"}, turn.ToolUses)
	assert.Equal(t, StopToolUse, turn.StopReason)
	call := rec.payloads[1].(events.ToolCalledData)
	assert.Equal(t, "shell.exec", call.Name)
	assert.Equal(t, "command_execution", call.AgentTool)
	assert.Equal(t, "item_1", call.ToolUseID)
	assert.Equal(t, 1, call.Turn)
	assert.Contains(t, call.Error, "exit code 1: ")
	assert.Contains(t, call.Error, "Read-only file system")
	final := rec.payloads[2].(events.AgentTurnData)
	assert.Equal(t, 2, final.Turn)
	assert.Equal(t, "done", final.Text)
	assert.Equal(t, StopEndTurn, final.StopReason)
	assert.Zero(t, final.Usage, "the session's usage is the outcome's, not a turn's")

	assert.Equal(t, "done", out.FinalMessage)
	assert.Equal(t, 2, out.Turns)
	assert.Equal(t, 1, out.ToolCalls)
	assert.Equal(t, "gpt-x", out.Model)
	assert.Equal(t, Usage{InputTokens: 200, OutputTokens: 40}, out.Usage)
}

func TestCodexStreamEndings(t *testing.T) {
	for file, want := range map[string]struct {
		final, err string
		retryable  bool
	}{
		"codex-text.jsonl":      {final: "the scripted answer"},
		"codex-recovered.jsonl": {final: "recovered"},
		"codex-api-error.jsonl": {err: "codex: Codex's turn failed: ", retryable: true},
	} {
		t.Run(file, func(t *testing.T) {
			rec, out, err, _ := replayCodex(t, cliRecording(t, file), CLIConfig{})
			if want.err != "" {
				var perr *ProviderError
				require.ErrorAs(t, err, &perr)
				assert.Contains(t, err.Error(), want.err)
				assert.Equal(t, want.retryable, perr.Retryable)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, want.final, out.FinalMessage)
			assert.Equal(t, 1, out.Turns)
			assert.Equal(t, []string{events.AgentTurn}, rec.types)
		})
	}
	// Cut short: the calls read are on record, and the step fails quoting
	// the end of the output.
	data := cliRecording(t, "codex-exec.jsonl")
	rec, _, err, _ := replayCodex(t, data[:bytes.LastIndex(data, []byte(`{"type":"item.completed","item":{"id":"item_2"`))], CLIConfig{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "Codex printed no turn.completed (5 records read)\nthe last line")
	assert.Equal(t, []string{events.AgentTurn, events.ToolCalled}, rec.types)
}

func TestCodexStreamDenials(t *testing.T) {
	patch := `{"type":"item.completed","item":{"id":"item_1","type":"file_change","changes":[{"path":"/w/a.txt","kind":"add"}],"status":"failed"}}`
	mcp := `{"type":"item.started","item":{"id":"item_2","type":"mcp_tool_call","server":"docs","tool":"search","status":"in_progress"}}`
	done := `{"type":"turn.completed","usage":{"input_tokens":1,"output_tokens":1}}`
	for name, tc := range map[string]struct {
		lines     string
		tools     []string
		orbit     string
		agentTool string
	}{
		"a change under a read-only allowlist": {patch, []string{"fs.read"}, "fs.write", "file_change"},
		"an MCP call":                          {mcp, []string{"fs.write"}, "mcp:docs/search", "mcp:docs/search"},
	} {
		t.Run(name, func(t *testing.T) {
			rec, out, err, stopped := replayCodex(t, []byte(tc.lines+"\n"+done), CLIConfig{Envelope: Envelope{Tools: tc.tools}})
			var denied *DeniedError
			require.ErrorAs(t, err, &denied)
			assert.Equal(t, tc.orbit, denied.Tool)
			assert.Equal(t, denied, stopped, "the agent is stopped at the denial")
			assert.Equal(t, StopDenied, out.StopReason)
			require.Equal(t, []string{events.AgentTurn, events.ToolDenied, events.AgentTurn}[:2], rec.types[:2])
			d := rec.payloads[1].(events.ToolDeniedData)
			assert.Equal(t, tc.orbit, d.Name)
			assert.Equal(t, tc.agentTool, d.AgentTool)
			assert.Equal(t, OnDenialTerminate, d.OnDenial)
			assert.Zero(t, out.ToolCalls)

			_, _, err, stopped = replayCodex(t, []byte(tc.lines+"\n"+done), CLIConfig{Envelope: Envelope{Tools: tc.tools}, OnDenial: OnDenialContinue})
			require.NoError(t, err, "under continue a denial is recorded, not fatal")
			assert.Nil(t, stopped)
		})
	}
	// Granted, the same change is a call of fs.write.
	rec, out, err, _ := replayCodex(t, []byte(patch+"\n"+done), CLIConfig{Envelope: Envelope{Tools: []string{"fs.write"}}})
	require.NoError(t, err)
	assert.Equal(t, 1, out.ToolCalls)
	assert.Equal(t, "fs.write", rec.payloads[1].(events.ToolCalledData).Name)
}

func TestCodexStreamTurnLimit(t *testing.T) {
	var lines []byte
	for _, id := range []string{"item_1", "item_2", "item_3"} {
		lines = append(lines, `{"type":"item.started","item":{"id":"`+id+`","type":"command_execution","command":"ls","status":"in_progress"}}`+"\n"...)
	}
	rec, out, err, stopped := replayCodex(t, lines, CLIConfig{MaxTurns: 2})
	require.ErrorIs(t, err, ErrTurnLimit)
	assert.Equal(t, err, stopped, "the agent is stopped when it calls past the limit")
	assert.Equal(t, StopTurnLimit, out.StopReason)
	assert.Contains(t, err.Error(), "after 2 turns")
	// Three turns, then the three commands that never completed: each is
	// on the record, as a call the session ended in the middle of.
	require.Equal(t, []string{events.AgentTurn, events.AgentTurn, events.AgentTurn, events.ToolCalled, events.ToolCalled, events.ToolCalled}, rec.types)
	for i, id := range []string{"item_1", "item_2", "item_3"} {
		c := rec.payloads[3+i].(events.ToolCalledData)
		assert.Equal(t, id, c.ToolUseID)
		assert.Equal(t, "shell.exec", c.Name)
		assert.Equal(t, i+1, c.Turn)
		assert.Equal(t, "failed: the session ended before the call returned", c.Error)
	}
}

// TestCodexStreamMCPCall: a call of the session's MCP server is recorded
// under the Orbit name the server maps it to, with its arguments and
// result; a call of an MCP tool that maps to none is denied.
func TestCodexStreamMCPCall(t *testing.T) {
	mcp := &CLIMCP{Tools: map[string]string{"mcp:orbit/checkpoint_success": "orbit.groundhog.checkpoint_success"}}
	call := func(tool, status, rest string) string {
		return `{"type":"item.started","item":{"id":"item_1","type":"mcp_tool_call","server":"orbit","tool":"` + tool + `","arguments":{"summary":"s"},"status":"in_progress"}}` + "\n" +
			`{"type":"item.completed","item":{"id":"item_1","type":"mcp_tool_call","server":"orbit","tool":"` + tool + `","arguments":{"summary":"s"},` + rest + `,"status":"` + status + `"}}` + "\n"
	}
	done := `{"type":"turn.completed","usage":{"input_tokens":1,"output_tokens":1}}` + "\n"
	rec, out, err, _ := replayCodex(t, []byte(call("checkpoint_success", "completed", `"result":{"content":[{"type":"text","text":"accepted"}]},"error":null`)+done), CLIConfig{MCP: mcp})
	require.NoError(t, err)
	assert.Equal(t, 1, out.ToolCalls)
	c := rec.payloads[1].(events.ToolCalledData)
	assert.Equal(t, "orbit.groundhog.checkpoint_success", c.Name)
	assert.Equal(t, "mcp:orbit/checkpoint_success", c.AgentTool)
	assert.Equal(t, len(`{"summary":"s"}`), c.InputSize)
	assert.Empty(t, c.Error)
	assert.Positive(t, c.ResultSize)

	rec, _, err, _ = replayCodex(t, []byte(call("checkpoint_success", "failed", `"result":null,"error":{"message":"MCP tool call requires approval"}`)+done), CLIConfig{MCP: mcp})
	require.NoError(t, err)
	assert.Equal(t, "failed: MCP tool call requires approval", rec.payloads[1].(events.ToolCalledData).Error)

	_, _, err, _ = replayCodex(t, []byte(call("drop_tables", "completed", `"result":null,"error":null`)+done), CLIConfig{MCP: mcp})
	var denied *DeniedError
	require.ErrorAs(t, err, &denied, "a tool of the server that stands for no Orbit tool")
	assert.Equal(t, "mcp:orbit/drop_tables", denied.Tool)
}

func TestCodexArgs(t *testing.T) {
	grant, err := assets.CodexGrant([]string{"fs.read", "fs.edit"})
	require.NoError(t, err)
	cfg := &CLIConfig{Spec: assets.ExecutorSpec{Args: []string{"-c", `model_provider="x"`}}, Workspace: "/w",
		Envelope: Envelope{Model: "gpt-x", Instruction: "say \"hi\"\n-- then stop", Prompt: "not an argument"}}
	assert.Equal(t, []string{"exec", "-c", `model_provider="x"`, "--json", "--ephemeral", "--skip-git-repo-check",
		"--sandbox", "workspace-write", "-C", "/w", "-c", `approval_policy="never"`, "-c", `web_search="disabled"`,
		"--disable", "multi_agent", "--disable", "goals", "--disable", "image_generation", "--model", "gpt-x",
		"-c", `developer_instructions="say \"hi\"\n-- then stop"`, "--dangerously-bypass-hook-trust", "-"},
		codexArgs(cfg, grant, "", []string{"--dangerously-bypass-hook-trust"}))

	none, err := assets.CodexGrant(nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"exec", "--json", "--ephemeral", "--skip-git-repo-check", "--sandbox", "read-only",
		"-C", "", "-c", `approval_policy="never"`, "-c", `web_search="disabled"`,
		"--disable", "multi_agent", "--disable", "goals", "--disable", "image_generation", "-"}, codexArgs(&CLIConfig{}, none, "", nil))
}

// FuzzCodexStream: whatever Codex prints, the reader neither panics nor
// counts a call it did not record.
func FuzzCodexStream(f *testing.F) {
	fuzzCLIStream(f, "codex-*.jsonl", []string{
		`{"type":"item.completed","item":{"id":"a","type":"file_change","changes":[{"kind":"add"},{"kind":"delete"}]}}`,
		`{"type":"item.completed","item":{"id":"a","type":"command_execution","status":"declined"}}`,
	}, func(rec *recorder) cliStream {
		grant, _ := assets.CodexGrant([]string{"fs.read", "fs.write"})
		return newCodexStream(&CLIConfig{Emitter: rec, OnDenial: OnDenialContinue, MaxTurns: 3}, grant, func(error) {})
	})
}

// TestCodexStreamRecordsItemsWithoutTheirStart: Codex 0.169 may print an
// instant command's item.completed with no item.started before it (or
// neither). Every item.completed is a call on record all the same: its
// turn, then its tool.called, in the order read, each once.
func TestCodexStreamRecordsItemsWithoutTheirStart(t *testing.T) {
	lines := `{"type":"thread.started","thread_id":"th-1"}
{"type":"turn.started"}
{"type":"item.completed","item":{"id":"item_0","type":"command_execution","command":"true","aggregated_output":"","exit_code":0,"status":"completed"}}
{"type":"item.started","item":{"id":"item_1","type":"command_execution","command":"sleep 1","status":"in_progress"}}
{"type":"item.completed","item":{"id":"item_1","type":"command_execution","command":"sleep 1","aggregated_output":"","exit_code":0,"status":"completed"}}
{"type":"item.completed","item":{"id":"item_2","type":"file_change","changes":[{"path":"a.txt","kind":"add"}],"status":"completed"}}
{"type":"item.completed","item":{"id":"item_3","type":"agent_message","text":"done"}}
{"type":"turn.completed","usage":{"input_tokens":10,"cached_input_tokens":0,"output_tokens":2}}
`
	rec, out, err, _ := replayCodex(t, []byte(lines), CLIConfig{Envelope: Envelope{Tools: []string{"fs.write"}}})
	require.NoError(t, err)
	assert.Equal(t, []string{events.AgentTurn, events.ToolCalled, events.AgentTurn, events.ToolCalled, events.AgentTurn, events.ToolCalled, events.AgentTurn}, rec.types)
	var ids []string
	for _, p := range rec.payloads {
		if c, ok := p.(events.ToolCalledData); ok {
			ids = append(ids, c.ToolUseID+" "+c.Name)
		}
	}
	assert.Equal(t, []string{"item_0 shell.exec", "item_1 shell.exec", "item_2 fs.write"}, ids)
	assert.Equal(t, 3, out.ToolCalls)
	assert.Empty(t, out.CLISession, "a session not kept names none")

	_, out, err, _ = replayCodex(t, []byte(lines), CLIConfig{Envelope: Envelope{Tools: []string{"fs.write"}}, Persist: true})
	require.NoError(t, err)
	assert.Equal(t, "th-1", out.CLISession, "thread.started names the thread kept")
}

func TestCodexAnswerReadsEntries(t *testing.T) {
	got, err := codexAnswer(`{"entries": [{"key": "a", "value": [1, {"entries": []}]}, {"key": "b", "value": null}]}`)
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"a": []any{float64(1), map[string]any{}}, "b": nil}, got)

	for _, msg := range []string{
		`{"verdict": "ok"}`,                              // an object, not as entries
		`{"entries": [{"key": "a"}]}`,                    // an entry with no value
		`{"entries": [{"key": 1, "value": 2}]}`,          // a key that is no string
		`{"entries": [{"key": "a", "value": {"x": 1}}]}`, // a nested object not as entries
		`{"entries": [], "more": 1}`,                     // a property strict mode does not allow
		`the answer is {"entries": []}`,                  // no JSON
	} {
		_, err := codexAnswer(msg)
		assert.Error(t, err, msg)
	}
}

// FuzzCodexAnswer: whatever the final message, codexAnswer returns an
// object or an error, and an object it returns, written as entries again,
// reads back the same.
func FuzzCodexAnswer(f *testing.F) {
	f.Add(`{"entries": [{"key": "a", "value": [1, {"entries": []}]}]}`)
	f.Add(`{"entries": [{"key": "a", "value": "x"}, {"key": "a", "value": true}]}`)
	f.Add(`{"verdict": "ok"}`)
	f.Fuzz(func(t *testing.T, msg string) {
		got, err := codexAnswer(msg)
		if err != nil {
			return
		}
		require.NotNil(t, got)
		again, err := codexAnswer(string(mustJSON(t, asEntries(got))))
		require.NoError(t, err)
		assert.Equal(t, got, again)
	})
}

// asEntries writes v as codexResponseSchema gives it.
func asEntries(v any) any {
	switch v := v.(type) {
	case map[string]any:
		entries := []any{}
		for k, x := range v {
			entries = append(entries, map[string]any{"key": k, "value": asEntries(x)})
		}
		return map[string]any{"entries": entries}
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = asEntries(x)
		}
		return out
	}
	return v
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}
