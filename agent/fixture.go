package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
)

// Fixture is a replay script: the turns a model would answer, in order.
//
// On disk it is JSON, either {"turns": [turn, …]} or a bare [turn, …]:
//
//	{"turns": [
//	  {"content": [{"kind": "text", "text": "Reading it."},
//	               {"kind": "tool_use", "id": "t1", "name": "fs.read", "input": {"path": "a.txt"}}],
//	   "stop_reason": "tool_use",
//	   "usage": {"input_tokens": 120, "output_tokens": 30},
//	   "model": "claude-sonnet-4-5"},
//	  {"content": [{"kind": "text", "text": "Done."}], "stop_reason": "end_turn"}
//	]}
//
// Keys that begin with _ are comments, at every level of that shape (a
// tool_use's input is the model's, and kept whole): "_note": "why this
// turn" is read past, so the upstream system's fixtures load unmodified.
//
// A turn's stop_reason is end_turn, tool_use or max_tokens; when it is
// omitted it is tool_use if the turn calls a tool, else end_turn. usage
// (input_tokens, output_tokens, cache_read_tokens, cache_write_tokens)
// defaults to zero, model to "replay". A tool_use without an id gets
// toolu_replay_<turn>_<block>.
type Fixture struct {
	// Source names where the fixture came from (LoadFixture sets the file),
	// for errors and for the turn events of a replayed session.
	Source string
	// Turns are the model's answers; every one has been validated.
	Turns []Response
}

// FixtureError is a fixture that cannot be used: where, and why. It
// matches ErrFixture.
type FixtureError struct {
	File   string // the fixture file, if it came from one
	Path   string // e.g. turns[2].content[0]; empty for the whole file
	Reason string
}

func (e *FixtureError) Error() string {
	parts := make([]string, 0, 3)
	for _, p := range []string{e.File, e.Path, e.Reason} {
		if p != "" {
			parts = append(parts, p)
		}
	}
	return strings.Join(parts, ": ")
}

// Is makes errors.Is(err, ErrFixture) true.
func (e *FixtureError) Is(target error) bool { return target == ErrFixture }

// replayModel is the model a fixture turn names when it names none.
const replayModel = "replay"

// LoadFixture reads and parses a fixture file. Its errors name the file.
func LoadFixture(path string) (*Fixture, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &FixtureError{File: path, Reason: err.Error()}
	}
	f, err := ParseFixture(data)
	if err != nil {
		if fe, ok := errors.AsType[*FixtureError](err); ok {
			fe.File = path
			return nil, fe
		}
		return nil, err
	}
	f.Source = path
	return f, nil
}

// ParseFixture parses and validates a fixture. Every rejection is a
// *FixtureError whose Path names the turn and block and whose Reason says
// what was expected. Unknown fields, kinds and stop reasons are errors.
func ParseFixture(data []byte) (*Fixture, error) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil, &FixtureError{Reason: "empty fixture: want {\"turns\": [...]} or [...]"}
	}
	if err := fixtureSyntax(trimmed); err != nil {
		return nil, err
	}
	var rawTurns []json.RawMessage
	switch trimmed[0] {
	case '[':
		if err := json.Unmarshal(trimmed, &rawTurns); err != nil {
			return nil, &FixtureError{Reason: "want a list of turns"}
		}
	case '{':
		fields, err := fixtureObject("", trimmed, "turns")
		if err != nil {
			return nil, err
		}
		raw, ok := fields["turns"]
		if !ok {
			return nil, &FixtureError{Reason: "turns is required"}
		}
		if json.Unmarshal(raw, &rawTurns) != nil || fixtureNull(raw) {
			return nil, &FixtureError{Path: "turns", Reason: "want a list of turns, got " + fixtureKind(raw)}
		}
	default:
		return nil, &FixtureError{Reason: "want {\"turns\": [...]} or [...], got " + fixtureKind(trimmed)}
	}
	if len(rawTurns) == 0 {
		return nil, &FixtureError{Path: "turns", Reason: "no turns"}
	}

	f := &Fixture{Turns: make([]Response, 0, len(rawTurns))}
	ids := map[string]string{} // tool_use id → where it was first seen
	for i, raw := range rawTurns {
		turn, err := parseTurn(i, raw, ids)
		if err != nil {
			return nil, err
		}
		f.Turns = append(f.Turns, turn)
	}
	return f, nil
}

func parseTurn(i int, raw json.RawMessage, ids map[string]string) (Response, error) {
	path := fmt.Sprintf("turns[%d]", i)
	var turn Response
	fields, err := fixtureObject(path, raw, "content", "stop_reason", "usage", "model")
	if err != nil {
		return turn, err
	}

	rawContent, ok := fields["content"]
	if !ok {
		return turn, &FixtureError{Path: path, Reason: "content is required"}
	}
	var blocks []json.RawMessage
	if json.Unmarshal(rawContent, &blocks) != nil || fixtureNull(rawContent) {
		return turn, &FixtureError{Path: path + ".content", Reason: "want a list of blocks, got " + fixtureKind(rawContent)}
	}
	calls := 0
	for j, rawBlock := range blocks {
		b, err := parseBlock(i, j, rawBlock, ids)
		if err != nil {
			return turn, err
		}
		if b.Kind == BlockToolUse {
			calls++
		}
		turn.Content = append(turn.Content, b)
	}

	turn.StopReason = StopEndTurn
	if calls > 0 {
		turn.StopReason = StopToolUse
	}
	if rawStop, ok := fields["stop_reason"]; ok {
		var stop string
		if json.Unmarshal(rawStop, &stop) != nil {
			return turn, &FixtureError{Path: path + ".stop_reason", Reason: "want a string, got " + fixtureKind(rawStop)}
		}
		switch stop {
		case StopEndTurn, StopToolUse, StopMaxTokens:
		default:
			return turn, &FixtureError{Path: path + ".stop_reason", Reason: fmt.Sprintf("unknown stop reason %q (want end_turn, tool_use or max_tokens)", stop)}
		}
		turn.StopReason = stop
	}
	switch {
	case turn.StopReason == StopToolUse && calls == 0:
		return turn, &FixtureError{Path: path, Reason: "stop_reason tool_use needs a tool_use block"}
	case turn.StopReason == StopEndTurn && calls > 0:
		return turn, &FixtureError{Path: path, Reason: "stop_reason end_turn with tool_use blocks (want tool_use)"}
	}

	if rawUsage, ok := fields["usage"]; ok {
		if turn.Usage, err = parseUsage(path+".usage", rawUsage); err != nil {
			return turn, err
		}
	}

	turn.Model = replayModel
	if rawModel, ok := fields["model"]; ok {
		var model string
		if json.Unmarshal(rawModel, &model) != nil || model == "" {
			return turn, &FixtureError{Path: path + ".model", Reason: "want a non-empty string, got " + fixtureKind(rawModel)}
		}
		turn.Model = model
	}
	return turn, nil
}

func parseBlock(i, j int, raw json.RawMessage, ids map[string]string) (Block, error) {
	path := fmt.Sprintf("turns[%d].content[%d]", i, j)
	var b Block
	fields, err := fixtureObject(path, raw, "kind", "text", "id", "name", "input")
	if err != nil {
		return b, err
	}
	rawKind, ok := fields["kind"]
	if !ok {
		return b, &FixtureError{Path: path, Reason: "kind is required (text or tool_use)"}
	}
	if json.Unmarshal(rawKind, &b.Kind) != nil {
		return b, &FixtureError{Path: path + ".kind", Reason: "want a string, got " + fixtureKind(rawKind)}
	}
	str := func(name string, v *string) error {
		raw, ok := fields[name]
		if !ok {
			return nil
		}
		if json.Unmarshal(raw, v) != nil || fixtureNull(raw) {
			return &FixtureError{Path: path + "." + name, Reason: "want a string, got " + fixtureKind(raw)}
		}
		return nil
	}

	switch b.Kind {
	case BlockText:
		for _, name := range []string{"id", "name", "input"} {
			if _, ok := fields[name]; ok {
				return b, &FixtureError{Path: path, Reason: "a text block has no " + name}
			}
		}
		if _, ok := fields["text"]; !ok {
			return b, &FixtureError{Path: path, Reason: "text needs a text"}
		}
		if err := str("text", &b.Text); err != nil {
			return b, err
		}
	case BlockToolUse:
		if _, ok := fields["text"]; ok {
			return b, &FixtureError{Path: path, Reason: "a tool_use block has no text"}
		}
		if err := str("name", &b.Name); err != nil {
			return b, err
		}
		if b.Name == "" {
			return b, &FixtureError{Path: path, Reason: "tool_use needs a name"}
		}
		if err := str("id", &b.ID); err != nil {
			return b, err
		}
		if _, ok := fields["id"]; ok && b.ID == "" {
			return b, &FixtureError{Path: path + ".id", Reason: "empty id (omit it for a generated one)"}
		}
		if b.ID == "" {
			b.ID = fmt.Sprintf("toolu_replay_%d_%d", i, j)
		}
		if first, dup := ids[b.ID]; dup {
			return b, &FixtureError{Path: path + ".id", Reason: fmt.Sprintf("duplicate tool_use id %q (first at %s)", b.ID, first)}
		}
		ids[b.ID] = path
		b.Input = json.RawMessage(`{}`)
		if rawInput, ok := fields["input"]; ok {
			if len(rawInput) == 0 || rawInput[0] != '{' {
				return b, &FixtureError{Path: path + ".input", Reason: "want a JSON object, got " + fixtureKind(rawInput)}
			}
			var compact bytes.Buffer
			if err := json.Compact(&compact, rawInput); err != nil {
				return b, &FixtureError{Path: path + ".input", Reason: err.Error()}
			}
			b.Input = compact.Bytes()
		}
	case "":
		return b, &FixtureError{Path: path + ".kind", Reason: "empty kind (want text or tool_use)"}
	default:
		return b, &FixtureError{Path: path + ".kind", Reason: fmt.Sprintf("unknown kind %q (want text or tool_use)", b.Kind)}
	}
	return b, nil
}

func parseUsage(path string, raw json.RawMessage) (Usage, error) {
	var u Usage
	fields, err := fixtureObject(path, raw, "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
	if err != nil {
		return u, err
	}
	for _, f := range []struct {
		name string
		dst  *int64
	}{
		{"input_tokens", &u.InputTokens},
		{"output_tokens", &u.OutputTokens},
		{"cache_read_tokens", &u.CacheReadTokens},
		{"cache_write_tokens", &u.CacheWriteTokens},
	} {
		rawN, ok := fields[f.name]
		if !ok {
			continue
		}
		if json.Unmarshal(rawN, f.dst) != nil || fixtureNull(rawN) || *f.dst < 0 {
			return u, &FixtureError{Path: path + "." + f.name, Reason: "want a whole number ≥ 0, got " + shorten(string(rawN))}
		}
	}
	return u, nil
}

// fixtureObject decodes a JSON object and rejects fields not in allowed,
// naming the first unknown one in sorted order. A field whose name begins
// with _ is a comment ("_note", as the upstream system's fixtures carry):
// it is left out, whatever its value.
func fixtureObject(path string, raw json.RawMessage, allowed ...string) (map[string]json.RawMessage, error) {
	var fields map[string]json.RawMessage
	if json.Unmarshal(raw, &fields) != nil || fields == nil {
		return nil, &FixtureError{Path: path, Reason: "want an object, got " + fixtureKind(raw)}
	}
	var unknown []string
	for k := range fields {
		if strings.HasPrefix(k, "_") {
			delete(fields, k)
			continue
		}
		if !slices.Contains(allowed, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return nil, &FixtureError{Path: path, Reason: fmt.Sprintf("unknown field %q (want %s)", unknown[0], strings.Join(allowed, ", "))}
	}
	return fields, nil
}

// fixtureSyntax reports a syntax error with its line and column.
func fixtureSyntax(data []byte) error {
	var v any
	err := json.Unmarshal(data, &v)
	if err == nil {
		return nil
	}
	if se, ok := errors.AsType[*json.SyntaxError](err); ok {
		line, col := fixtureLineCol(data, se.Offset)
		return &FixtureError{Reason: fmt.Sprintf("invalid JSON at line %d, column %d: %v", line, col, se)}
	}
	return &FixtureError{Reason: "invalid JSON: " + err.Error()}
}

// fixtureLineCol returns the 1-based line and column of the byte a
// json.SyntaxError's offset (the bytes read when it occurred) stopped at.
func fixtureLineCol(data []byte, offset int64) (int, int) {
	offset = min(max(offset-1, 0), int64(len(data)))
	before := data[:offset]
	line := bytes.Count(before, []byte("\n")) + 1
	col := len(before) - bytes.LastIndexByte(before, '\n')
	return line, col
}

func fixtureNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

// fixtureKind names the kind of a JSON value for an error message.
func fixtureKind(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "an object"
	case '[':
		return "a list"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	default:
		return "a number"
	}
}
