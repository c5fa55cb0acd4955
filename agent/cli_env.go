package agent

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/orbitrun/orbit/internal/sandbox"
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

// cliHomes are the directories Claude Code and Codex keep their own state
// in (the login, the settings, the sessions a later invocation continues):
// the variable that names one, and where it is under HOME otherwise.
var cliHomes = map[string]struct{ env, dir string }{
	OutputClaudeCode: {"CLAUDE_CONFIG_DIR", ".claude"}, OutputClaudeJSON: {"CLAUDE_CONFIG_DIR", ".claude"},
	OutputCodex: {"CODEX_HOME", ".codex"}, OutputCodexJSONL: {"CODEX_HOME", ".codex"},
}

// withCLIHome gives a confined agent its CLI's own directory: a confined
// program's HOME is a fresh one of its own (sandbox.Policy.Confine), where
// Claude Code or Codex would find neither its login nor the sessions it
// continues. So the directory the engine's environment names (or the one
// under the engine's HOME) is named in the agent's environment and is
// writable to it, made when missing. An output of neither CLI's gets
// none.
//
// IMPORTANT: what the agent writes there (a hook in Claude Code's
// settings.json, an MCP server in Codex's config.toml) runs wherever that
// CLI runs with that directory next: a user who runs it by hand with the
// same directory runs it unsandboxed. docs/security.md says to give the
// engine directories of its own.
func withCLIHome(p sandbox.Policy, env []string, output string) (sandbox.Policy, []string, error) {
	home, ok := cliHomes[output]
	if !ok {
		return p, env, nil
	}
	dir := lookupEnv(env, home.env)
	if dir == "" {
		if h := lookupEnv(env, "HOME"); h != "" {
			dir = filepath.Join(h, home.dir)
		}
	}
	if dir == "" {
		return p, env, nil
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return p, env, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return p, env, fmt.Errorf("the agent's %s: %w", home.env, err)
	}
	p.Work = append(slices.Clone(p.Work), dir)
	return p, append(slices.Clip(env), home.env+"="+dir), nil
}

// lookupEnv is the value of name in env (KEY=VALUE, the last one wins as
// for exec), "" when it has none.
func lookupEnv(env []string, name string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], name+"="); ok {
			return v
		}
	}
	return ""
}
