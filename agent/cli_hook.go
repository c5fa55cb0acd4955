package agent

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
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
// call's id, for the adapter's stream to record as tool.denied; where the
// agent's stream never shows a denied call (Codex), the hook records it
// itself (hookConfig.denied).
//
// IMPORTANT: a call is answered only with the invocation's random token
// as a bearer token, which both agents send from EnvHookToken in their
// environment: Claude Code's http hook names the variable in a header
// (claudeCodeHookSettings), `orbit hook codex-pre-tool` reads it. So the
// token is on no command line, in no settings Orbit writes and in no
// record. Another local process that finds the port still cannot ask,
// nor learn what was decided; a web page cannot send the header without
// a preflight the endpoint never answers.
//
// IMPORTANT: the token is no proof that the agent's CLI asks. Claude
// Code's Bash tool has it in its environment, so the agent can post calls
// of its own. The hook therefore decides each call id once: a request
// with no call id, or for a call already decided (a replay, or a forgery
// naming a call that ran), is denied and kept as refused (refusals),
// never recorded against the call it names. A denial for an id the
// agent's stream never showed is the stream's to refuse
// (claudeStream.hookDenials).
type preToolHook struct {
	hookConfig

	ln       net.Listener
	srv      *http.Server
	endpoint string // the token goes in the Authorization header
	token    string
	exited   chan struct{} // closed once the agent has exited
	exit     sync.Once

	mu      sync.Mutex
	decided map[string]string // every tool_use_id asked about → its tool_name
	denied  map[string]string // tool_use_id → reason
	refused []hookRefusal
}

// hookRefusal is a request to the hook that was not taken as a call of the
// agent's, and why.
type hookRefusal struct {
	req    hookRequest
	reason string
}

// Why a request is refused.
const (
	refusedUnread  = "the call could not be read by Orbit's hook"
	refusedNoID    = "the call has no tool_use_id"
	refusedDecided = "a second request for a call the hook already decided (replayed or forged): refused"
	refusedUnseen  = "a denial asked for a call the agent's output never showed (forged): refused"
)

// hookConfig is what an invocation's hook does with a call.
type hookConfig struct {
	// decide is the reason a call is denied, "" when it may run.
	decide func(req hookRequest) string
	// stop, if set, reports whether a denial also ends the session through
	// the answer (continue: false, which Claude Code honours and Codex
	// refuses).
	stop func() bool
	// denied, if set, records a denial as it is answered and reports
	// whether the agent is being stopped for it: the answer then waits for
	// the agent to be gone (exited), so that it can start nothing more.
	denied func(req hookRequest, reason string) bool
}

// hookBodyCap is the largest call a hook reads: a tool's input is the
// model's, and a write's content can be large.
const hookBodyCap = 64 << 20

func startPreToolHook(cfg hookConfig) (*preToolHook, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("the agent's hook endpoint: %w", err)
	}
	token := make([]byte, 16)
	_, _ = rand.Read(token)
	h := &preToolHook{hookConfig: cfg, ln: ln, token: hex.EncodeToString(token), exited: make(chan struct{}),
		decided: map[string]string{}, denied: map[string]string{}}
	h.endpoint = "http://" + ln.Addr().String() + hookPath
	h.srv = &http.Server{Handler: http.HandlerFunc(h.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = h.srv.Serve(ln) }()
	return h, nil
}

// hookPath is the path of the hook's endpoint.
const hookPath = "/pre-tool"

// authorized reports whether r carries the invocation's token as its
// bearer token, at the endpoint's own path.
func (h *preToolHook) authorized(r *http.Request) bool {
	given, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && r.URL.Path == hookPath && subtle.ConstantTimeCompare([]byte(given), []byte(h.token)) == 1
}

func (h *preToolHook) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || !h.authorized(r) {
		http.Error(w, "forbidden", http.StatusForbidden)
		return
	}
	var req hookRequest
	w.Header().Set("Content-Type", "application/json")
	// Fail closed: a call the hook does not take does not run.
	if why := h.admit(http.MaxBytesReader(w, r.Body, hookBodyCap), &req); why != "" {
		_ = json.NewEncoder(w).Encode(denyAnswer(req.ToolName, why, false))
		return
	}
	reason := h.decide(req)
	if reason == "" {
		_, _ = w.Write([]byte("{}"))
		return
	}
	h.mu.Lock()
	h.denied[req.ToolUseID] = reason
	h.mu.Unlock()
	if h.hookConfig.denied != nil && h.hookConfig.denied(req, reason) {
		select {
		case <-h.exited:
		case <-r.Context().Done():
		}
	}
	_ = json.NewEncoder(w).Encode(denyAnswer(req.ToolName, reason, h.stop != nil && h.stop()))
}

// admit reads the call in body into req and takes it as the first
// request for its call id, or says why not (and keeps the refusal).
func (h *preToolHook) admit(body io.Reader, req *hookRequest) string {
	why := ""
	switch err := json.NewDecoder(body).Decode(req); {
	case err != nil || req.ToolName == "":
		why = refusedUnread
	case req.ToolUseID == "":
		why = refusedNoID
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.decided[req.ToolUseID]; ok && why == "" {
		why = refusedDecided
	}
	if why != "" {
		h.refused = append(h.refused, hookRefusal{req: *req, reason: why})
		return why
	}
	h.decided[req.ToolUseID] = req.ToolName
	return ""
}

// refuse takes back the hook's denial of the call id and keeps it as
// refused for reason: the agent's stream never showed the call.
func (h *preToolHook) refuse(id, reason string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.refused = append(h.refused, hookRefusal{req: hookRequest{ToolUseID: id, ToolName: h.decided[id]}, reason: reason})
	delete(h.denied, id)
}

// takeRefusals are the requests refused since it was last asked.
func (h *preToolHook) takeRefusals() []hookRefusal {
	if h == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	out := h.refused
	h.refused = nil
	return out
}

// denyAnswer is a PreToolUse hook's refusal of a call of tool, in the
// layout Claude Code and Codex share; end adds continue: false.
func denyAnswer(tool, reason string, end bool) map[string]any {
	out := map[string]any{"hookSpecificOutput": map[string]any{
		"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": reason,
	}}
	if end {
		out["continue"], out["stopReason"] = false, "Orbit denied "+tool+": "+reason
	}
	return out
}

// agentExited tells the hook that the agent is gone: answers held for its
// end are given.
func (h *preToolHook) agentExited() {
	h.exit.Do(func() { close(h.exited) })
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
	h.agentExited()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := h.srv.Shutdown(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		_ = h.srv.Close()
	}
	_ = h.srv.Close()
}

// claudeCodeHookSettings is the --settings JSON that sends every tool call
// of Claude Code to the hook at endpoint first, with the token as a bearer
// token that Claude Code reads from EnvHookToken in its environment (a
// header's $VAR is filled only from the variables allowedEnvVars lists).
// onFailure block: a hook that cannot be reached stops the call rather
// than letting it run.
func claudeCodeHookSettings(endpoint string) string {
	b, _ := json.Marshal(map[string]any{"hooks": map[string]any{"PreToolUse": []any{map[string]any{
		"hooks": []any{map[string]any{"type": "http", "url": endpoint, "timeout": 30, "onFailure": "block",
			"headers": map[string]string{"Authorization": "Bearer $" + EnvHookToken}, "allowedEnvVars": []string{EnvHookToken}}},
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
