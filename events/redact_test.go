package events_test

import (
	"encoding/json"
	"path/filepath"
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

// TestALogKeysFileNameIsNoSecret: ORBIT_LOG_KEY names the log key's file;
// taken for a secret, it redacted paths under the file's directory from a
// step's input, and the step got the redacted path.
func TestALogKeysFileNameIsNoSecret(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("ORBIT_LOG_KEY", filepath.Join(dir, "log.key"))
	t.Setenv("ORBIT_TEST_API_KEY", "sk-test-"+filepath.Base(dir))
	r := events.RedactorFromEnv()
	out := filepath.Join(dir, "side.txt")
	assert.Equal(t, out, r.String(out), "a path beside the log key")
	assert.Equal(t, "use "+events.Redacted, r.String("use sk-test-"+filepath.Base(dir)), "a secret-named variable's value")
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

// BenchmarkRedact redacts what every append redacts, a step.finished
// envelope of about 600 bytes with output lines in it, and a 64 KiB blob
// of output, for an engine that knows a provider key, its five identities'
// seeds and the log key (in every form each is looked for in).
func BenchmarkRedact(b *testing.B) {
	r := &events.Redactor{}
	r.Add("sk-ant-api03-Xq7Rz0pLm2VbN8cT4yUeW1oIa6SdF3gH5jKl9ZxCvBn7Mq2Wr4Te8Yu0Io3Pa5Sd7Fg9Hj1Kl3Zx5Cv7Bn9Mq1Wr3Te5-AbCdEfAA")
	for _, seed := range []string{
		"SUAIBDPBAUTWCWBKIO6XHQNINK5FWJW4OHLXC3HQ2KFE4PEJUA44CNHTC4",
		"SUAM2FYPZRXW6GOH3ZRTR4MKJDRV3PU5X7G4K7OFDPLTI6S5WRBNDLSNHA",
		"SUAFS7LB3R3WPLGBQ6QDJ7BWTZKXQXHYYDPGR6KVZBDDJ4OO7OHE43UBDI",
		"SUAGJRA6PB6Y4YZSIMVLQGVOXF3KKJ6Z3D6TH4Z3NLPH5FNLW6CCQ7OHFE",
		"SUAPXQVV5BQ2O5S2D7UPZ5Q6TNZ6JFG3WQ3E5KH3H7Z2NYYLZ3S3UDXNQE",
	} {
		r.Add(seed)
	}
	r.Add("2c5511e2eea2c32ba4c9856d356864b3e108573effe94399fd3131fdb5189a8c")
	env := []byte(`{"id":"step.finished|01M8H47GD8E35D1TVHBACSEGMF|print|1","type":"step.finished","time":"2026-11-28T13:06:35.788335421Z",` +
		`"run_id":"01M8H47GD8E35D1TVHBACSEGMF","job":"example","step_key":"print","parent_id":"step.started|01M8H47GD8E35D1TVHBACSEGMF|print|1",` +
		`"data":{"attempt":1,"state":"success","output":{"exit_code":0,"stderr":"","stdout":"Hello, world!\nbuilt 12 packages in 3.2s\n` +
		`ok  github.com/orbitrun/orbit/events 0.318s\nok  github.com/orbitrun/orbit/projector 1.2s\n"},"duration_ms":25}}`)
	blob := []byte(strings.Repeat("2026-11-28T13:06:35Z INFO building package github.com/orbitrun/orbit/events (cached)\n", 64<<10/84))
	b.Run("envelope", func(b *testing.B) {
		b.SetBytes(int64(len(env)))
		for b.Loop() {
			r.JSON(env)
		}
	})
	b.Run("blob", func(b *testing.B) {
		b.SetBytes(int64(len(blob)))
		for b.Loop() {
			r.Bytes(blob)
		}
	})
}
