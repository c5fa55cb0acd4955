package agent

import (
	"slices"
	"strings"
)

// cliEnvBaseline are the variables of the engine's environment every CLI
// agent is given: what a program needs to run (its PATH, home, user,
// locale, terminal, time zone, temporary directory) and to reach the
// network the engine reaches (proxies, extra CA certificates).
var cliEnvBaseline = []string{
	"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TERM", "TZ", "TMPDIR",
	"XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_RUNTIME_DIR",
	"SSL_CERT_FILE", "SSL_CERT_DIR", "NODE_EXTRA_CA_CERTS",
	"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "no_proxy", "all_proxy",
}

// cliEnvPrefixes are the prefixes of the variables every CLI agent is
// given besides the baseline: the locale's, Orbit's own (the task's id
// and token, the agent's seed), and the model providers' keys and
// settings (Anthropic's and Claude Code's, OpenAI's and Codex's).
var cliEnvPrefixes = []string{"LC_", "ORBIT_", "ANTHROPIC_", "CLAUDE_", "OPENAI_", "CODEX_"}

// cliEnvProvider are Claude Code's switches that carry no prefix of its
// own.
var cliEnvProvider = []string{"DISABLE_TELEMETRY", "DISABLE_ERROR_REPORTING", "DISABLE_AUTOUPDATER", "DISABLE_BUG_COMMAND", "DISABLE_COST_WARNINGS"}

// AgentEnviron is the environment a CLI agent starts with, taken from
// environ (the engine's, KEY=VALUE): only what the allowlist names (the
// baseline, the providers' variables, ORBIT_*) and the names pass adds
// (an executor's pass:), never the whole of it. A variable the engine
// holds for itself (a token of another service, a cloud credential) is
// not the agent's.
func AgentEnviron(environ, pass []string) []string {
	out := make([]string, 0, len(cliEnvBaseline)+len(pass))
	for _, kv := range environ {
		name, _, ok := strings.Cut(kv, "=")
		if ok && agentMayHave(name, pass) {
			out = append(out, kv)
		}
	}
	return out
}

func agentMayHave(name string, pass []string) bool {
	if slices.Contains(cliEnvBaseline, name) || slices.Contains(cliEnvProvider, name) || slices.Contains(pass, name) {
		return true
	}
	for _, p := range cliEnvPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}
