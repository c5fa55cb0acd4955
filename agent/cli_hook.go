package agent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"time"
)

// hookRequest is what an agent's PreToolUse hook is given: the call it is
// about to make.
type hookRequest struct {
	ToolName  string          `json:"tool_name"`
	ToolInput json.RawMessage `json:"tool_input"`
	ToolUseID string          `json:"tool_use_id"`
}

// preToolHook is the engine's side of an agent's PreToolUse hook: a
// loopback HTTP endpoint, private to one invocation, that decides each call
// before the agent runs it. A denial is answered to the agent (which then
// does not run the call and tells the model the reason) and kept, by the
// call's id, for the adapter's stream to record as tool.denied.
//
// IMPORTANT: the URL holds a random token: another local process that finds
// the port still cannot ask, nor learn what was decided.
type preToolHook struct {
	decide func(req hookRequest) string // the reason a call is denied, "" when it may run
	stop   func() bool                  // whether a denial also ends the session

	ln  net.Listener
	srv *http.Server
	url string

	mu     sync.Mutex
	denied map[string]string // tool_use_id → reason
}

// hookBodyCap is the largest call a hook reads: a tool's input is the
// model's, and a write's content can be large.
const hookBodyCap = 64 << 20

func startPreToolHook(decide func(hookRequest) string, stop func() bool) (*preToolHook, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("the agent's hook endpoint: %w", err)
	}
	token := make([]byte, 16)
	_, _ = rand.Read(token)
	h := &preToolHook{decide: decide, stop: stop, ln: ln, denied: map[string]string{}}
	path := "/pre-tool/" + hex.EncodeToString(token)
	h.url = "http://" + ln.Addr().String() + path
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+path, h.serve)
	h.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = h.srv.Serve(ln) }()
	return h, nil
}

func (h *preToolHook) serve(w http.ResponseWriter, r *http.Request) {
	var req hookRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, hookBodyCap)).Decode(&req); err != nil {
		// Fail closed: a call the hook cannot read does not run.
		req = hookRequest{}
	}
	reason := "the call could not be read by Orbit's hook"
	if req.ToolName != "" {
		reason = h.decide(req)
	}
	w.Header().Set("Content-Type", "application/json")
	if reason == "" {
		_, _ = w.Write([]byte("{}"))
		return
	}
	h.mu.Lock()
	h.denied[req.ToolUseID] = reason
	h.mu.Unlock()
	out := map[string]any{"hookSpecificOutput": map[string]any{
		"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": reason,
	}}
	if h.stop() {
		out["continue"], out["stopReason"] = false, "Orbit denied "+req.ToolName+": "+reason
	}
	_ = json.NewEncoder(w).Encode(out)
}

// reason is why the hook denied the call id, if it did.
func (h *preToolHook) reason(id string) (string, bool) {
	if h == nil {
		return "", false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	r, ok := h.denied[id]
	return r, ok
}

// ids are the calls the hook denied.
func (h *preToolHook) ids() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]string, 0, len(h.denied))
	for id := range h.denied {
		out = append(out, id)
	}
	return out
}

func (h *preToolHook) close() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := h.srv.Shutdown(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		_ = h.srv.Close()
	}
	_ = h.srv.Close()
}

// claudeCodeHookSettings is the --settings JSON that sends every tool call
// of Claude Code to the hook first. onFailure block: a hook that cannot be
// reached stops the call rather than letting it run.
func claudeCodeHookSettings(url string) string {
	b, _ := json.Marshal(map[string]any{"hooks": map[string]any{"PreToolUse": []any{map[string]any{
		"hooks": []any{map[string]any{"type": "http", "url": url, "timeout": 30, "onFailure": "block"}},
	}}}})
	return string(b)
}

// writePathDenial is why a write to path (absolute, as Claude Code gives
// it, or relative to the workspace) is refused by the profile, or "".
func writePathDenial(tc *ToolContext, tool, path string) string {
	if path == "" {
		return ""
	}
	rel := path
	if filepath.IsAbs(path) {
		r, ok := insideDir(tc.Workspace, filepath.Clean(path))
		if !ok {
			if root, err := filepath.EvalSymlinks(tc.Workspace); err == nil {
				r, ok = insideDir(root, filepath.Clean(path))
			}
		}
		if !ok {
			return "outside the workspace"
		}
		rel = r
	}
	_, err := resolvePath(tc, tool, rel, accessWrite)
	var d *DeniedError
	if errors.As(err, &d) {
		return d.Reason
	}
	if err != nil {
		return err.Error()
	}
	return ""
}
