package assets_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/assets"
)

func TestLoadConfigNATS(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writeFile(t, root, ".orbit/config.yaml", "nats:\n  url: nats://a:4222,nats://b:4222\n  replicas: 3\n")
	c, err := assets.LoadConfig(root)
	require.NoError(t, err)
	assert.Equal(t, assets.NATSConfig{URL: "nats://a:4222,nats://b:4222", Replicas: 3}, c.NATS)
}

func TestLoadConfigNATSProblems(t *testing.T) {
	t.Parallel()
	tests := []configProblem{
		{"replicas", "nats:\n  replicas: 7\n",
			"2: nats.replicas: 7 is not between 1 and 5 (0 or absent: 3 on a cluster of three or more servers, else 1)"},
		{"not a number", "nats: {replicas: three}\n", `1: nats.replicas: must be an integer, not "three"`},
		{"url", "nats:\n  url: nats://a:4222,,\n", `2: nats.url: "" is not a URL like nats://host:4222`},
		{"scheme", "nats:\n  url: http://a:4222\n", `2: nats.url: "http://a:4222": scheme "http" is not one of nats, tls, ws, wss`},
		{"unknown key", "nats: {urls: x}\n", `1: nats.urls: unknown key "urls" (did you mean "url"?)`},
	}
	checkConfigProblems(t, tests)
}

// FuzzParseConfigNATS: any nats section parses or is refused with problems,
// never a panic.
func FuzzParseConfigNATS(f *testing.F) {
	for _, seed := range []string{
		"nats: {url: nats://127.0.0.1:4222, replicas: 3}\n",
		"nats:\n  url: 'nats://a:1, nats://b:2,nats://c:3'\n",
		"nats: {replicas: -1}\n",
		"nats: {url: '://'}\n",
		"nats: [x]\n",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		c, err := assets.ParseConfig("c.yaml", []byte(doc))
		if err == nil && (c.NATS.Replicas < 0 || c.NATS.Replicas > assets.MaxReplicas) {
			t.Fatalf("replicas %d accepted", c.NATS.Replicas)
		}
	})
}
