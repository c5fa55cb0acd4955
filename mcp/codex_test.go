package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/groundhog"
	"github.com/orbitrun/orbit/internal/testkit"
	"github.com/orbitrun/orbit/mcp"
)

// TestCodexOffersTheVerbsFromTheOverrides: the real Codex, given the -c
// mcp_servers.orbit overrides that mcp builds, starts `orbit mcp` from
// the built binary and offers the model the three verbs, with the builtin
// verbs' schemas, in its mcp__orbit namespace.
//
// Codex 0.169 calls such a tool only from a function_call that names the
// namespace (testkit.ToolUse.Namespace): the calls themselves are tested
// end to end by TestGroundhogOverCodex in cmd/orbit.
func TestCodexOffersTheVerbsFromTheOverrides(t *testing.T) {
	t.Parallel()
	bin := testkit.CodexCLI(t)
	l := startLive(t)
	s := l.dayOne()

	srv := testkit.NewOpenAIServer(t, testkit.Turn{Text: "done"})
	dir := t.TempDir()
	sc := l.scope(s)
	overrides, err := mcp.CodexOverrides(sc)
	require.NoError(t, err)
	args := append([]string{"exec", "--json", "--model", "gpt-orbit-test", "--sandbox", "workspace-write", "-C", dir, "--skip-git-repo-check"},
		testkit.CodexProviderArgs(srv)...)
	args = append(append(args, overrides...), "close the checkpoint")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	cmd.Env = append(append(testkit.CodexEnv(t), testkit.GitEnv()...), sc.Environ()...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())

	reqs := srv.Scripted()
	require.Len(t, reqs, 1, "stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	var req struct {
		Tools []struct {
			Type, Name string
			Tools      []struct {
				Name       string
				Parameters json.RawMessage
			}
		}
	}
	require.NoError(t, json.Unmarshal(reqs[0].Raw, &req))
	offered := map[string]json.RawMessage{}
	for _, tool := range req.Tools {
		if tool.Type == "namespace" && tool.Name == "mcp__orbit" {
			for _, sub := range tool.Tools {
				offered[sub.Name] = sub.Parameters
			}
		}
	}
	names := map[string]string{groundhog.VerbSuccess: mcp.ToolSuccess, groundhog.VerbFailure: mcp.ToolFailure, groundhog.VerbSideEffect: mcp.ToolSideEffect}
	require.Len(t, offered, 3, "tools offered: %v", reqs[0].Tools)
	for _, spec := range groundhog.VerbSpecs() {
		require.JSONEq(t, string(spec.InputSchema), string(offered[names[spec.Name]]), spec.Name)
	}
	require.Empty(t, l.refusals())
}
