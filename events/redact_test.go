package events_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

func TestSecretNames(t *testing.T) {
	t.Parallel()
	for name, secret := range map[string]bool{
		"ANTHROPIC_API_KEY": true, "GITHUB_TOKEN": true, "DB_PASSWORD": true, "aws_secret": true,
		"Authorization": true, "x-api-key": true, "api_key": true, "refresh_token": true,
		"step_key": false, "run_id": false, "monkey": false, "tokens": false, "key": false,
	} {
		assert.Equal(t, secret, events.SecretName(name), name)
	}
}

func TestRedactorRemovesSecretsFromEverythingPublished(t *testing.T) {
	t.Parallel()
	ctx := testkit.Context(t)
	r := &events.Redactor{}
	const key = "sk-ant-api03-VERYSECRETvalue_123"
	r.Add(key)
	r.Add("short") // too short to be treated as a secret
	l := testkit.StartLog(t, events.Config{Redactor: r})

	_, err := l.Append(ctx, events.Event{Type: events.StepStarted, RunID: "R", StepKey: "s"}, events.StepStartedData{
		Attempt: 1,
		Input: map[string]any{
			"prompt":   "use " + key + " to call the API",
			"headers":  map[string]any{"Authorization": "Bearer abcdefghijklmnop", "Accept": "json"},
			"api_key":  "anything at all",
			"step_key": "build",
			"note":     "short stays",
			"quoted":   `say "` + key + `"`,
		},
	})
	require.NoError(t, err)
	evs, err := l.Read(ctx, events.FollowOptions{})
	require.NoError(t, err)
	require.Len(t, evs, 1)
	raw, err := json.Marshal(evs[0])
	require.NoError(t, err)
	assert.NotContains(t, string(raw), "VERYSECRET")
	assert.NotContains(t, string(raw), "abcdefghijklmnop")
	assert.NotContains(t, string(raw), "anything at all")

	var d events.StepStartedData
	require.NoError(t, evs[0].Decode(&d))
	in := d.Input.(map[string]any)
	assert.Equal(t, "use [REDACTED] to call the API", in["prompt"])
	assert.Equal(t, "[REDACTED]", in["headers"].(map[string]any)["Authorization"])
	assert.Equal(t, "json", in["headers"].(map[string]any)["Accept"])
	assert.Equal(t, "[REDACTED]", in["api_key"])
	assert.Equal(t, "build", in["step_key"])
	assert.Equal(t, "short stays", in["note"])

	ref, err := l.PutBlob(ctx, []byte("log line with "+key+" in it\nAuthorization: Basic dXNlcjpwYXNzd29yZA==\n"))
	require.NoError(t, err)
	blob, err := l.GetBlob(ctx, ref.Digest)
	require.NoError(t, err)
	assert.NotContains(t, string(blob), "VERYSECRET")
	assert.NotContains(t, string(blob), "dXNlcjpwYXNzd29yZA")
	assert.True(t, strings.HasPrefix(ref.Digest, "sha256-"))
	assert.Equal(t, int64(len(blob)), ref.Size)
}
