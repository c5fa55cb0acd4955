package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/orbitrun/orbit/assets"
)

// EnvHookToken is the variable that gives `orbit hook codex-pre-tool` its
// invocation's token. Codex hands its own environment to its hooks; the
// commands it runs see the variable empty.
const EnvHookToken = "ORBIT_HOOK_TOKEN"

// Codex's wait for the hook, and the hook's for the engine: the hook gives
// up first, so that it is the hook that answers (with a denial).
const (
	codexHookTimeout  = 120 * time.Second
	hookClientTimeout = 100 * time.Second
)

// codexHookArgs are the options that send every tool call of Codex to
// Orbit's PreToolUse hook first: a command hook, `<orbit> hook
// codex-pre-tool <endpoint>`, given on the command line as the MCP server
// is (`-c hooks.PreToolUse=…`, which Codex 0.169 takes as it takes the
// same table in $CODEX_HOME/hooks.json), the token emptied for the
// commands Codex runs, and the hooks trusted for this invocation (without
// --dangerously-bypass-hook-trust, `codex exec` skips a hook it has not
// been told to trust, and runs the call).
func codexHookArgs(orbit, endpoint string) []string {
	command := shellQuote(orbit) + " hook codex-pre-tool " + shellQuote(endpoint)
	return []string{
		"-c", `hooks.PreToolUse=[{matcher="*",hooks=[{type="command",command=` + tomlString(command) +
			",timeout=" + strconv.Itoa(int(codexHookTimeout/time.Second)) + "}]}]",
		"-c", "shell_environment_policy.set." + EnvHookToken + `=""`,
		"--dangerously-bypass-hook-trust",
	}
}

// shellQuote quotes s as one word of a POSIX shell: Codex runs a hook's
// command through one.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// CodexPreToolHook is `orbit hook codex-pre-tool <endpoint>`, Codex's
// PreToolUse command hook: it hands the call Codex writes on in to the
// invocation's hook endpoint (with token, from EnvHookToken) and writes
// Codex's answer on out: nothing when the call may run, a denial with its
// reason otherwise.
//
// IMPORTANT: it fails closed. Whatever keeps it from the engine's answer
// (no token, the endpoint gone, an answer it cannot read) is a denial
// saying so: a call Orbit did not decide does not run.
func CodexPreToolHook(ctx context.Context, endpoint, token string, in io.Reader, out io.Writer) error {
	answer, err := askHook(ctx, endpoint, token, in)
	if err != nil {
		answer, _ = json.Marshal(denyAnswer("", "Orbit's hook could not decide the call, so it does not run: "+err.Error(), false))
	}
	_, err = out.Write(answer)
	return err
}

// askHook is the engine's answer to the call on in: nil when it may run.
func askHook(ctx context.Context, endpoint, token string, in io.Reader) ([]byte, error) {
	if token == "" {
		return nil, errors.New("no " + EnvHookToken + " in its environment")
	}
	call, err := io.ReadAll(io.LimitReader(in, hookBodyCap))
	if err != nil {
		return nil, fmt.Errorf("reading the call: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, hookClientTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(call))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("the engine answered %s", resp.Status)
	}
	var answer struct {
		Specific *struct {
			Decision string `json:"permissionDecision"`
			Reason   string `json:"permissionDecisionReason"`
		} `json:"hookSpecificOutput"`
	}
	if err := json.Unmarshal(body, &answer); err != nil {
		return nil, fmt.Errorf("the engine's answer: %w", err)
	}
	switch {
	case answer.Specific == nil:
		return nil, nil
	case answer.Specific.Decision != "deny" || answer.Specific.Reason == "":
		return nil, fmt.Errorf("the engine's answer is no decision Codex takes: %s", body)
	}
	return body, nil
}

// codexHookItem is the item a call Codex's hook is asked about stands for:
// Codex names its shell Bash (tool_input.command), a patch apply_patch, and
// an MCP tool mcp__<server>__<tool>.
func codexHookItem(req hookRequest) *codexItem {
	it := &codexItem{ID: req.ToolUseID, Type: req.ToolName}
	var in struct {
		Command string `json:"command"`
		Input   string `json:"input"`
	}
	_ = json.Unmarshal(req.ToolInput, &in)
	switch {
	case req.ToolName == "Bash":
		it.Type, it.Command = "command_execution", in.Command
	case req.ToolName == "apply_patch":
		it.Type, it.Command = "file_change", in.Command+in.Input
		if it.Command == "" {
			_ = json.Unmarshal(req.ToolInput, &it.Command)
		}
	case strings.HasPrefix(req.ToolName, "mcp__"):
		server, tool, ok := strings.Cut(strings.TrimPrefix(req.ToolName, "mcp__"), "__")
		if ok {
			it.Type, it.Server, it.Tool, it.Arguments = "mcp_tool_call", server, tool, req.ToolInput
		}
	}
	// A command that is a patch (apply_patch <<EOF …) is applied by Codex
	// as one, and shown as a file_change.
	for _, c := range patchChanges(it.Command) {
		it.Type = "file_change"
		it.Changes = append(it.Changes, struct {
			Path string `json:"path"`
			Kind string `json:"kind"`
		}{c.path, c.kind})
	}
	return it
}

// codexDecision decides each call Codex's PreToolUse hook asks about,
// before it runs: nothing once the session is closed (a terminal verb was
// called), no MCP tool Orbit did not give, no tool Orbit has no name for,
// and no patch (apply_patch, or a shell command that is one) that writes
// where the allowlist or the workspace's filesystem profile does not let
// it. Codex's sandbox still bounds what a command the hook lets through
// does.
func codexDecision(cfg *CLIConfig, grant assets.CodexGrantData) func(hookRequest) string {
	tc := cfg.hookToolContext()
	return func(req hookRequest) string {
		if closed(cfg.Stop) {
			return closedByVerb
		}
		it := codexHookItem(req)
		switch it.Type {
		case "command_execution", "file_change":
			return patchDenial(tc, grant, it.Command)
		case "mcp_tool_call":
			if it.orbitName(cfg.MCP) == "" {
				return "not in the allowlist: Orbit gave Codex no MCP tool " + it.Server + "/" + it.Tool
			}
			return ""
		}
		return "not in the allowlist: Orbit grants Codex no " + req.ToolName
	}
}

// patchChange is a file a patch changes, and how.
type patchChange struct {
	path string
	kind string // add, update, delete (a move's destination is an add)
}

// patchChanges are the files Codex's patch text changes, by its headers
// (*** Add File: p, *** Update File: p, *** Delete File: p, *** Move to:
// p); none when text holds no patch.
func patchChanges(text string) []patchChange {
	if !strings.Contains(text, "*** Begin Patch") {
		return nil
	}
	var out []patchChange
	for line := range strings.Lines(text) {
		line = strings.TrimSpace(line)
		for prefix, kind := range map[string]string{"*** Add File: ": "add", "*** Update File: ": "update",
			"*** Delete File: ": "delete", "*** Move to: ": "add"} {
			if p, ok := strings.CutPrefix(line, prefix); ok && strings.TrimSpace(p) != "" {
				out = append(out, patchChange{path: strings.TrimSpace(p), kind: kind})
			}
		}
	}
	return out
}

// patchDenial is why the patch in text is refused, "" when it holds none
// or every file it changes may be written.
func patchDenial(tc *ToolContext, grant assets.CodexGrantData, text string) string {
	changes := patchChanges(text)
	if len(changes) == 0 {
		return ""
	}
	if !grant.Writes {
		return "not in the allowlist: no tool that writes was granted (a patch of " + changes[0].path + ")"
	}
	for _, c := range changes {
		if r := writePathDenial(tc, assets.CodexOrbitTool("file_change", c.kind), c.path); r != "" {
			return c.path + ": " + r
		}
	}
	return ""
}

// codexMCPServers are the MCP servers Codex's own configuration starts
// (`codex mcp list --json`, run as the agent would be: its command, its
// environment, its workspace), but Orbit's: each is turned off for the
// invocation (-c mcp_servers.<name>.enabled=false), the nearest Codex has
// to Claude Code's --strict-mcp-config. A configuration Codex cannot list
// gives none; the hook still denies their tools.
func codexMCPServers(ctx context.Context, command, dir string, env []string) []string {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, command, "mcp", "list", "--json")
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.Output()
	if err != nil {
		return nil
	}
	var servers []struct {
		Name    string `json:"name"`
		Enabled bool   `json:"enabled"`
	}
	if json.Unmarshal(out, &servers) != nil {
		return nil
	}
	var names []string
	for _, s := range servers {
		if s.Enabled && s.Name != "" && !slices.Contains(names, s.Name) {
			names = append(names, s.Name)
		}
	}
	return names
}

// codexMCPOff are the -c overrides that turn the servers off, but those
// of Orbit's MCP server (mcp). A name that is no bare TOML key is left on:
// the hook denies its tools.
func codexMCPOff(servers []string, mcp *CLIMCP) []string {
	var args []string
	for _, name := range servers {
		if mcp.gives(name) || strings.ContainsFunc(name, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-')
		}) {
			continue
		}
		args = append(args, "-c", "mcp_servers."+name+".enabled=false")
	}
	return args
}

// gives reports whether the server is Orbit's: one of m's tools is on it.
func (m *CLIMCP) gives(server string) bool {
	if m == nil {
		return false
	}
	for tool := range m.Tools {
		if strings.HasPrefix(tool, "mcp:"+server+"/") {
			return true
		}
	}
	return false
}
