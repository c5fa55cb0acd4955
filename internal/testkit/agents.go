package testkit

import (
	"os"
	"path/filepath"
	"testing"
)

// The CLI agents `make agents` installs from tools/agents/package-lock.json.
const (
	// ClaudeCodeVersion is the pinned version of @anthropic-ai/claude-code.
	ClaudeCodeVersion = "2.1.331"
	// CodexVersion is the pinned version of @openai/codex.
	CodexVersion = "0.169.0"
)

// ClaudeCLI returns the path of the pinned Claude Code binary. When it is
// not installed the test is skipped, unless CI is set: there a missing
// agent is a broken build, not a reason to test less.
func ClaudeCLI(t testing.TB) string {
	t.Helper()
	return agentCLI(t, "claude")
}

// CodexCLI returns the path of the pinned Codex binary, skipping or failing
// as ClaudeCLI does when it is not installed.
func CodexCLI(t testing.TB) string {
	t.Helper()
	return agentCLI(t, "codex")
}

func agentCLI(t testing.TB, name string) string {
	t.Helper()
	path := filepath.Join(ModuleRoot(t), "tools", "agents", "node_modules", ".bin", name)
	if _, err := os.Stat(path); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is not installed (%v): run make agents", name, err)
		}
		t.Skipf("%s is not installed: run make agents", name)
	}
	return path
}
