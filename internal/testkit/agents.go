package testkit

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The CLI agents `make agents` installs from tools/agents/package-lock.json.
const (
	// ClaudeCodeVersion is the pinned version of @anthropic-ai/claude-code.
	ClaudeCodeVersion = "2.1.331"
	// CodexVersion is the pinned version of @openai/codex.
	CodexVersion = "0.169.0"
	// NodeVersion is the pinned version of npm's node package: Node.js,
	// as a binary of its own, for a machine whose node is older than
	// Claude Code's package asks for (MinNodeMajor).
	NodeVersion = "22.23.3"
	// MinNodeMajor is the Node.js major version Claude Code's package
	// asks for (its engines field).
	MinNodeMajor = 22
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

// AgentPath is the PATH the CLI agents run with: the test's, with the
// pinned Node.js's bin first when the node on it is older than
// MinNodeMajor (or there is none) and make agents installed the pin.
//
// IMPORTANT: Claude Code 2.1's bin is a native program and runs on no
// node; Codex's is codex.js, run by the node on PATH (its package asks for
// Node >= 16). The pin is the node both are tested with on a machine whose
// own is older, and npm runs the packages' install scripts with it, as
// npm puts node_modules/.bin first on their PATH.
func AgentPath(t testing.TB) string {
	t.Helper()
	path := os.Getenv("PATH")
	if nodeMajor(path) >= MinNodeMajor {
		return path
	}
	bin := filepath.Join(ModuleRoot(t), "tools", "agents", "node_modules", "node", "bin")
	if _, err := os.Stat(filepath.Join(bin, "node")); err != nil {
		return path
	}
	return bin + string(os.PathListSeparator) + path
}

// nodeMajor is the major version of the node the PATH finds, 0 when it
// finds none or it does not say.
func nodeMajor(path string) int {
	for _, dir := range filepath.SplitList(path) {
		node := filepath.Join(dir, "node")
		if st, err := os.Stat(node); err != nil || st.IsDir() {
			continue
		}
		out, err := exec.Command(node, "--version").Output()
		if err != nil {
			return 0
		}
		major, _, _ := strings.Cut(strings.TrimPrefix(strings.TrimSpace(string(out)), "v"), ".")
		n, _ := strconv.Atoi(major)
		return n
	}
	return 0
}

// ClaudeEnv is an environment in which Claude Code talks to srv and nothing
// else: its configuration in a fresh HOME, a made-up API key, no
// telemetry, error reports, update checks or other traffic it can be told
// to skip, and no retries of a failed request (a scripted 500 is final).
func ClaudeEnv(t testing.TB, srv *AnthropicServer) []string {
	t.Helper()
	home := t.TempDir()
	return []string{
		"PATH=" + AgentPath(t),
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
// names, on the PATH the agents are tested with (AgentPath).
func CodexEnv(t testing.TB) []string {
	t.Helper()
	home := t.TempDir()
	return []string{
		"PATH=" + AgentPath(t),
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
