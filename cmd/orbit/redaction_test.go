package main_test

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/engine"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

// TestEncodedSecretsNeverReachTheStore: with a provider key in the
// engine's environment, steps print it base64-encoded (alone and wrapped
// as base64 does), in hex, and folded over lines (fold -w 8), and print
// the engine's seed file base64-encoded and cut to its first 20
// characters. Nothing Orbit stored (the NATS store with the log and the
// blobs, the views, the engine's log) holds 16 characters in a row of any
// of what was printed, line breaks aside.
func TestEncodedSecretsNeverReachTheStore(t *testing.T) {
	t.Parallel()
	const apiKey = "sk-ant-api03-Xq7Rz0pLm2VbN8cT4yUeW1oIa6SdF3gH5jKl9ZxCvBn7Mq2Wr4Te8Yu0Io3Pa5Sd7Fg9Hj1Kl3Zx5Cv7Bn9Mq1Wr3Te5-AbCdEfAA"
	p := testkit.NewProject(t)
	p.Env = append(p.Env, "ANTHROPIC_API_KEY="+apiKey)
	nk := events.CredsFile(engine.CredsDir(p.Root), events.IdentityEngine)
	p.WriteFile(".orbit/jobs/encoded.yaml", `
schemaVersion: 2
kind: Job
metadata: {name: encoded}
spec:
  steps:
    - id: key
      spec:
        type: shell
        program: sh
        args: ["-c", "printf %s \"$ANTHROPIC_API_KEY\" | base64 -w0; echo; printf %s \"$ANTHROPIC_API_KEY\" | base64; printf %s \"$ANTHROPIC_API_KEY\" | od -An -tx1 | tr -d ' \\n'; echo; printf %s \"$ANTHROPIC_API_KEY\" | fold -w 8"]
        allowed_programs: [sh]
    - id: seed
      spec:
        type: shell
        program: sh
        args: ["-c", "base64 -w0 `+nk+`; echo; cut -c1-20 `+nk+` >&2"]
        allowed_programs: [sh]
`)
	r := p.Orbit("job", "run", "encoded")
	require.Equal(t, 0, r.Code, r.String())
	p.StopEngine()

	seedFile, err := os.ReadFile(nk)
	require.NoError(t, err)
	printed := map[string]string{
		"the key in base64":    base64.StdEncoding.EncodeToString([]byte(apiKey)),
		"the key in hex":       hex.EncodeToString([]byte(apiKey)),
		"the key":              apiKey,
		"the seed file base64": base64.StdEncoding.EncodeToString(seedFile),
		"the seed, cut":        string(seedFile[:20]),
	}
	unbroken := func(b []byte) []byte {
		for _, br := range []string{`\n`, `\r`, "\n", "\r"} {
			b = bytes.ReplaceAll(b, []byte(br), nil)
		}
		return b
	}
	eachStoredFile(t, p.Root, func(path string, data []byte) {
		data = unbroken(data)
		for what, text := range printed {
			for i := 0; i+16 <= len(text); i++ {
				if bytes.Contains(data, []byte(text[i:i+16])) {
					t.Errorf("%s holds %q of %s", path, text[i:i+16], what)
					break
				}
			}
		}
	})
	r = p.Orbit("run", "show", "--json", "-s", "key")
	require.Equal(t, 0, r.Code, r.String())
	assert.Equal(t, 4, strings.Count(r.Stdout, events.Redacted), "each printing is one redaction: %s", r.Stdout)
}
