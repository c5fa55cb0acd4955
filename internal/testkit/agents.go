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

// ClaudeEnv is an environment in which Claude Code talks to srv and nothing
// else: its configuration in a fresh HOME, a made-up API key, no
// telemetry, error reports, update checks or other traffic it can be told
// to skip, and no retries of a failed request (a scripted 500 is final).
func ClaudeEnv(t testing.TB, srv *AnthropicServer) []string {
	t.Helper()
	home := t.TempDir()
	return []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + home,
		"CLAUDE_CONFIG_DIR=" + filepath.Join(home, ".claude"),
		"ANTHROPIC_BASE_URL=" + srv.URL(),
		"ANTHROPIC_API_KEY=sk-ant-orbit-test",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_TELEMETRY=1",
		"DISABLE_ERROR_REPORTING=1",
		"DISABLE_AUTOUPDATER=1",
		"CLAUDE_CODE_MAX_RETRIES=0",
	}
}

// CodexEnv is an environment in which Codex reads its configuration from a
// fresh CODEX_HOME and finds the key of the provider CodexProviderArgs
// names.
func CodexEnv(t testing.TB) []string {
	t.Helper()
	home := t.TempDir()
	return []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + home,
		"CODEX_HOME=" + home,
		"ORBIT_TEST_OPENAI_KEY=sk-orbit-test",
	}
}

// CodexProviderArgs are the `-c` overrides that make Codex use srv as its
// model provider: the Responses wire API at srv's /v1, the key from
// ORBIT_TEST_OPENAI_KEY, and no retries of a failed request or stream.
func CodexProviderArgs(srv *OpenAIServer) []string {
	return []string{
		"-c", `model_provider="orbit-test"`,
		"-c", `model_providers.orbit-test.name="orbit-test"`,
		"-c", `model_providers.orbit-test.base_url="` + srv.URL() + `/v1"`,
		"-c", `model_providers.orbit-test.wire_api="responses"`,
		"-c", `model_providers.orbit-test.env_key="ORBIT_TEST_OPENAI_KEY"`,
		"-c", `model_providers.orbit-test.request_max_retries=0`,
		"-c", `model_providers.orbit-test.stream_max_retries=0`,
	}
}
