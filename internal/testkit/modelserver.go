package testkit

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
)

// Turn is one scripted answer of a model: text, tool calls, or both (the
// text first). A Turn with Fail set is answered as the API's error instead,
// and one with Hang set is never answered at all.
type Turn struct {
	Text  string
	Tools []ToolUse
	// Fail, when set, is answered as an HTTP error with the API's own error
	// body.
	Fail *APIFailure
	// Hang keeps the request open, unanswered, until the client gives up or
	// the server closes.
	Hang bool
	// Cut ends a streamed answer after its first event, as a dropped
	// connection would: the stream never completes.
	Cut bool
	// Usage is reported for the turn; zero means a small made-up figure.
	InputTokens, OutputTokens int64
}

// ToolUse is a scripted tool call: Name is the tool as the agent offered it
// (Claude Code's "Write", Codex's "shell"), Input its arguments.
type ToolUse struct {
	ID    string // default: derived from the turn and the call's position
	Name  string
	Input any
	// Namespace is the namespace of a Responses API function_call: the
	// name of a tool of type namespace the client offered, Name one of its
	// members (Codex offers an MCP server's tools as the namespace
	// mcp__<server>). Empty for a plain function, and for Anthropic.
	Namespace string
}

// APIFailure is an HTTP error answered in the API's error format.
type APIFailure struct {
	Status  int    // e.g. 500
	Type    string // e.g. "api_error"; default by status
	Message string
}

// ModelRequest is a request as a model server saw it, decoded enough for
// assertions; Raw is the whole body.
type ModelRequest struct {
	Method, Path string
	Header       http.Header
	Model        string
	System       string   // the system prompt (Anthropic system, OpenAI instructions), text parts joined
	Tools        []string // names of the tools offered
	Messages     []json.RawMessage
	Stream       bool
	Scripted     bool // answered from the script (not a side request)
	Raw          []byte
}

// modelServer is what the Anthropic and OpenAI servers share: the script,
// the record and the listener on loopback.
type modelServer struct {
	srv *httptest.Server

	mu       sync.Mutex
	requests []ModelRequest
	turns    []Turn
	next     int
	hung     chan struct{} // closed when the server stops, to release hung requests
}

func newModelServer(turns []Turn) *modelServer {
	return &modelServer{turns: turns, hung: make(chan struct{})}
}

// serve routes each pattern of routes (http.ServeMux patterns) to its
// handler on a loopback port until the test ends.
//
// IMPORTANT: the handlers start answering before serve returns, so the
// server that embeds ms must hold it already.
func (ms *modelServer) serve(t testing.TB, routes map[string]http.HandlerFunc) {
	t.Helper()
	mux := http.NewServeMux()
	for pattern, h := range routes {
		mux.HandleFunc(pattern, h)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("model server: %v", err)
	}
	ms.srv = &httptest.Server{Listener: ln, Config: &http.Server{Handler: mux}}
	ms.srv.Start()
	t.Cleanup(ms.Close)
}

// Close releases hung requests and stops the server; it may be called more
// than once.
func (ms *modelServer) Close() {
	ms.mu.Lock()
	select {
	case <-ms.hung:
	default:
		close(ms.hung)
	}
	ms.mu.Unlock()
	ms.srv.CloseClientConnections()
	ms.srv.Close()
}

// record reads the request's body and stores it.
func (ms *modelServer) record(r *http.Request, decode func(raw []byte, req *ModelRequest)) ModelRequest {
	raw, _ := io.ReadAll(r.Body)
	req := ModelRequest{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Raw: raw}
	if decode != nil && len(raw) > 0 {
		decode(raw, &req)
	}
	return req
}

// take stores the request and, when scripted, hands out the next turn; a
// script that has run out answers with an error that says so.
func (ms *modelServer) take(req ModelRequest) (Turn, int) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	ms.requests = append(ms.requests, req)
	if !req.Scripted {
		return Turn{}, -1
	}
	n := ms.next
	ms.next++
	if n >= len(ms.turns) {
		return Turn{Fail: &APIFailure{Status: http.StatusInternalServerError,
			Message: fmt.Sprintf("model server: the script has %d turns and this is request %d", len(ms.turns), n+1)}}, n
	}
	return ms.turns[n], n
}

// turn records a model request, decoded by decode, and picks its answer:
// the script's next turn when it offers tools (the agent's loop), one of
// sideText when it offers none. A turn that hangs is held here until the
// client leaves or the server stops, and ok is false: there is nothing
// left to answer.
func (ms *modelServer) turn(r *http.Request, decode func(raw []byte, req *ModelRequest), sideText string) (req ModelRequest, turn Turn, n int, ok bool) {
	req = ms.record(r, decode)
	req.Scripted = len(req.Tools) > 0
	turn, n = ms.take(req)
	if !req.Scripted {
		turn = Turn{Text: sideText}
	}
	if turn.Hang {
		ms.hang(r)
		return req, turn, n, false
	}
	return req, turn, n, true
}

// hang holds a request open until the client leaves or the server stops.
func (ms *modelServer) hang(r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-ms.hung:
	}
}

// URL is the server's base URL, http://127.0.0.1:port.
func (ms *modelServer) URL() string { return ms.srv.URL }

// Requests returns every request received so far, side requests included.
func (ms *modelServer) Requests() []ModelRequest {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	return slices.Clone(ms.requests)
}

// Scripted returns the requests answered from the script, in order.
func (ms *modelServer) Scripted() []ModelRequest {
	var out []ModelRequest
	for _, r := range ms.Requests() {
		if r.Scripted {
			out = append(out, r)
		}
	}
	return out
}

// sse writes server-sent events, flushing each.
type sse struct {
	w http.ResponseWriter
	f http.Flusher
}

func newSSE(w http.ResponseWriter) *sse {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	return &sse{w: w, f: f}
}

func (s *sse) event(name string, data any) {
	b, err := json.Marshal(data)
	if err != nil {
		panic(err)
	}
	fmt.Fprintf(s.w, "event: %s\ndata: %s\n\n", name, b)
	if s.f != nil {
		s.f.Flush()
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func inputJSON(v any) string {
	if v == nil {
		return "{}"
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// halves splits s in two, streamed as two deltas so that a client that
// keeps only the last one is caught.
func halves(s string) []string {
	half := len(s) / 2
	return []string{s[:half], s[half:]}
}

func usageOr(v, def int64) int64 {
	if v == 0 {
		return def
	}
	return v
}
