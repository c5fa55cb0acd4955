package engine_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/orbitrun/orbit/agent"
	"github.com/orbitrun/orbit/engine"
)

func lookupIn(env map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		v, ok := env[name]
		return v, ok
	}
}

// TestReadSettingsNeverTellsASecret: a secret setting is reported set or
// not, never with its value; a URL's user information and query are
// replaced; a long value is cut with its length said.
func TestReadSettingsNeverTellsASecret(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", 400)
	got := engine.ReadSettings(agent.Settings("MY_PROXY_TOKEN"), lookupIn(map[string]string{
		"ANTHROPIC_API_KEY":    "sk-ant-secret",
		"ANTHROPIC_BASE_URL":   "https://user:hunter22@proxy.example/v1",
		"OPENAI_BASE_URL":      "https://tok3n@proxy.example/v1",
		"OPENAI_ORG_ID":        "org-1",
		"OPENAI_PROJECT_ID":    "http://proxy.example/v1?key=s3cr3t-param",
		"ORBIT_REPLAY_FIXTURE": long,
		"MY_PROXY_TOKEN":       "proxy-secret",
	}))
	byName := map[string]engine.Setting{}
	for _, s := range got {
		byName[s.Name] = s
	}
	assert.Equal(t, engine.Setting{Name: "ANTHROPIC_API_KEY", Set: true, Secret: true}, byName["ANTHROPIC_API_KEY"])
	assert.Equal(t, engine.Setting{Name: "MY_PROXY_TOKEN", Set: true, Secret: true}, byName["MY_PROXY_TOKEN"])
	assert.Equal(t, engine.Setting{Name: "OPENAI_API_KEY", Secret: true}, byName["OPENAI_API_KEY"])
	assert.Equal(t, "https://user:xxxxx@proxy.example/v1", byName["ANTHROPIC_BASE_URL"].Value)
	assert.Equal(t, "https://xxxxx@proxy.example/v1", byName["OPENAI_BASE_URL"].Value)
	assert.Equal(t, "org-1", byName["OPENAI_ORG_ID"].Value)
	assert.Equal(t, "http://proxy.example/v1?xxxxx", byName["OPENAI_PROJECT_ID"].Value)
	fixture := byName["ORBIT_REPLAY_FIXTURE"].Value
	assert.True(t, strings.HasSuffix(fixture, "… (800 bytes)"), fixture)
	assert.LessOrEqual(t, len(fixture), 300)
	for _, s := range got {
		for _, secret := range []string{"sk-ant-secret", "hunter22", "tok3n", "proxy-secret", "s3cr3t-param"} {
			assert.NotContains(t, s.Value, secret, s.Name)
		}
	}
	assert.Equal(t, []string{"ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL=https://user:xxxxx@proxy.example/v1",
		"OPENAI_BASE_URL=https://xxxxx@proxy.example/v1", "OPENAI_ORG_ID=org-1", "OPENAI_PROJECT_ID=http://proxy.example/v1?xxxxx",
		"ORBIT_REPLAY_FIXTURE=" + fixture, "MY_PROXY_TOKEN"}, engine.SetNames(got))
}

// TestDiffSettings: a setting differs when it is set in one environment
// and not the other, or (not secret) set to another value; secrets set in
// both agree whatever their values.
func TestDiffSettings(t *testing.T) {
	t.Parallel()
	engineSide := engine.ReadSettings(agent.Settings(), lookupIn(map[string]string{
		"ANTHROPIC_API_KEY":    "engine-key-1",
		"OPENAI_API_KEY":       "engine-key-2",
		"OPENAI_BASE_URL":      "http://a.example",
		"ORBIT_REPLAY_FIXTURE": "/f.json",
	}))
	diffs := engine.DiffSettings(engineSide, lookupIn(map[string]string{
		"ANTHROPIC_API_KEY":  "another-key",
		"OPENAI_BASE_URL":    "http://b.example",
		"ANTHROPIC_BASE_URL": "",
	}))
	var lines []string
	for _, d := range diffs {
		lines = append(lines, d.String())
	}
	assert.Equal(t, []string{
		`ANTHROPIC_BASE_URL is set to "" here but not set in the engine`,
		"OPENAI_API_KEY is not set here but set in the engine",
		`OPENAI_BASE_URL is "http://b.example" here but "http://a.example" in the engine`,
		`ORBIT_REPLAY_FIXTURE is not set here but "/f.json" in the engine`,
	}, lines)
}
