package mcp

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"sort"
	"strings"
)

// Environment variables orbit mcp and orbit groundhog success|failure|
// side-effect read: which engine to reach, as whom, and the attempt they
// speak for.
const (
	EnvToken  = "ORBIT_ATTEMPT_TOKEN"
	EnvTaskID = "ORBIT_TASK_ID"
	// EnvTaskToken scopes an agent step bound to a task (agent_implement):
	// with it, orbit mcp offers task_summary instead of the verbs.
	EnvTaskToken = "ORBIT_TASK_TOKEN"
	EnvNATSURL   = "ORBIT_NATS_URL"
	EnvNKey      = "ORBIT_NKEY"
	EnvLogKey    = "ORBIT_LOG_KEY"
	// The TLS files of an engine whose listener speaks TLS (serve.tls):
	// the CA its certificate is checked against, and the client
	// certificate and key shown when it asks for one.
	EnvTLSCA   = "ORBIT_TLS_CA"
	EnvTLSCert = "ORBIT_TLS_CERT"
	EnvTLSKey  = "ORBIT_TLS_KEY"
)

// Scope is what an attempt's MCP server needs: the engine, the identity it
// signs in with and the attempt's token.
type Scope struct {
	// Binary is the orbit executable the agent starts as `orbit mcp`.
	Binary string
	// NATSURL is the engine's NATS URL.
	NATSURL string
	// NKeyFile is the seed file it signs in with: the agent identity's
	// (events.IdentityAgent), which may send a verb and nothing else.
	NKeyFile string
	// LogKeyFile is the key the log is signed with ("" when the client
	// may not read it).
	LogKeyFile string
	TaskID     string
	// Token is the attempt token (groundhog.Scope.Token) of a Groundhog
	// attempt; TaskToken the token of an agent step bound to a task
	// (agent_implement), with which the server offers task_summary
	// instead of the verbs. One of them is set.
	Token     string
	TaskToken string
	// TLSCA, TLSCert and TLSKey are the engine's TLS files, when its
	// listener speaks TLS ("" otherwise).
	TLSCA, TLSCert, TLSKey string
}

// Env returns the server's environment as variables.
func (s Scope) Env() map[string]string {
	env := map[string]string{EnvTaskID: s.TaskID, EnvNATSURL: s.NATSURL, EnvNKey: s.NKeyFile}
	for name, v := range map[string]string{EnvToken: s.Token, EnvTaskToken: s.TaskToken, EnvLogKey: s.LogKeyFile, EnvTLSCA: s.TLSCA,
		EnvTLSCert: s.TLSCert, EnvTLSKey: s.TLSKey} {
		if v != "" {
			env[name] = v
		}
	}
	return env
}

// Validate says what is missing.
func (s Scope) Validate() error {
	var missing []string
	token := s.Token
	if token == "" {
		token = s.TaskToken
	}
	for name, v := range map[string]string{"binary": s.Binary, "NATS URL": s.NATSURL, "nkey file": s.NKeyFile, "task id": s.TaskID, "token": token} {
		if v == "" {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return fmt.Errorf("mcp scope: missing %s", strings.Join(missing, ", "))
	}
	return nil
}

// ClaudeConfig returns the JSON Claude Code takes with --mcp-config:
// mcpServers.orbit starts `<binary> mcp` with the scope's environment.
func ClaudeConfig(s Scope) ([]byte, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	type server struct {
		Type    string            `json:"type"`
		Command string            `json:"command"`
		Args    []string          `json:"args"`
		Env     map[string]string `json:"env"`
		// AlwaysLoad keeps the verbs in the model's prompt: Claude Code
		// otherwise defers MCP tools behind its tool search, and a model
		// that never searched would not know it can close its attempt.
		AlwaysLoad bool `json:"alwaysLoad"`
	}
	return json.MarshalIndent(map[string]any{"mcpServers": map[string]server{
		ServerName: {Type: "stdio", Command: s.Binary, Args: []string{"mcp"}, Env: s.Env(), AlwaysLoad: true},
	}}, "", "  ")
}

// WriteClaudeConfig writes ClaudeConfig to path, readable by its owner
// only (it holds the token), for `claude --mcp-config <path>`.
func WriteClaudeConfig(path string, s Scope) error {
	data, err := ClaudeConfig(s)
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return fmt.Errorf("writing the MCP config: %w", err)
	}
	return nil
}

// Environ returns the server's environment as NAME=value entries, sorted
// by name: what Codex is started with for CodexOverrides' env_vars.
func (s Scope) Environ() []string {
	env := s.Env()
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// CodexOverrides returns the `-c key=value` arguments that make Codex
// start `<binary> mcp` as its MCP server orbit, values in TOML, and let it
// call the server's tools without asking.
//
// IMPORTANT: Codex 0.169 asks for approval of every MCP tool call by
// default, and under approval_policy "never" (how Orbit runs it) a call
// that needs approval fails ("MCP tool call requires approval, but
// approval policy is never") without reaching the server:
// default_tools_approval_mode "approve" lets the verbs through.
//
// IMPORTANT: the scope's values (the attempt token, the seed's path) are
// not on Codex's command line, which any process of the machine may read
// from /proc: env_vars names the variables Codex forwards to the server
// from its own environment, and Codex must be started with Environ. The
// commands Codex runs inherit its environment: shell_environment_policy.set
// empties the variables there, each by its own key, so whatever the user's
// policy sets or excludes still holds.
func CodexOverrides(s Scope) ([]string, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	// The names are bare TOML keys: the constants above, and nothing else.
	names := slices.Sorted(maps.Keys(s.Env()))
	quoted := make([]string, len(names))
	for i, k := range names {
		quoted[i] = tomlString(k)
	}
	prefix := "mcp_servers." + ServerName + "."
	args := []string{
		"-c", prefix + "command=" + tomlString(s.Binary),
		"-c", prefix + `args=["mcp"]`,
		"-c", prefix + "env_vars=[" + strings.Join(quoted, ", ") + "]",
		"-c", prefix + `default_tools_approval_mode="approve"`,
	}
	for _, k := range names {
		args = append(args, "-c", "shell_environment_policy.set."+k+`=""`)
	}
	return args, nil
}

// tomlString quotes s as a TOML basic string.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
