package testkit

import (
	"cmp"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// WireServer is a local stand-in for a model provider's HTTP API: it
// records every request and answers each with the next of its replies,
// which tests write as the real API writes them.
type WireServer struct {
	t   testing.TB
	srv *httptest.Server

	mu       sync.Mutex
	requests []WireRequest
	replies  []WireReply
}

// WireRequest is a request the server received.
type WireRequest struct {
	Method string
	Path   string
	Header http.Header
	Raw    []byte
	Body   map[string]any
}

// WireReply is one scripted answer.
type WireReply struct {
	Status      int
	Body        string
	ContentType string        // default application/json
	Delay       time.Duration // wait this long (or until the client gives up) before answering
}

// NewWireServer starts a server that gives replies in order; it stops when
// the test ends.
func NewWireServer(t testing.TB, replies ...WireReply) *WireServer {
	t.Helper()
	ws := &WireServer{t: t, replies: replies}
	ws.srv = httptest.NewServer(http.HandlerFunc(ws.serve))
	t.Cleanup(ws.srv.Close)
	return ws
}

// URL is the server's base URL.
func (ws *WireServer) URL() string { return ws.srv.URL }

func (ws *WireServer) serve(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	req := WireRequest{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Raw: raw}
	_ = json.Unmarshal(raw, &req.Body)

	ws.mu.Lock()
	ws.requests = append(ws.requests, req)
	var reply WireReply
	if len(ws.replies) > 0 {
		reply, ws.replies = ws.replies[0], ws.replies[1:]
	} else {
		reply = WireReply{Status: http.StatusInternalServerError, Body: `{"error":{"message":"test server: no reply left"}}`}
	}
	ws.mu.Unlock()

	if reply.Delay > 0 {
		select {
		case <-time.After(reply.Delay):
		case <-r.Context().Done():
			return
		}
	}
	w.Header().Set("Content-Type", cmp.Or(reply.ContentType, "application/json"))
	w.WriteHeader(cmp.Or(reply.Status, http.StatusOK))
	_, _ = io.WriteString(w, reply.Body)
}

// Close stops the server: nothing listens at its URL any more.
func (ws *WireServer) Close() { ws.srv.Close() }

// Received returns the requests received so far.
func (ws *WireServer) Received() []WireRequest {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return append([]WireRequest(nil), ws.requests...)
}

// Only returns the one request received, failing the test if there were
// more or none.
func (ws *WireServer) Only() WireRequest {
	ws.t.Helper()
	reqs := ws.Received()
	if len(reqs) != 1 {
		ws.t.Fatalf("the server received %d requests, want 1", len(reqs))
	}
	return reqs[0]
}
