package agent_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/agent"
)

var updateFixtureErrors = flag.Bool("update-fixture-errors", false, "rewrite testdata/fixtures/bad-*.err from the errors LoadFixture returns")

func TestLoadFixtureSamples(t *testing.T) {
	t.Parallel()
	fx, err := agent.LoadFixture("testdata/fixtures/edit-file.json")
	require.NoError(t, err)
	assert.Equal(t, "testdata/fixtures/edit-file.json", fx.Source)
	require.Len(t, fx.Turns, 3)
	assert.Equal(t, agent.Response{
		Content: []agent.Block{
			{Kind: agent.BlockText, Text: "Let me look at the file first."},
			{Kind: agent.BlockToolUse, ID: "toolu_read", Name: "fs.read", Input: json.RawMessage(`{"path":"greeting.txt"}`)},
		},
		StopReason: agent.StopToolUse,
		Usage:      agent.Usage{InputTokens: 1200, OutputTokens: 40, CacheWriteTokens: 1100},
		Model:      "claude-sonnet-4-5",
	}, fx.Turns[0])
	// Ids are generated from where a call is; the stop reason follows the calls.
	assert.Equal(t, agent.Response{
		Content: []agent.Block{
			{Kind: agent.BlockToolUse, ID: "toolu_replay_1_0", Name: "fs.edit", Input: json.RawMessage(`{"path":"greeting.txt","old":"Hello","new":"Hello, world"}`)},
			{Kind: agent.BlockToolUse, ID: "toolu_replay_1_1", Name: "fs.read", Input: json.RawMessage(`{"path":"greeting.txt"}`)},
		},
		StopReason: agent.StopToolUse,
		Usage:      agent.Usage{InputTokens: 90, OutputTokens: 60, CacheReadTokens: 1100},
		Model:      "claude-sonnet-4-5",
	}, fx.Turns[1])
	assert.Equal(t, agent.StopEndTurn, fx.Turns[2].StopReason)

	fx, err = agent.LoadFixture("testdata/fixtures/bare-array.json")
	require.NoError(t, err)
	assert.Equal(t, []agent.Response{
		{
			Content:    []agent.Block{{Kind: agent.BlockToolUse, ID: "toolu_replay_0_0", Name: "shell.exec", Input: json.RawMessage(`{"program":"go","args":["test","./..."]}`)}},
			StopReason: agent.StopToolUse,
			Model:      "replay",
		},
		{
			Content:    []agent.Block{{Kind: agent.BlockText, Text: "The tests pass."}},
			StopReason: agent.StopEndTurn,
			Model:      "replay",
		},
	}, fx.Turns)
}

// Every bad-*.json fixture fails to load, with the error in its .err file.
func TestLoadFixtureBad(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("testdata/fixtures/bad-*.json")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			t.Parallel()
			_, err := agent.LoadFixture(file)
			require.Error(t, err)
			require.ErrorIs(t, err, agent.ErrFixture)
			golden := strings.TrimSuffix(file, ".json") + ".err"
			if *updateFixtureErrors {
				require.NoError(t, os.WriteFile(golden, []byte(err.Error()+"\n"), 0o644))
			}
			want, readErr := os.ReadFile(golden)
			require.NoError(t, readErr, "run go test -run TestLoadFixtureBad -update-fixture-errors")
			assert.Equal(t, strings.TrimSpace(string(want)), err.Error())
		})
	}
}

// TestFixtureKeysBeginningWithUnderscoreAreComments: "_note" beside
// turns (as the upstream system's fixtures have it), in a turn, a block
// and usage is read past; a tool_use's input keeps its own keys.
func TestFixtureKeysBeginningWithUnderscoreAreComments(t *testing.T) {
	t.Parallel()
	fx, err := agent.ParseFixture([]byte(`{"_note": "the review finds one problem", "turns": [
  {"_why": "read first", "content": [
    {"kind": "tool_use", "_c": {"any": "value"}, "name": "fs.read", "input": {"path": "a.txt", "_keep": 1}}],
   "usage": {"_u": true, "input_tokens": 3}},
  {"content": [{"kind": "text", "text": "done", "_": null}]}]}`))
	require.NoError(t, err)
	require.Len(t, fx.Turns, 2)
	assert.JSONEq(t, `{"path": "a.txt", "_keep": 1}`, string(fx.Turns[0].Content[0].Input))
	assert.Equal(t, int64(3), fx.Turns[0].Usage.InputTokens)
	assert.Equal(t, "done", fx.Turns[1].Content[0].Text)
}

func TestLoadFixtureMissingFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "nope.json")
	_, err := agent.LoadFixture(path)
	require.ErrorIs(t, err, agent.ErrFixture)
	assert.True(t, strings.HasPrefix(err.Error(), path+": "), err.Error())
}

func TestParseFixtureErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, data, want string
	}{
		{"empty", "  \n", `empty fixture: want {"turns": [...]} or [...]`},
		{"scalar", `42`, `want {"turns": [...]} or [...], got a number`},
		{"truncated", "{\"turns\": [\n  {\"content\": [", "invalid JSON at line 2, column 15: unexpected end of JSON input"},
		{"trailing", `[] []`, "invalid JSON at line 1, column 4: invalid character '[' after top-level value"},
		{"no turns key", `{}`, "turns is required"},
		{"top-level field", `{"turns": [], "notes": "x"}`, `unknown field "notes" (want turns)`},
		{"turns not a list", `{"turns": {"content": []}}`, "turns: want a list of turns, got an object"},
		{"turns null", `{"turns": null}`, "turns: want a list of turns, got null"},
		{"no turn", `[]`, "turns: no turns"},
		{"turn not an object", `[[]]`, "turns[0]: want an object, got a list"},
		{"no content", `[{"stop_reason": "end_turn"}]`, "turns[0]: content is required"},
		{"content not a list", `[{"content": "hi"}]`, "turns[0].content: want a list of blocks, got a string"},
		{"block not an object", `[{"content": ["hi"]}]`, "turns[0].content[0]: want an object, got a string"},
		{"no kind", `[{"content": [{"text": "hi"}]}]`, "turns[0].content[0]: kind is required (text or tool_use)"},
		{"kind not a string", `[{"content": [{"kind": 1}]}]`, "turns[0].content[0].kind: want a string, got a number"},
		{"empty kind", `[{"content": [{"kind": ""}]}]`, "turns[0].content[0].kind: empty kind (want text or tool_use)"},
		{"unknown kind", `[{"content": [{"kind": "tool_result", "text": "x"}]}]`, `turns[0].content[0].kind: unknown kind "tool_result" (want text or tool_use)`},
		{"text without text", `[{"content": [{"kind": "text"}]}]`, "turns[0].content[0]: text needs a text"},
		{"text not a string", `[{"content": [{"kind": "text", "text": ["a"]}]}]`, "turns[0].content[0].text: want a string, got a list"},
		{"text with a name", `[{"content": [{"kind": "text", "text": "a", "name": "fs.read"}]}]`, "turns[0].content[0]: a text block has no name"},
		{"unknown block field", `[{"content": [{"kind": "text", "text": "a", "cache": true}]}]`, `turns[0].content[0]: unknown field "cache" (want kind, text, id, name, input)`},
		{"tool_use without name", `[{"content": [{"kind": "text", "text": "a"}, {"kind": "tool_use"}]}]`, "turns[0].content[1]: tool_use needs a name"},
		{"tool_use with text", `[{"content": [{"kind": "tool_use", "name": "x", "text": "a"}]}]`, "turns[0].content[0]: a tool_use block has no text"},
		{"empty id", `[{"content": [{"kind": "tool_use", "name": "x", "id": ""}]}]`, "turns[0].content[0].id: empty id (omit it for a generated one)"},
		{"input a list", `[{"content": [{"kind": "tool_use", "name": "x", "input": [1]}]}]`, "turns[0].content[0].input: want a JSON object, got a list"},
		{"input null", `[{"content": [{"kind": "tool_use", "name": "x", "input": null}]}]`, "turns[0].content[0].input: want a JSON object, got null"},
		{"generated id taken", `[{"content": [{"kind": "tool_use", "name": "x", "id": "toolu_replay_0_1"}, {"kind": "tool_use", "name": "y"}]}]`, `turns[0].content[1].id: duplicate tool_use id "toolu_replay_0_1" (first at turns[0].content[0])`},
		{"unknown stop reason", `[{"content": [], "stop_reason": "stop"}]`, `turns[0].stop_reason: unknown stop reason "stop" (want end_turn, tool_use or max_tokens)`},
		{"stop reason not a string", `[{"content": [], "stop_reason": 1}]`, "turns[0].stop_reason: want a string, got a number"},
		{"tool_use stop without a call", `[{"content": [], "stop_reason": "tool_use"}]`, "turns[0]: stop_reason tool_use needs a tool_use block"},
		{"end_turn with a call", `[{"content": [{"kind": "tool_use", "name": "x"}], "stop_reason": "end_turn"}]`, "turns[0]: stop_reason end_turn with tool_use blocks (want tool_use)"},
		{"usage not an object", `[{"content": [], "usage": 5}]`, "turns[0].usage: want an object, got a number"},
		{"usage field", `[{"content": [], "usage": {"prompt_tokens": 5}}]`, `turns[0].usage: unknown field "prompt_tokens" (want input_tokens, output_tokens, cache_read_tokens, cache_write_tokens)`},
		{"usage fraction", `[{"content": [], "usage": {"output_tokens": 1.5}}]`, "turns[0].usage.output_tokens: want a whole number ≥ 0, got 1.5"},
		{"model empty", `[{"content": [], "model": ""}]`, `turns[0].model: want a non-empty string, got a string`},
		{"unknown turn field", `[{"content": [], "role": "assistant"}]`, `turns[0]: unknown field "role" (want content, stop_reason, usage, model)`},
		{"later turn", `[{"content": []}, {"content": []}, {"content": [{"kind": "tool_use", "input": {}}]}]`, "turns[2].content[0]: tool_use needs a name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fx, err := agent.ParseFixture([]byte(tc.data))
			require.Nil(t, fx)
			require.EqualError(t, err, tc.want)
			require.ErrorIs(t, err, agent.ErrFixture)
			fe, ok := errors.AsType[*agent.FixtureError](err)
			require.True(t, ok)
			assert.Empty(t, fe.File)
		})
	}
}

func TestParseFixtureDefaults(t *testing.T) {
	t.Parallel()
	fx, err := agent.ParseFixture([]byte(`{"turns": [
		{"content": [{"kind": "text", "text": ""}]},
		{"content": [{"kind": "tool_use", "name": "fs.list"}], "stop_reason": "max_tokens", "usage": {"output_tokens": 8192}}
	]}`))
	require.NoError(t, err)
	assert.Equal(t, []agent.Response{
		{Content: []agent.Block{{Kind: agent.BlockText}}, StopReason: agent.StopEndTurn, Model: "replay"},
		{
			Content:    []agent.Block{{Kind: agent.BlockToolUse, ID: "toolu_replay_1_0", Name: "fs.list", Input: json.RawMessage(`{}`)}},
			StopReason: agent.StopMaxTokens,
			Usage:      agent.Usage{OutputTokens: 8192},
			Model:      "replay",
		},
	}, fx.Turns)
}

// FuzzParseFixture checks that ParseFixture never panics, that every
// rejection is a non-empty ErrFixture, and that whatever it accepts is
// valid and survives being written back out and parsed again.
func FuzzParseFixture(f *testing.F) {
	for _, file := range []string{"edit-file.json", "bare-array.json", "bad-syntax.json", "bad-unknown-kind.json"} {
		data, err := os.ReadFile(filepath.Join("testdata/fixtures", file))
		require.NoError(f, err)
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fx, err := agent.ParseFixture(data)
		if err != nil {
			require.Nil(t, fx)
			require.NotEmpty(t, err.Error())
			require.ErrorIs(t, err, agent.ErrFixture)
			fe, ok := errors.AsType[*agent.FixtureError](err)
			require.True(t, ok, "rejection is not a *FixtureError: %v", err)
			require.NotEmpty(t, fe.Reason, "rejection without a reason: %+v", fe)
			require.Empty(t, fe.File, "ParseFixture names no file")
			return
		}
		require.NotEmpty(t, fx.Turns)
		ids := map[string]bool{}
		for i, turn := range fx.Turns {
			calls := 0
			for _, b := range turn.Content {
				switch b.Kind {
				case agent.BlockText:
				case agent.BlockToolUse:
					calls++
					require.NotEmpty(t, b.ID)
					require.NotEmpty(t, b.Name)
					require.False(t, ids[b.ID], "duplicate id %q", b.ID)
					ids[b.ID] = true
					var input map[string]any
					require.NoError(t, json.Unmarshal(b.Input, &input))
					require.NotNil(t, input)
				default:
					t.Fatalf("turns[%d]: kind %q", i, b.Kind)
				}
			}
			require.Contains(t, []string{agent.StopEndTurn, agent.StopToolUse, agent.StopMaxTokens}, turn.StopReason)
			require.False(t, turn.StopReason == agent.StopToolUse && calls == 0)
			require.NotEmpty(t, turn.Model)
			u := turn.Usage
			require.True(t, u.InputTokens >= 0 && u.OutputTokens >= 0 && u.CacheReadTokens >= 0 && u.CacheWriteTokens >= 0, "turns[%d]: usage %+v", i, u)
		}

		again, err := agent.ParseFixture(writeFixture(t, fx))
		require.NoError(t, err)
		require.Equal(t, fx.Turns, again.Turns)
	})
}

// writeFixture writes a fixture in its file format.
func writeFixture(t *testing.T, fx *agent.Fixture) []byte {
	t.Helper()
	type block struct {
		Kind  string          `json:"kind"`
		Text  *string         `json:"text,omitempty"`
		ID    string          `json:"id,omitempty"`
		Name  string          `json:"name,omitempty"`
		Input json.RawMessage `json:"input,omitempty"`
	}
	type turn struct {
		Content    []block     `json:"content"`
		StopReason string      `json:"stop_reason"`
		Usage      agent.Usage `json:"usage"`
		Model      string      `json:"model"`
	}
	var out struct {
		Turns []turn `json:"turns"`
	}
	for _, r := range fx.Turns {
		tr := turn{Content: []block{}, StopReason: r.StopReason, Usage: r.Usage, Model: r.Model}
		for _, b := range r.Content {
			wb := block{Kind: b.Kind, ID: b.ID, Name: b.Name, Input: b.Input}
			if b.Kind == agent.BlockText {
				text := b.Text
				wb.Text = &text
			}
			tr.Content = append(tr.Content, wb)
		}
		out.Turns = append(out.Turns, tr)
	}
	// Inputs are compared byte for byte: keep them as they are.
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	require.NoError(t, enc.Encode(out))
	return buf.Bytes()
}
