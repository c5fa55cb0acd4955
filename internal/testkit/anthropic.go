package testkit

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// AnthropicServer speaks the Anthropic Messages API on loopback: POST
// /v1/messages, streaming (SSE) or not, answered from a script of turns,
// and POST /v1/messages/count_tokens. Point a client at it with
// ANTHROPIC_BASE_URL=URL() and any key.
//
// A request that offers tools is the agent's loop and takes the next turn
// of the script; one that offers none (a CLI's side query, such as a title
// or a quota check) is answered with SideText and leaves the script alone.
// Every request is recorded.
type AnthropicServer struct {
	*modelServer
	// SideText answers requests outside the script.
	SideText string
}

// NewAnthropicServer starts a Messages API server with the given script;
// it stops when the test ends.
func NewAnthropicServer(t testing.TB, turns ...Turn) *AnthropicServer {
	t.Helper()
	as := &AnthropicServer{SideText: "ok", modelServer: newModelServer(turns)}
	as.serve(t, map[string]http.HandlerFunc{
		"POST /v1/messages":              as.messages,
		"POST /v1/messages/count_tokens": as.countTokens,
		"/":                              as.other,
	})
	return as
}

func decodeAnthropic(raw []byte, req *ModelRequest) {
	var body struct {
		Model    string                  `json:"model"`
		System   json.RawMessage         `json:"system"`
		Tools    []struct{ Name string } `json:"tools"`
		Messages []json.RawMessage       `json:"messages"`
		Stream   bool                    `json:"stream"`
	}
	if json.Unmarshal(raw, &body) != nil {
		return
	}
	req.Model, req.Messages, req.Stream = body.Model, body.Messages, body.Stream
	for _, t := range body.Tools {
		req.Tools = append(req.Tools, t.Name)
	}
	// system is a string or a list of text blocks.
	var s string
	if json.Unmarshal(body.System, &s) == nil {
		req.System = s
		return
	}
	var blocks []struct{ Text string }
	if json.Unmarshal(body.System, &blocks) == nil {
		parts := make([]string, 0, len(blocks))
		for _, b := range blocks {
			parts = append(parts, b.Text)
		}
		req.System = strings.Join(parts, "\n")
	}
}

func (as *AnthropicServer) messages(w http.ResponseWriter, r *http.Request) {
	req, turn, n, ok := as.turn(r, decodeAnthropic, as.SideText)
	if !ok {
		return
	}
	if turn.Fail != nil {
		writeJSON(w, cmp.Or(turn.Fail.Status, http.StatusInternalServerError), map[string]any{
			"type":  "error",
			"error": map[string]any{"type": cmp.Or(turn.Fail.Type, anthropicErrorType(turn.Fail.Status)), "message": turn.Fail.Message},
		})
		return
	}
	id := fmt.Sprintf("msg_%03d", n+1)
	content := anthropicContent(turn, n)
	stop := "end_turn"
	if len(turn.Tools) > 0 {
		stop = "tool_use"
	}
	in, out := usageOr(turn.InputTokens, 100), usageOr(turn.OutputTokens, 20)
	if !req.Stream {
		writeJSON(w, http.StatusOK, map[string]any{
			"id": id, "type": "message", "role": "assistant", "model": req.Model,
			"content": content, "stop_reason": stop, "stop_sequence": nil,
			"usage": map[string]any{"input_tokens": in, "output_tokens": out,
				"cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
		})
		return
	}
	s := newSSE(w)
	s.event("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": req.Model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": in, "output_tokens": 1,
			"cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
	}})
	if turn.Cut {
		return
	}
	s.event("ping", map[string]any{"type": "ping"})
	for i, block := range content {
		switch block["type"] {
		case "text":
			s.event("content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "text", "text": ""}})
			for _, part := range halves(block["text"].(string)) {
				s.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
					"delta": map[string]any{"type": "text_delta", "text": part}})
			}
		case "tool_use":
			s.event("content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "tool_use", "id": block["id"], "name": block["name"], "input": map[string]any{}}})
			for _, part := range halves(inputJSON(block["input"])) {
				s.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
					"delta": map[string]any{"type": "input_json_delta", "partial_json": part}})
			}
		}
		s.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	s.event("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": out}})
	s.event("message_stop", map[string]any{"type": "message_stop"})
}

// anthropicContent is the turn as Messages API content blocks.
func anthropicContent(turn Turn, n int) []map[string]any {
	var content []map[string]any
	if turn.Text != "" || len(turn.Tools) == 0 {
		content = append(content, map[string]any{"type": "text", "text": turn.Text})
	}
	for i, tu := range turn.Tools {
		input := tu.Input
		if input == nil {
			input = map[string]any{}
		}
		content = append(content, map[string]any{"type": "tool_use",
			"id": cmp.Or(tu.ID, fmt.Sprintf("toolu_%03d_%d", n+1, i+1)), "name": tu.Name, "input": input})
	}
	return content
}

func anthropicErrorType(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "invalid_request_error"
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case 529:
		return "overloaded_error"
	}
	return "api_error"
}

func (as *AnthropicServer) countTokens(w http.ResponseWriter, r *http.Request) {
	req := as.record(r, decodeAnthropic)
	as.take(req)
	writeJSON(w, http.StatusOK, map[string]any{"input_tokens": max(1, len(req.Raw)/4)})
}

// other records whatever else a client asks for and answers 404 in the
// API's error format.
func (as *AnthropicServer) other(w http.ResponseWriter, r *http.Request) {
	as.take(as.record(r, nil))
	writeJSON(w, http.StatusNotFound, map[string]any{"type": "error",
		"error": map[string]any{"type": "not_found_error", "message": "model server: no such endpoint " + r.Method + " " + r.URL.Path}})
}
