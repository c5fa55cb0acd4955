package mcp_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/mcp"
)

func scope() mcp.Scope {
	return mcp.Scope{Binary: "/opt/orbit/bin/orbit", NATSURL: "nats://127.0.0.1:4222", NKeyFile: "/p/.orbit/state/creds/client.nk", TaskID: "T1", Token: "tok"}
}

func TestClaudeConfig(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "mcp.json")
	require.NoError(t, mcp.WriteClaudeConfig(path, scope()))
	fi, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "the file holds the token")
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.JSONEq(t, `{"mcpServers":{"orbit":{"type":"stdio","command":"/opt/orbit/bin/orbit","args":["mcp"],"alwaysLoad":true,"env":{
		"ORBIT_ATTEMPT_TOKEN":"tok","ORBIT_TASK_ID":"T1","ORBIT_NATS_URL":"nats://127.0.0.1:4222","ORBIT_NKEY":"/p/.orbit/state/creds/client.nk"}}}}`, string(data))

	_, err = mcp.ClaudeConfig(mcp.Scope{Binary: "orbit"})
	require.EqualError(t, err, "mcp scope: missing NATS URL, nkey file, task id, token")
}

func TestCodexOverrides(t *testing.T) {
	t.Parallel()
	s := scope()
	s.Binary = `C:\orbit "dev"\orbit`
	s.LogKeyFile = "/p/log.key"
	args, err := mcp.CodexOverrides(s)
	require.NoError(t, err)
	require.Equal(t, []string{
		"-c", `mcp_servers.orbit.command="C:\\orbit \"dev\"\\orbit"`,
		"-c", `mcp_servers.orbit.args=["mcp"]`,
		"-c", `mcp_servers.orbit.env_vars=["ORBIT_ATTEMPT_TOKEN", "ORBIT_LOG_KEY", "ORBIT_NATS_URL", "ORBIT_NKEY", "ORBIT_TASK_ID"]`,
		"-c", `mcp_servers.orbit.default_tools_approval_mode="approve"`,
		"-c", `shell_environment_policy.set.ORBIT_ATTEMPT_TOKEN=""`,
		"-c", `shell_environment_policy.set.ORBIT_LOG_KEY=""`,
		"-c", `shell_environment_policy.set.ORBIT_NATS_URL=""`,
		"-c", `shell_environment_policy.set.ORBIT_NKEY=""`,
		"-c", `shell_environment_policy.set.ORBIT_TASK_ID=""`,
	}, args)
	for _, a := range args {
		assert.NotContains(t, a, "tok\"", "the token is not on the command line")
		assert.NotContains(t, a, "client.nk", "nor the seed's path")
	}
	assert.Equal(t, []string{"ORBIT_ATTEMPT_TOKEN=tok", "ORBIT_LOG_KEY=/p/log.key", "ORBIT_NATS_URL=nats://127.0.0.1:4222",
		"ORBIT_NKEY=/p/.orbit/state/creds/client.nk", "ORBIT_TASK_ID=T1"}, s.Environ())
}

// TestScopeCarriesTheEnginesTLS: an engine whose listener speaks TLS
// gives its MCP servers the CA and client certificate to reach it; one
// without TLS gives none of the variables.
func TestScopeCarriesTheEnginesTLS(t *testing.T) {
	t.Parallel()
	assert.NotContains(t, strings.Join(scope().Environ(), " "), "ORBIT_TLS_")
	s := scope()
	s.NATSURL = "tls://127.0.0.1:4222"
	s.TLSCA, s.TLSCert, s.TLSKey = "/certs/ca.pem", "/certs/agent.pem", "/certs/agent-key.pem"
	assert.Subset(t, s.Environ(), []string{"ORBIT_TLS_CA=/certs/ca.pem", "ORBIT_TLS_CERT=/certs/agent.pem", "ORBIT_TLS_KEY=/certs/agent-key.pem"})
	args, err := mcp.CodexOverrides(s)
	require.NoError(t, err)
	assert.Contains(t, args, `mcp_servers.orbit.env_vars=["ORBIT_ATTEMPT_TOKEN", "ORBIT_NATS_URL", "ORBIT_NKEY", "ORBIT_TASK_ID", "ORBIT_TLS_CA", "ORBIT_TLS_CERT", "ORBIT_TLS_KEY"]`)
}

// FuzzCodexOverrides: whatever the paths and ids hold, each value is one
// TOML basic string: quoted, its quotes and backslashes escaped, no raw
// control character; reading the escapes back gives the value.
func FuzzCodexOverrides(f *testing.F) {
	for _, seed := range []string{"/usr/bin/orbit", `a"b`, `a\b`, "a\nb", "tab\there", "é€", "\x7f", `\u0041`} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, v string) {
		if !utf8.ValidString(v) || v == "" {
			return
		}
		s := scope()
		s.Binary = v
		args, err := mcp.CodexOverrides(s)
		require.NoError(t, err)
		quoted, ok := strings.CutPrefix(args[1], "mcp_servers.orbit.command=")
		require.True(t, ok)
		for _, r := range quoted {
			require.False(t, r < 0x20 || r == 0x7f, "raw control character in %q", quoted)
		}
		// A TOML basic string with only these escapes reads as JSON.
		var back string
		require.NoError(t, json.Unmarshal([]byte(quoted), &back), quoted)
		require.Equal(t, v, back)
	})
}
