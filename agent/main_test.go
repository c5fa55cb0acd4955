package agent_test

import (
	"context"
	"os"
	"testing"

	"github.com/orbitrun/orbit/agent"
)

// TestMain lets the test binary be a codex agent's PreToolUse hook: with
// no CLIConfig.Orbit, the hook is this process's own executable, run as
// `<executable> hook codex-pre-tool <endpoint>`, which is what orbit's
// hidden command does.
func TestMain(m *testing.M) {
	if len(os.Args) == 4 && os.Args[1] == "hook" && os.Args[2] == "codex-pre-tool" {
		if err := agent.CodexPreToolHook(context.Background(), os.Args[3], os.Getenv(agent.EnvHookToken), os.Stdin, os.Stdout); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}
