package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/internal/testkit"
)

// deniedAnswer reads a hook's answer: its reason when it denies, "" when
// it says nothing.
func deniedAnswer(t *testing.T, out []byte) string {
	t.Helper()
	if len(out) == 0 {
		return ""
	}
	var a struct {
		Specific struct {
			Event    string `json:"hookEventName"`
			Decision string `json:"permissionDecision"`
			Reason   string `json:"permissionDecisionReason"`
		} `json:"hookSpecificOutput"`
		Continue *bool `json:"continue"`
	}
	require.NoError(t, json.Unmarshal(out, &a), "%s", out)
	assert.Equal(t, "PreToolUse", a.Specific.Event)
	assert.Equal(t, "deny", a.Specific.Decision)
	assert.Nil(t, a.Continue, "Codex refuses continue: false from a PreToolUse hook")
	return a.Specific.Reason
}

// TestTheHookEndpointAnswersOnlyItsToken: the endpoint answers a call
// that carries the invocation's token as a bearer token (Claude Code's
// http hook and orbit hook codex-pre-tool alike), and nothing else: no
// token, another token, the token in the path (which would put it on
// Claude Code's command line), a GET, a browser's form post.
func TestTheHookEndpointAnswersOnlyItsToken(t *testing.T) {
	asked := 0
	h, err := startPreToolHook(hookConfig{decide: func(hookRequest) string { asked++; return "" }})
	require.NoError(t, err)
	defer h.close()
	call := `{"tool_name":"Bash","tool_input":{"command":"ls"},"tool_use_id":"c1"}`
	post := func(url, auth, contentType string) int {
		req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(call))
		require.NoError(t, err)
		req.Header.Set("Content-Type", contentType)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	assert.Equal(t, http.StatusOK, post(h.endpoint, "Bearer "+h.token, "application/json"))
	assert.Equal(t, 1, asked)
	assert.Equal(t, http.StatusForbidden, post(h.endpoint+"/"+h.token, "", "application/json"), "the token in the path")
	assert.Equal(t, http.StatusForbidden, post(h.endpoint+"/"+h.token, "Bearer "+h.token, "application/json"), "another path")
	assert.Equal(t, http.StatusForbidden, post(h.endpoint, "", "application/json"))
	assert.Equal(t, http.StatusForbidden, post(h.endpoint, "Bearer "+strings.Repeat("0", len(h.token)), "application/json"))
	assert.Equal(t, http.StatusForbidden, post(h.endpoint+"/"+strings.Repeat("0", len(h.token)), "", "application/json"))
	assert.Equal(t, http.StatusForbidden, post(h.endpoint, "", "text/plain"), "a page's form post")
	get, err := http.NewRequest(http.MethodGet, h.endpoint, nil)
	require.NoError(t, err)
	get.Header.Set("Authorization", "Bearer "+h.token)
	resp, err := http.DefaultClient.Do(get)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
	assert.Equal(t, 1, asked, "nothing without the token as a bearer token was decided")
}

// TestTheHookDecidesEachCallOnce: the agent's own shell can hold the
// token (Claude Code's Bash does), so a request with it is no proof that
// the CLI asks. The hook decides a call id once: a second request for a
// call it let run (a forged denial of a call that ran) or denied (a
// replay), and a request with no call id, are each denied and kept as
// refused, and none of them is a denial of the call it names.
func TestTheHookDecidesEachCallOnce(t *testing.T) {
	asked := 0
	h, err := startPreToolHook(hookConfig{decide: func(req hookRequest) string {
		asked++
		if req.ToolName == "Bash" {
			return ""
		}
		return "not in the allowlist: " + req.ToolName
	}})
	require.NoError(t, err)
	defer h.close()
	ask := func(call string) string {
		var out bytes.Buffer
		require.NoError(t, CodexPreToolHook(context.Background(), h.endpoint, h.token, strings.NewReader(call), &out))
		return deniedAnswer(t, out.Bytes())
	}
	assert.Empty(t, ask(`{"tool_name":"Bash","tool_input":{"command":"ls"},"tool_use_id":"ran"}`))
	assert.Equal(t, "not in the allowlist: Write", ask(`{"tool_name":"Write","tool_input":{},"tool_use_id":"denied"}`))

	assert.Equal(t, refusedDecided, ask(`{"tool_name":"Write","tool_input":{},"tool_use_id":"ran"}`), "a forged denial of a call that ran")
	assert.Equal(t, refusedDecided, ask(`{"tool_name":"Write","tool_input":{},"tool_use_id":"denied"}`), "a replay")
	assert.Equal(t, refusedNoID, ask(`{"tool_name":"Write","tool_input":{}}`))
	assert.Equal(t, refusedUnread, ask(`not json`))
	assert.Equal(t, 2, asked, "only the first request for each call was decided")

	_, ran := h.reason("ran")
	assert.False(t, ran, "the call that ran is no denial")
	assert.Equal(t, []string{"denied"}, h.ids())
	var got []string
	for _, r := range h.takeRefusals() {
		got = append(got, r.req.ToolUseID+" "+r.req.ToolName+": "+r.reason)
	}
	assert.Equal(t, []string{"ran Write: " + refusedDecided, "denied Write: " + refusedDecided,
		" Write: " + refusedNoID, " : " + refusedUnread}, got)
	assert.Empty(t, h.takeRefusals(), "each refusal is taken once")
}

// TestCodexPreToolHookAnswersAsTheEngineDecides: the hook command prints
// nothing for a call the engine lets run, the engine's denial for one it
// refuses, and a denial of its own when it cannot ask: no token, the
// endpoint gone.
func TestCodexPreToolHookAnswersAsTheEngineDecides(t *testing.T) {
	h, err := startPreToolHook(hookConfig{decide: func(req hookRequest) string {
		if req.ToolName == "Bash" {
			return ""
		}
		return "not in the allowlist: Orbit grants Codex no " + req.ToolName
	}})
	require.NoError(t, err)
	defer h.close()
	ask := func(endpoint, token, call string) string {
		var out bytes.Buffer
		require.NoError(t, CodexPreToolHook(context.Background(), endpoint, token, strings.NewReader(call), &out))
		return deniedAnswer(t, out.Bytes())
	}
	bash := `{"tool_name":"Bash","tool_input":{"command":"ls"},"tool_use_id":"c1"}`
	assert.Empty(t, ask(h.endpoint, h.token, bash))
	assert.Equal(t, "not in the allowlist: Orbit grants Codex no view_image",
		ask(h.endpoint, h.token, `{"tool_name":"view_image","tool_input":{},"tool_use_id":"c2"}`))
	assert.Contains(t, ask(h.endpoint, "", bash), "no ORBIT_HOOK_TOKEN")
	assert.Contains(t, ask(h.endpoint, "wrong", bash), "403 Forbidden")
	assert.Equal(t, refusedUnread, ask(h.endpoint, h.token, "not json"))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	gone := "http://" + ln.Addr().String() + hookPath
	ln.Close()
	assert.Contains(t, ask(gone, h.token, bash), "could not decide the call, so it does not run")
}

// TestCodexDecision: what Codex's hook refuses before it runs.
func TestCodexDecision(t *testing.T) {
	ws := t.TempDir()
	writes, err := assets.CodexGrant([]string{"fs.read", "fs.write"})
	require.NoError(t, err)
	reads, err := assets.CodexGrant([]string{"fs.read"})
	require.NoError(t, err)
	docs := FSProfile{Name: "docs_writer", Read: []string{"**"}, Write: []string{"docs/**"}}
	mcp := &CLIMCP{Tools: map[string]string{"mcp:orbit/checkpoint_success": "orbit.groundhog.checkpoint_success"}}
	patch := func(path string) string {
		return `{"command":"apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: ` + path + `\n+x\n*** End Patch\nEOF\n"}`
	}
	stop := make(chan struct{})
	close(stop)
	for name, tc := range map[string]struct {
		cfg    *CLIConfig
		grant  assets.CodexGrantData
		tool   string
		input  string
		reason string
	}{
		"a command":                       {&CLIConfig{}, reads, "Bash", `{"command":"ls"}`, ""},
		"a patch the profile allows":      {&CLIConfig{Profile: &docs}, writes, "Bash", patch("docs/a.md"), ""},
		"a patch outside its write globs": {&CLIConfig{Profile: &docs}, writes, "Bash", patch("src/a.go"), `src/a.go: not in fsProfile "docs_writer" write globs [docs/**]`},
		"a patch of .git":                 {&CLIConfig{}, writes, "Bash", patch(".git/config"), ".git/config: "},
		"a patch outside the workspace":   {&CLIConfig{}, writes, "apply_patch", patch("/etc/passwd"), "/etc/passwd: outside the workspace"},
		"a patch with no write granted":   {&CLIConfig{}, reads, "Bash", patch("a.txt"), "not in the allowlist: no tool that writes was granted (a patch of a.txt)"},
		"Orbit's MCP tool":                {&CLIConfig{MCP: mcp}, reads, "mcp__orbit__checkpoint_success", `{}`, ""},
		"another MCP tool":                {&CLIConfig{MCP: mcp}, reads, "mcp__users__drop_tables", `{}`, "not in the allowlist: Orbit gave Codex no MCP tool users/drop_tables"},
		"a tool Orbit has no name for":    {&CLIConfig{}, reads, "view_image", `{}`, "not in the allowlist: Orbit grants Codex no view_image"},
		"anything after a terminal verb":  {&CLIConfig{MCP: mcp, Stop: stop}, reads, "mcp__orbit__checkpoint_success", `{}`, closedByVerb},
	} {
		t.Run(name, func(t *testing.T) {
			tc.cfg.Workspace = ws
			got := codexDecision(tc.cfg, tc.grant)(hookRequest{ToolName: tc.tool, ToolInput: json.RawMessage(tc.input), ToolUseID: "c"})
			if tc.reason == "" {
				assert.Empty(t, got)
				return
			}
			assert.True(t, strings.HasPrefix(got, tc.reason), "%q does not begin with %q", got, tc.reason)
		})
	}
}

// FuzzPatchChanges: whatever a command says, reading it as a patch
// neither panics nor names a file with no path or of no kind.
func FuzzPatchChanges(f *testing.F) {
	f.Add("apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: a\n+x\n*** Update File: b\n*** Move to: c\n@@\n-a\n+b\n*** Delete File: d\n*** End Patch\nEOF\n")
	f.Add("*** Begin Patch\n*** Add File: \n")
	f.Add("echo '*** Add File: x'")
	f.Fuzz(func(t *testing.T, text string) {
		for _, c := range patchChanges(text) {
			if c.path == "" || strings.TrimSpace(c.path) != c.path {
				t.Fatalf("path %q", c.path)
			}
			if assets.CodexOrbitTool("file_change", c.kind) == "" {
				t.Fatalf("kind %q", c.kind)
			}
		}
	})
}

// TestCodexHookFailsClosedWhenTheEngineIsGone: the real Codex with
// Orbit's hook (this test binary, as orbit hook codex-pre-tool) whose
// endpoint no longer answers: the command is refused, never runs, and the
// model hears why.
func TestCodexHookFailsClosedWhenTheEngineIsGone(t *testing.T) {
	bin := testkit.CodexCLI(t)
	srv := testkit.NewOpenAIServer(t,
		testkit.Turn{Tools: []testkit.ToolUse{{ID: "call_write", Name: "exec_command", Input: map[string]any{"cmd": "sleep 0.3 && echo hi > out.txt"}}}},
		testkit.Turn{Text: "done"})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	gone := "http://" + ln.Addr().String() + hookPath
	ln.Close()
	self, err := os.Executable()
	require.NoError(t, err)
	dir := t.TempDir()
	args := append([]string{"exec", "--json", "--ephemeral", "--model", "gpt-orbit-test", "--sandbox", "workspace-write", "-C", dir,
		"--skip-git-repo-check"}, testkit.CodexProviderArgs(srv)...)
	args = append(append(args, codexHookArgs(self, gone)...), "do the task")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir, cmd.Env = dir, append(testkit.CodexEnv(t), EnvHookToken+"=a-token")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)

	assert.NoFileExists(t, filepath.Join(dir, "out.txt"), "the command never ran")
	assert.NotContains(t, string(out), `"command_execution"`, "no item for the refused call")
	reqs := srv.Scripted()
	require.Len(t, reqs, 2)
	last := string(reqs[1].Messages[len(reqs[1].Messages)-1])
	assert.Contains(t, last, "call_write")
	assert.Contains(t, last, "could not decide the call, so it does not run", "the model hears the hook's reason")
}

// TestCodexHookArgs: the hook's command is the orbit executable given,
// quoted for the shell Codex runs it through (a path with a space and a
// quote still names it), inside a TOML string; the token is emptied for
// Codex's commands and the hook trusted.
func TestCodexHookArgs(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "it's here")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	orbit := filepath.Join(dir, "orbit")
	require.NoError(t, os.WriteFile(orbit, []byte("#!/bin/sh\nprintf '%s|' \"$@\"\n"), 0o755))
	args := codexHookArgs(orbit, "http://127.0.0.1:1/pre-tool")
	require.Len(t, args, 5)
	assert.Equal(t, []string{"-c", `shell_environment_policy.set.ORBIT_HOOK_TOKEN=""`, "--dangerously-bypass-hook-trust"}, args[2:])
	table, ok := strings.CutPrefix(args[1], `hooks.PreToolUse=[{matcher="*",hooks=[{type="command",command=`)
	require.True(t, ok, args[1])
	quoted, ok := strings.CutSuffix(table, ",timeout=120}]}]")
	require.True(t, ok, args[1])
	var command string
	require.NoError(t, json.Unmarshal([]byte(quoted), &command), "a TOML basic string is JSON's")
	out, err := exec.Command("/bin/sh", "-c", command).Output()
	require.NoError(t, err)
	assert.Equal(t, "hook|codex-pre-tool|http://127.0.0.1:1/pre-tool|", string(out))
}

// TestCodexMCPOff: every server of the user's but Orbit's is turned off;
// one whose name is no bare TOML key is left to the hook.
func TestCodexMCPOff(t *testing.T) {
	mcp := &CLIMCP{Tools: map[string]string{"mcp:orbit/checkpoint_success": "orbit.groundhog.checkpoint_success"}}
	assert.Equal(t, []string{"-c", "mcp_servers.users.enabled=false", "-c", "mcp_servers.my-fs_2.enabled=false"},
		codexMCPOff([]string{"users", "orbit", "my-fs_2", "a.b", `x"y`}, mcp))
	assert.Equal(t, []string{"-c", "mcp_servers.orbit.enabled=false"}, codexMCPOff([]string{"orbit"}, nil),
		"a server of the user's named orbit, when Orbit gives none")
}
