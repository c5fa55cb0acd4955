package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/internal/testkit"
)

// These tests run the real, pinned Claude Code and Codex CLIs (make agents)
// against the scripted wire servers, and keep what they print in
// testdata/cli/*.jsonl: the record shapes the CLI adapters parse. A test
// fails when a CLI's records change shape; -update-cli rewrites the files.

var updateCLI = flag.Bool("update-cli", false, "rewrite testdata/cli/*.jsonl from the real CLIs")

// cliRun is one finished run of a CLI agent.
type cliRun struct {
	stdout, stderr []byte
	exitCode       int
	records        []map[string]any
}

func runAgentCLI(t *testing.T, dir string, env []string, bin string, args ...string) cliRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir, cmd.Env = dir, env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("running %s: %v", filepath.Base(bin), err)
	}
	require.NoError(t, ctx.Err(), "%s ran past 90s; stderr:\n%s", filepath.Base(bin), stderr.String())
	run := cliRun{stdout: stdout.Bytes(), stderr: stderr.Bytes(), exitCode: cmd.ProcessState.ExitCode()}
	for _, line := range bytes.Split(bytes.TrimSpace(run.stdout), []byte("\n")) {
		var rec map[string]any
		require.NoError(t, json.Unmarshal(line, &rec), "a stdout line that is not a JSON record: %s\nstderr:\n%s", line, run.stderr)
		run.records = append(run.records, rec)
	}
	return run
}

// find returns the records whose "type" (and, for Claude, "subtype"; for
// Codex, item.type) match.
func (r cliRun) find(kind string) []map[string]any {
	var out []map[string]any
	for _, rec := range r.records {
		if recordShape(rec) == kind {
			out = append(out, rec)
		}
	}
	return out
}

// recordShape names a record by its type and, where it has one, its subtype
// or its item's type: "system/init", "result/success", "item.completed/agent_message".
func recordShape(rec map[string]any) string {
	kind, _ := rec["type"].(string)
	if sub, ok := rec["subtype"].(string); ok {
		return kind + "/" + sub
	}
	if item, ok := rec["item"].(map[string]any); ok {
		sub, _ := item["type"].(string)
		return kind + "/" + sub
	}
	return kind
}

// keepStream compares the shapes of the run's records with those in
// testdata/cli/<name>.jsonl, or rewrites that file under -update-cli, with
// the paths of this machine replaced by $WORKSPACE and $HOME.
func keepStream(t *testing.T, name string, run cliRun, replace ...string) {
	t.Helper()
	path := filepath.Join("testdata", "cli", name+".jsonl")
	if *updateCLI {
		out := string(run.stdout)
		for i := 0; i+1 < len(replace); i += 2 {
			out = strings.ReplaceAll(out, replace[i], replace[i+1])
		}
		require.NoError(t, os.WriteFile(path, []byte(out), 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run with -update-cli to record it")
	var shapes []string
	for _, line := range bytes.Split(bytes.TrimSpace(want), []byte("\n")) {
		var rec map[string]any
		require.NoError(t, json.Unmarshal(line, &rec), "%s: %s", path, line)
		shapes = append(shapes, recordShape(rec))
	}
	got := make([]string, 0, len(run.records))
	for _, rec := range run.records {
		got = append(got, recordShape(rec))
	}
	assert.Equal(t, shapes, got, "the records differ in shape from %s (a new CLI version?); -update-cli rewrites it", path)
}

// machinePaths are the replacements that keep this machine's paths out of
// testdata: the agent's HOME and its workspace, also as Claude Code spells
// a workspace in the name of a project directory.
func machinePaths(env []string, dir string) []string {
	var home string
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "HOME="); ok {
			home = v
		}
	}
	return []string{home, "$HOME", dir, "$WORKSPACE", strings.ReplaceAll(dir, "/", "-"), "-WORKSPACE"}
}

func claudeArgs(model string, extra ...string) []string {
	return append([]string{"-p", "do the task", "--output-format", "stream-json", "--verbose",
		"--model", model, "--no-session-persistence"}, extra...)
}

func onlyRecord(t *testing.T, run cliRun, kind string) map[string]any {
	t.Helper()
	recs := run.find(kind)
	require.Len(t, recs, 1, "records %s in:\n%s\nstderr:\n%s", kind, run.stdout, run.stderr)
	return recs[0]
}

func TestClaudeCLIReturnsScriptedText(t *testing.T) {
	bin := testkit.ClaudeCLI(t)
	srv := testkit.NewAnthropicServer(t, testkit.Turn{Text: "the scripted answer"})
	dir := t.TempDir()
	env := testkit.ClaudeEnv(t, srv)
	run := runAgentCLI(t, dir, env, bin, claudeArgs("claude-orbit-test")...)

	require.Equal(t, 0, run.exitCode, "stderr:\n%s", run.stderr)
	res := onlyRecord(t, run, "result/success")
	assert.Equal(t, "the scripted answer", res["result"])
	assert.Equal(t, false, res["is_error"])
	assert.Equal(t, "claude-orbit-test", onlyRecord(t, run, "system/init")["model"])
	reqs := srv.Scripted()
	require.Len(t, reqs, 1)
	assert.Equal(t, "claude-orbit-test", reqs[0].Model)
	assert.True(t, reqs[0].Stream, "Claude Code streams")
	// With nonessential traffic off, the turn is all it asks the server:
	// no count_tokens, no model listing, no quota probe.
	assert.Len(t, srv.Requests(), 1)
	keepStream(t, "claude-text", run, machinePaths(env, dir)...)
}

func writeTurns() []testkit.Turn {
	return []testkit.Turn{
		{Tools: []testkit.ToolUse{{Name: "Write", Input: map[string]any{"file_path": "out.txt", "content": "written by the agent\n"}}}},
		{Text: "done"},
	}
}

func TestClaudeCLIWritesWhenWriteIsAllowed(t *testing.T) {
	bin := testkit.ClaudeCLI(t)
	srv := testkit.NewAnthropicServer(t, writeTurns()...)
	dir := t.TempDir()
	env := testkit.ClaudeEnv(t, srv)
	run := runAgentCLI(t, dir, env, bin,
		claudeArgs("claude-orbit-test", "--allowedTools", "Write", "--permission-mode", "dontAsk")...)

	require.Equal(t, 0, run.exitCode, "stderr:\n%s", run.stderr)
	got, err := os.ReadFile(filepath.Join(dir, "out.txt"))
	require.NoError(t, err, "stdout:\n%s", run.stdout)
	assert.Equal(t, "written by the agent\n", string(got))
	res := onlyRecord(t, run, "result/success")
	assert.Empty(t, res["permission_denials"])
	assert.EqualValues(t, 2, res["num_turns"])
	// The second request carries the tool's result back to the model.
	reqs := srv.Scripted()
	require.Len(t, reqs, 2)
	assert.Contains(t, string(reqs[1].Raw), `"tool_result"`)
	keepStream(t, "claude-write-allowed", run, machinePaths(env, dir)...)
}

func TestClaudeCLIDeniesWriteNotAllowed(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"default", nil},
		// dontAsk denies whatever is not allowed, the same way, and never asks.
		{"dontAsk", []string{"--permission-mode", "dontAsk", "--allowedTools", "Read"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bin := testkit.ClaudeCLI(t)
			srv := testkit.NewAnthropicServer(t, writeTurns()...)
			dir := t.TempDir()
			env := testkit.ClaudeEnv(t, srv)
			run := runAgentCLI(t, dir, env, bin, claudeArgs("claude-orbit-test", tc.args...)...)

			require.Equal(t, 0, run.exitCode, "stderr:\n%s", run.stderr)
			assert.NoFileExists(t, filepath.Join(dir, "out.txt"))
			res := onlyRecord(t, run, "result/success")
			denials, _ := res["permission_denials"].([]any)
			require.Len(t, denials, 1, "result: %v", res)
			denial := denials[0].(map[string]any)
			assert.Equal(t, "Write", denial["tool_name"])
			assert.Equal(t, "toolu_001_1", denial["tool_use_id"])
			// The denial is also reported as it happens, before the result.
			live := onlyRecord(t, run, "system/permission_denied")
			assert.Equal(t, "Write", live["tool_name"])
			keepStream(t, "claude-write-denied-"+tc.name, run, machinePaths(env, dir)...)
		})
	}
}

// TestClaudeCLIDenyRuleIsSaidInToolResultMeta: a refusal by a
// --disallowedTools rule has no permission_denied record; the user record's
// tool_result_meta and the result say it. A bare Write rule would allow a
// path outside the workspace; Edit(./**) does not.
func TestClaudeCLIDenyRuleIsSaidInToolResultMeta(t *testing.T) {
	bin := testkit.ClaudeCLI(t)
	outside := filepath.Join(t.TempDir(), "outside.txt")
	srv := testkit.NewAnthropicServer(t, testkit.Turn{Tools: []testkit.ToolUse{
		{Name: "Write", Input: map[string]any{"file_path": ".orbit/x.txt", "content": "x"}},
		{Name: "Write", Input: map[string]any{"file_path": outside, "content": "x"}},
		{Name: "Write", Input: map[string]any{"file_path": "in.txt", "content": "x"}},
	}}, testkit.Turn{Text: "done"})
	dir := t.TempDir()
	env := testkit.ClaudeEnv(t, srv)
	run := runAgentCLI(t, dir, env, bin, claudeArgs("claude-orbit-test", "--permission-mode=dontAsk", "--tools=Write",
		"--allowedTools=Edit(./**)", "--disallowedTools=Edit(./.orbit/**)")...)

	require.Equal(t, 0, run.exitCode, "stderr:\n%s", run.stderr)
	assert.FileExists(t, filepath.Join(dir, "in.txt"))
	assert.NoFileExists(t, filepath.Join(dir, ".orbit", "x.txt"))
	assert.NoFileExists(t, outside)
	assert.Len(t, run.find("system/permission_denied"), 1, "only the path outside the workspace has a record of its own")
	var decisions []string
	for _, rec := range run.find("user") {
		for _, m := range rec["tool_result_meta"].([]any) {
			decisions = append(decisions, m.(map[string]any)["permission_decision"].(map[string]any)["decision"].(string))
		}
	}
	assert.Equal(t, []string{"reject", "reject", "accept"}, decisions)
	denials, _ := onlyRecord(t, run, "result/success")["permission_denials"].([]any)
	assert.Len(t, denials, 2)
	keepStream(t, "claude-write-deny-rule", run, append(machinePaths(env, dir), filepath.Dir(outside), "$ELSEWHERE")...)
}

// TestClaudeCLIPrintsEachMessagesFinalUsageInStreamEvents: an assistant
// record carries the usage of its message's start (1 output token); only
// the message_delta stream event (--include-partial-messages) carries the
// output tokens the server sent, and the result sums those.
func TestClaudeCLIPrintsEachMessagesFinalUsageInStreamEvents(t *testing.T) {
	bin := testkit.ClaudeCLI(t)
	turns := writeTurns()
	turns[0].InputTokens, turns[0].OutputTokens = 300, 37
	turns[1].InputTokens, turns[1].OutputTokens = 400, 53
	srv := testkit.NewAnthropicServer(t, turns...)
	dir := t.TempDir()
	env := testkit.ClaudeEnv(t, srv)
	run := runAgentCLI(t, dir, env, bin, claudeArgs("claude-orbit-test", "--allowedTools", "Write",
		"--permission-mode", "dontAsk", "--include-partial-messages")...)

	require.Equal(t, 0, run.exitCode, "stderr:\n%s", run.stderr)
	var started []float64
	for _, rec := range run.find("assistant") {
		usage := rec["message"].(map[string]any)["usage"].(map[string]any)
		started = append(started, usage["output_tokens"].(float64))
	}
	assert.Equal(t, []float64{1, 1}, started, "an assistant record's usage is its message's start")
	final := map[string]float64{}
	for _, rec := range run.find("stream_event") {
		ev := rec["event"].(map[string]any)
		if ev["type"] == "message_delta" {
			final[rec["api_message_id"].(string)] = ev["usage"].(map[string]any)["output_tokens"].(float64)
		}
	}
	assert.Equal(t, map[string]float64{"msg_001": 37, "msg_002": 53}, final)
	usage := onlyRecord(t, run, "result/success")["usage"].(map[string]any)
	assert.EqualValues(t, 90, usage["output_tokens"])
	assert.EqualValues(t, 700, usage["input_tokens"])
	keepStream(t, "claude-partial-usage", run, machinePaths(env, dir)...)
}

func TestClaudeCLIReportsAPIErrorInResult(t *testing.T) {
	bin := testkit.ClaudeCLI(t)
	srv := testkit.NewAnthropicServer(t, testkit.Turn{Fail: &testkit.APIFailure{Status: 500, Message: "scripted outage"}})
	dir := t.TempDir()
	env := testkit.ClaudeEnv(t, srv)
	run := runAgentCLI(t, dir, env, bin, claudeArgs("claude-orbit-test")...)

	res := run.records[len(run.records)-1]
	assert.Equal(t, "result", res["type"], "the last record is the result")
	assert.Equal(t, true, res["is_error"])
	assert.Contains(t, res["result"], "500")
	assert.Contains(t, res["result"], "scripted outage")
	t.Logf("exit code %d, subtype %v", run.exitCode, res["subtype"])
	keepStream(t, "claude-api-error", run, machinePaths(env, dir)...)
}

func codexArgs(srv *testkit.OpenAIServer, dir, model string, extra ...string) []string {
	args := []string{"exec", "--json", "--model", model, "--sandbox", "workspace-write", "-C", dir, "--skip-git-repo-check"}
	args = append(args, testkit.CodexProviderArgs(srv)...)
	return append(append(args, extra...), "do the task")
}

func TestCodexCLIReturnsScriptedText(t *testing.T) {
	bin := testkit.CodexCLI(t)
	srv := testkit.NewOpenAIServer(t, testkit.Turn{Text: "the scripted answer"})
	dir := t.TempDir()
	env := testkit.CodexEnv(t)
	run := runAgentCLI(t, dir, env, bin, codexArgs(srv, dir, "gpt-orbit-test")...)

	require.Equal(t, 0, run.exitCode, "stderr:\n%s", run.stderr)
	msg := onlyRecord(t, run, "item.completed/agent_message")
	assert.Equal(t, "the scripted answer", msg["item"].(map[string]any)["text"])
	done := onlyRecord(t, run, "turn.completed")
	assert.EqualValues(t, 100, done["usage"].(map[string]any)["input_tokens"])
	reqs := srv.Scripted()
	require.Len(t, reqs, 1)
	assert.Equal(t, "gpt-orbit-test", reqs[0].Model)
	assert.Len(t, srv.Requests(), 1, "Codex asks a custom provider for nothing but the turn")
	keepStream(t, "codex-text", run, machinePaths(env, dir)...)
}

func TestCodexCLIRunsCommandsInItsSandbox(t *testing.T) {
	bin := testkit.CodexCLI(t)
	dir := t.TempDir()
	// A path under no writable root of workspace-write: the sandbox must
	// refuse it.
	probe := outsideWritableRoots(t, dir)
	outside := filepath.Join(probe, "outside.txt")
	// IMPORTANT: the command sleeps. Codex 0.169's exec --json leaves out
	// the command_execution items of a command that ends at once in about
	// half the runs (the command runs and its output reaches the model all
	// the same), so a record of tool calls cannot rest on those items alone.
	srv := testkit.NewOpenAIServer(t,
		testkit.Turn{Tools: []testkit.ToolUse{{Name: "exec_command",
			Input: map[string]any{"cmd": "echo inside > out.txt && sleep 0.5 && echo outside > " + outside}}}},
		testkit.Turn{Text: "done"})
	env := testkit.CodexEnv(t)
	run := runAgentCLI(t, dir, env, bin, codexArgs(srv, dir, "gpt-orbit-test")...)

	require.Equal(t, 0, run.exitCode, "stderr:\n%s", run.stderr)
	got, err := os.ReadFile(filepath.Join(dir, "out.txt"))
	require.NoError(t, err, "stdout:\n%s", run.stdout)
	assert.Equal(t, "inside\n", string(got))
	assert.NoFileExists(t, outside, "workspace-write let a command write outside the workspace")
	item := onlyRecord(t, run, "item.completed/command_execution")["item"].(map[string]any)
	assert.Contains(t, item["aggregated_output"], "Read-only file system")
	assert.NotEqualValues(t, 0, item["exit_code"])
	reqs := srv.Scripted()
	require.Len(t, reqs, 2)
	assert.Contains(t, reqs[0].Tools, "exec_command")
	assert.Contains(t, string(reqs[1].Raw), `"function_call_output"`)
	keepStream(t, "codex-exec", run, append(machinePaths(env, dir), probe, "$OUTSIDE")...)
}

// outsideWritableRoots makes a directory that no writable root of Codex's
// workspace-write covers, and removes it when the test ends. Those roots
// are the workspace (and the other dirs given), $TMPDIR and all of /tmp, so
// a checkout under /tmp is no place for it: the first of the checkout, the
// user's home and /var/tmp that lies under none of them and where the test
// may write is taken.
func outsideWritableRoots(t *testing.T, workspaces ...string) string {
	t.Helper()
	writable := append([]string{"/tmp", os.TempDir()}, workspaces...)
	candidates := []string{testkit.ModuleRoot(t), "/var/tmp"}
	if home, err := os.UserHomeDir(); err == nil {
		candidates = slices.Insert(candidates, 1, home)
	}
	for _, c := range candidates {
		if slices.ContainsFunc(writable, func(root string) bool { return within(c, root) }) {
			continue
		}
		dir, err := os.MkdirTemp(c, ".codex-sandbox-probe-")
		if err != nil {
			continue
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		return dir
	}
	t.Skipf("no directory outside %v to probe the sandbox with among %v", writable, candidates)
	return ""
}

// within reports whether path is root or lies under it, symbolic links
// resolved.
func within(path, root string) bool {
	resolve := func(p string) string {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return r
		}
		return filepath.Clean(p)
	}
	rel, err := filepath.Rel(resolve(root), resolve(path))
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

func TestCodexCLIReportsAPIError(t *testing.T) {
	bin := testkit.CodexCLI(t)
	srv := testkit.NewOpenAIServer(t, testkit.Turn{Fail: &testkit.APIFailure{Status: 500, Message: "scripted outage"}})
	dir := t.TempDir()
	env := testkit.CodexEnv(t)
	run := runAgentCLI(t, dir, env, bin, codexArgs(srv, dir, "gpt-orbit-test")...)

	assert.NotEqual(t, 0, run.exitCode)
	// Codex words a 500 its own way ("high demand"), not with the body's message.
	failed := onlyRecord(t, run, "turn.failed")
	assert.NotEmpty(t, failed["error"].(map[string]any)["message"])
	assert.Len(t, srv.Scripted(), 1, "no retries")
	assert.True(t, slices.ContainsFunc(run.records, func(r map[string]any) bool { return r["type"] == "error" }))
	keepStream(t, "codex-api-error", run, machinePaths(env, dir)...)
}

// TestCodexCLIRecoversFromACutStream: with a retry allowed, Codex reports
// a stream cut short as an error record ("Reconnecting… 1/1"), tries again,
// and completes the turn, exiting 0: an error record is not the end of a
// Codex session.
func TestCodexCLIRecoversFromACutStream(t *testing.T) {
	bin := testkit.CodexCLI(t)
	srv := testkit.NewOpenAIServer(t, testkit.Turn{Cut: true}, testkit.Turn{Text: "recovered"})
	dir := t.TempDir()
	env := testkit.CodexEnv(t)
	run := runAgentCLI(t, dir, env, bin, codexArgs(srv, dir, "gpt-orbit-test", "-c", "model_providers.orbit-test.request_max_retries=1",
		"-c", "model_providers.orbit-test.stream_max_retries=1")...)

	require.Equal(t, 0, run.exitCode, "stderr:\n%s", run.stderr)
	assert.Len(t, srv.Scripted(), 2)
	msg := onlyRecord(t, run, "item.completed/agent_message")
	assert.Equal(t, "recovered", msg["item"].(map[string]any)["text"])
	onlyRecord(t, run, "turn.completed")
	assert.Empty(t, run.find("turn.failed"))
	errs := run.find("error")
	require.Len(t, errs, 1, "the reconnect is said")
	assert.Contains(t, errs[0]["message"], "Reconnecting")
	keepStream(t, "codex-recovered", run, machinePaths(env, dir)...)
}

// TestCodexCLIPreToolUseHookDeniesBeforeTheCommand: Codex 0.169 runs the
// PreToolUse command hooks of $CODEX_HOME/hooks.json (Claude Code's layout
// and answer) when told to trust them for the invocation. The hook is
// given the shell call as Bash with its command and the call's id; a deny
// stops the command before it starts (its file is never written), the
// model hears the hook's reason, and the JSONL stream shows no item for
// the call at all: a denial is on no record but the hook's own.
func TestCodexCLIPreToolUseHookDeniesBeforeTheCommand(t *testing.T) {
	bin := testkit.CodexCLI(t)
	srv := testkit.NewOpenAIServer(t,
		testkit.Turn{Tools: []testkit.ToolUse{{ID: "call_write", Name: "exec_command", Input: map[string]any{"cmd": "sleep 0.3 && echo hi > out.txt"}}}},
		testkit.Turn{Text: "done"})
	dir := t.TempDir()
	env := testkit.CodexEnv(t)
	var home string
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "CODEX_HOME="); ok {
			home = v
		}
	}
	scratch := t.TempDir()
	input := filepath.Join(scratch, "hook-input.json")
	hook := filepath.Join(scratch, "hook.sh")
	require.NoError(t, os.WriteFile(hook, []byte("#!/bin/sh\ncat > "+input+"\n"+
		`echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"denied by the test hook"}}'`+"\n"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(home, "hooks.json"),
		[]byte(`{"hooks":{"PreToolUse":[{"matcher":"*","hooks":[{"type":"command","command":"`+hook+`"}]}]}}`), 0o644))

	run := runAgentCLI(t, dir, env, bin, codexArgs(srv, dir, "gpt-orbit-test", "--dangerously-bypass-hook-trust")...)

	require.Equal(t, 0, run.exitCode, "stderr:\n%s", run.stderr)
	assert.NoFileExists(t, filepath.Join(dir, "out.txt"), "the denied command never ran")
	var given struct {
		Event     string `json:"hook_event_name"`
		ToolName  string `json:"tool_name"`
		ToolUseID string `json:"tool_use_id"`
		ToolInput struct {
			Command string `json:"command"`
		} `json:"tool_input"`
	}
	b, err := os.ReadFile(input)
	require.NoError(t, err, "the hook ran")
	require.NoError(t, json.Unmarshal(b, &given), "%s", b)
	assert.Equal(t, "PreToolUse", given.Event)
	assert.Equal(t, "Bash", given.ToolName)
	assert.Equal(t, "call_write", given.ToolUseID)
	assert.Equal(t, "sleep 0.3 && echo hi > out.txt", given.ToolInput.Command)
	assert.Empty(t, run.find("item.started/command_execution"), "no item for the denied call")
	assert.Empty(t, run.find("item.completed/command_execution"))
	reqs := srv.Scripted()
	require.Len(t, reqs, 2)
	last := string(reqs[1].Messages[len(reqs[1].Messages)-1])
	assert.Contains(t, last, "call_write")
	assert.Contains(t, last, "denied by the test hook", "the model hears the hook's reason")
}
