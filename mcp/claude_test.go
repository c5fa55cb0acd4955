package mcp_test

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/groundhog"
	"github.com/orbitrun/orbit/internal/testkit"
	"github.com/orbitrun/orbit/mcp"
)

// TestClaudeCodeClosesAnAttemptThroughMCP: the real Claude Code, given
// the --mcp-config that mcp writes, starts `orbit mcp` and calls
// mcp__orbit__checkpoint_success as the scripted model asks; the verb
// reaches the attempt's session in the engine, and the model is given the
// session's answer.
func TestClaudeCodeClosesAnAttemptThroughMCP(t *testing.T) {
	t.Parallel()
	bin := testkit.ClaudeCLI(t)
	l := startLive(t)
	s := l.dayOne()
	got := session(t, s, 1)

	srv := testkit.NewAnthropicServer(t,
		testkit.Turn{Tools: []testkit.ToolUse{{Name: "mcp__orbit__checkpoint_success", Input: map[string]any{"summary": "one.txt is there"}}}},
		testkit.Turn{Text: "done"},
	)
	dir := t.TempDir()
	config := filepath.Join(t.TempDir(), "mcp.json")
	require.NoError(t, mcp.WriteClaudeConfig(config, l.scope(s)))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-p", "close the checkpoint", "--output-format", "stream-json", "--verbose",
		"--model", "claude-orbit-test", "--no-session-persistence",
		"--mcp-config", config, "--strict-mcp-config",
		"--permission-mode", "dontAsk", "--allowedTools", "mcp__orbit__checkpoint_success")
	cmd.Dir = dir
	cmd.Env = append(testkit.ClaudeEnv(t, srv), testkit.GitEnv()...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())

	require.Equal(t, []received{{verb: groundhog.VerbSuccess, input: map[string]any{"summary": "one.txt is there"}}}, <-got,
		"stdout:\n%s", stdout.String())
	reqs := srv.Scripted()
	require.Len(t, reqs, 2, "stdout:\n%s", stdout.String())
	require.Contains(t, reqs[0].Tools, "mcp__orbit__checkpoint_success")
	require.Contains(t, string(reqs[1].Raw), "Recorded.")
	require.Empty(t, l.refusals())
}
