package testkit

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// OpenAIServer speaks the OpenAI Responses API on loopback: POST
// /v1/responses, streaming (SSE) or not, answered from a script of turns,
// and GET /v1/models. Point a client at URL()+"/v1" (Codex: a
// model_providers entry with that base_url and wire_api "responses").
//
// A request that offers tools takes the next turn of the script; one that
// offers none is answered with SideText. Every request is recorded.
//
// Codex 0.169 offers an MCP server's tools as one tool of type namespace,
// named mcp__<server>, whose tools are the server's; it routes a
// function_call to the server only when the call carries that namespace
// and the bare tool name (ToolUse.Namespace). A function_call named
// mcp__orbit__checkpoint_success with no namespace is answered by Codex
// itself as "unsupported call".
type OpenAIServer struct {
	*modelServer
	// SideText answers requests outside the script.
	SideText string
	// Models is what GET /v1/models lists.
	Models []string
}

// NewOpenAIServer starts a Responses API server with the given script; it
// stops when the test ends.
func NewOpenAIServer(t testing.TB, turns ...Turn) *OpenAIServer {
	t.Helper()
	srv := &OpenAIServer{SideText: "ok", modelServer: newModelServer(turns)}
	srv.serve(t, map[string]http.HandlerFunc{
		"POST /v1/responses": srv.responses,
		"GET /v1/models":     srv.models,
		"/":                  srv.other,
	})
	return srv
}

func decodeOpenAI(raw []byte, req *ModelRequest) {
	var body struct {
		Model        string          `json:"model"`
		Instructions string          `json:"instructions"`
		Input        json.RawMessage `json:"input"`
		Tools        []struct {
			Type  string `json:"type"`
			Name  string `json:"name"`
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"` // a namespace's functions
		} `json:"tools"`
		Stream bool `json:"stream"`
	}
	if json.Unmarshal(raw, &body) != nil {
		return
	}
	req.Model, req.System, req.Stream = body.Model, body.Instructions, body.Stream
	for _, t := range body.Tools {
		if t.Type != "namespace" {
			req.Tools = append(req.Tools, cmp.Or(t.Name, t.Type))
			continue
		}
		// A namespace's functions are listed as <namespace>.<function>,
		// Codex's own way of naming them (mcp__orbit.checkpoint_success).
		for _, f := range t.Tools {
			req.Tools = append(req.Tools, t.Name+"."+f.Name)
		}
	}
	var s string
	if json.Unmarshal(body.Input, &s) == nil {
		b, _ := json.Marshal(map[string]any{"role": "user", "content": s})
		req.Messages = []json.RawMessage{b}
		return
	}
	_ = json.Unmarshal(body.Input, &req.Messages)
	// Codex sends its base instructions, and a caller's, as developer
	// messages in the input rather than as instructions: they are the system
	// prompt all the same.
	parts := []string{body.Instructions}
	for _, m := range req.Messages {
		var msg struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		}
		if json.Unmarshal(m, &msg) != nil || (msg.Role != "developer" && msg.Role != "system") {
			continue
		}
		var text string
		if json.Unmarshal(msg.Content, &text) == nil {
			parts = append(parts, text)
			continue
		}
		var blocks []struct{ Text string }
		_ = json.Unmarshal(msg.Content, &blocks)
		for _, b := range blocks {
			parts = append(parts, b.Text)
		}
	}
	req.System = strings.TrimSpace(strings.Join(parts, "\n"))
}

func (s *OpenAIServer) responses(w http.ResponseWriter, r *http.Request) {
	req, turn, n, ok := s.turn(r, decodeOpenAI, s.SideText)
	if !ok {
		return
	}
	if turn.Fail != nil {
		status := cmp.Or(turn.Fail.Status, http.StatusInternalServerError)
		writeJSON(w, status, map[string]any{"error": map[string]any{
			"message": turn.Fail.Message, "type": cmp.Or(turn.Fail.Type, openAIErrorType(status)), "param": nil, "code": nil}})
		return
	}
	id := fmt.Sprintf("resp_%03d", n+1)
	output := openAIOutput(turn, n)
	in, out := usageOr(turn.InputTokens, 100), usageOr(turn.OutputTokens, 20)
	response := func(status string, output []map[string]any) map[string]any {
		resp := map[string]any{"id": id, "object": "response", "created_at": 1700000000, "status": status,
			"model": req.Model, "output": output, "parallel_tool_calls": true, "tool_choice": "auto", "tools": []any{},
			"error": nil, "incomplete_details": nil}
		if status == "completed" {
			resp["usage"] = map[string]any{"input_tokens": in, "input_tokens_details": map[string]any{"cached_tokens": 0},
				"output_tokens": out, "output_tokens_details": map[string]any{"reasoning_tokens": 0}, "total_tokens": in + out}
		}
		return resp
	}
	if !req.Stream {
		writeJSON(w, http.StatusOK, response("completed", output))
		return
	}
	stream := newSSE(w)
	seq := 0
	ev := func(name string, data map[string]any) {
		data["type"], data["sequence_number"] = name, seq
		seq++
		stream.event(name, data)
	}
	ev("response.created", map[string]any{"response": response("in_progress", []map[string]any{})})
	if turn.Cut {
		return
	}
	ev("response.in_progress", map[string]any{"response": response("in_progress", []map[string]any{})})
	for i, item := range output {
		switch item["type"] {
		case "message":
			added := map[string]any{"id": item["id"], "type": "message", "status": "in_progress", "role": "assistant", "content": []any{}}
			ev("response.output_item.added", map[string]any{"output_index": i, "item": added})
			ev("response.content_part.added", map[string]any{"item_id": item["id"], "output_index": i, "content_index": 0,
				"part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}})
			text := item["content"].([]map[string]any)[0]["text"].(string)
			for _, part := range halves(text) {
				ev("response.output_text.delta", map[string]any{"item_id": item["id"], "output_index": i, "content_index": 0, "delta": part})
			}
			ev("response.output_text.done", map[string]any{"item_id": item["id"], "output_index": i, "content_index": 0, "text": text})
			ev("response.content_part.done", map[string]any{"item_id": item["id"], "output_index": i, "content_index": 0,
				"part": map[string]any{"type": "output_text", "text": text, "annotations": []any{}}})
		case "function_call":
			added := map[string]any{"id": item["id"], "type": "function_call", "status": "in_progress",
				"call_id": item["call_id"], "name": item["name"], "arguments": ""}
			if ns, ok := item["namespace"]; ok {
				added["namespace"] = ns
			}
			ev("response.output_item.added", map[string]any{"output_index": i, "item": added})
			args := item["arguments"].(string)
			for _, part := range halves(args) {
				ev("response.function_call_arguments.delta", map[string]any{"item_id": item["id"], "output_index": i, "delta": part})
			}
			ev("response.function_call_arguments.done", map[string]any{"item_id": item["id"], "output_index": i, "arguments": args})
		}
		ev("response.output_item.done", map[string]any{"output_index": i, "item": item})
	}
	ev("response.completed", map[string]any{"response": response("completed", output)})
}

// openAIOutput is the turn as Responses API output items.
func openAIOutput(turn Turn, n int) []map[string]any {
	var output []map[string]any
	if turn.Text != "" || len(turn.Tools) == 0 {
		output = append(output, map[string]any{"id": fmt.Sprintf("msg_%03d", n+1), "type": "message", "status": "completed",
			"role": "assistant", "content": []map[string]any{{"type": "output_text", "text": turn.Text, "annotations": []any{}}}})
	}
	for i, tu := range turn.Tools {
		item := map[string]any{"id": fmt.Sprintf("fc_%03d_%d", n+1, i+1), "type": "function_call",
			"status": "completed", "call_id": cmp.Or(tu.ID, fmt.Sprintf("call_%03d_%d", n+1, i+1)),
			"name": tu.Name, "arguments": inputJSON(tu.Input)}
		if tu.Namespace != "" {
			item["namespace"] = tu.Namespace
		}
		output = append(output, item)
	}
	return output
}

func openAIErrorType(status int) string {
	switch {
	case status == http.StatusTooManyRequests:
		return "rate_limit_exceeded"
	case status >= 500:
		return "server_error"
	}
	return "invalid_request_error"
}

func (s *OpenAIServer) models(w http.ResponseWriter, r *http.Request) {
	s.take(s.record(r, nil))
	data := make([]map[string]any, 0, len(s.Models))
	for _, m := range s.Models {
		data = append(data, map[string]any{"id": m, "object": "model", "created": 1700000000, "owned_by": "orbit-test"})
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data})
}

// other records whatever else a client asks for and answers 404 in the
// API's error format.
func (s *OpenAIServer) other(w http.ResponseWriter, r *http.Request) {
	s.take(s.record(r, nil))
	writeJSON(w, http.StatusNotFound, map[string]any{"error": map[string]any{
		"message": "model server: no such endpoint " + r.Method + " " + strings.TrimSpace(r.URL.Path), "type": "invalid_request_error"}})
}
