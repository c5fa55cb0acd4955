package main_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

// writtenContext is what a context file orbit nats-context wrote says.
type writtenContext struct {
	Description string `json:"description"`
	URL         string `json:"url"`
	NKey        string `json:"nkey"`
	CA          string `json:"ca"`
	Cert        string `json:"cert"`
	Key         string `json:"key"`
	InboxPrefix string `json:"inbox_prefix"`
}

// wroteContext returns the name and content of the context that an orbit
// nats-context run reports it wrote.
func wroteContext(t *testing.T, r testkit.Result) (string, writtenContext) {
	t.Helper()
	m := regexp.MustCompile(`wrote (\S+\.json) `).FindStringSubmatch(r.Stdout)
	require.NotNil(t, m, r.String())
	data, err := os.ReadFile(m[1])
	require.NoError(t, err)
	var c writtenContext
	require.NoError(t, json.Unmarshal(data, &c))
	return strings.TrimSuffix(filepath.Base(m[1]), ".json"), c
}

// TestNATSContextsOfTwoProjectsOfOneNameStayApart: two roots whose
// directories share a name get contexts of their own, each signing in to
// its own project; a context of another root is not replaced without
// --force, one's own is.
func TestNATSContextsOfTwoProjectsOfOneNameStayApart(t *testing.T) {
	t.Parallel()
	xdg := t.TempDir()
	a := testkit.NewProjectIn(t, filepath.Join(t.TempDir(), "p1"))
	b := testkit.NewProjectIn(t, filepath.Join(t.TempDir(), "p1"))
	for _, p := range []*testkit.Project{a, b} {
		p.Env = append(p.Env, "XDG_CONFIG_HOME="+xdg)
	}

	ra := a.Orbit("nats-context", "--reader")
	require.Equal(t, 0, ra.Code, ra.String())
	rb := b.Orbit("nats-context", "--reader")
	require.Equal(t, 0, rb.Code, rb.String())
	nameA, ctxA := wroteContext(t, ra)
	nameB, ctxB := wroteContext(t, rb)
	assert.NotEqual(t, nameA, nameB)
	for _, name := range []string{nameA, nameB} {
		assert.Regexp(t, `^orbit-p1-[0-9a-f]{8}-reader$`, name)
	}
	assert.Equal(t, credsFile(a, events.IdentityReader), ctxA.NKey)
	assert.Equal(t, credsFile(b, events.IdentityReader), ctxB.NKey)
	entries, err := os.ReadDir(filepath.Join(xdg, "nats", "context"))
	require.NoError(t, err)
	assert.Len(t, entries, 2, "neither overwrote the other")

	r := a.Orbit("nats-context", "--reader")
	require.Equal(t, 0, r.Code, "a root rewrites its own context: %s", r)

	r = a.Orbit("nats-context", "--name", "shared")
	require.Equal(t, 0, r.Code, r.String())
	r = b.Orbit("nats-context", "--name", "shared")
	assert.Equal(t, 2, r.Code, r.String())
	assert.Contains(t, r.Stderr, "is the context of "+a.Root)
	assert.Contains(t, r.Stderr, "--force")
	_, kept := wroteContext(t, testkit.Result{Stdout: "wrote " + filepath.Join(xdg, "nats", "context", "shared.json") + " "})
	assert.Equal(t, credsFile(a, events.IdentityClient), kept.NKey, "the refused write changed nothing")

	r = b.Orbit("nats-context", "--name", "shared", "--force")
	require.Equal(t, 0, r.Code, r.String())
	_, replaced := wroteContext(t, r)
	assert.Equal(t, credsFile(b, events.IdentityClient), replaced.NKey)

	require.NoError(t, os.WriteFile(filepath.Join(xdg, "nats", "context", "mine.json"), []byte(`{"url":"nats://elsewhere:4222"}`), 0o600))
	r = a.Orbit("nats-context", "--name", "mine")
	assert.Equal(t, 2, r.Code, "a context Orbit did not write is not replaced either: %s", r)
	assert.Contains(t, r.Stderr, "--force")
}

// TestNATSContextOutlivesABackgroundEngine: with only a background engine
// running (one a command started, on a port of its own, gone after its
// idle timeout), the context names serve.listen and says that it needs
// orbit serve; --nats-url is written as given; and the official nats CLI
// reaches the engine orbit serve then starts, through that context.
func TestNATSContextOutlivesABackgroundEngine(t *testing.T) {
	t.Parallel()
	p, natsBin, env := natsCLIProject(t)
	listen := testkit.FreeAddr(t)
	p.WriteFile(".orbit/config.yaml", "serve:\n  listen: "+listen+"\n")

	r := p.Orbit("job", "run", "hello")
	require.Equal(t, 0, r.Code, r.String())
	background := engineURL(t, p)
	require.NotEqual(t, "nats://"+listen, background)

	r = p.Orbit("nats-context")
	require.Equal(t, 0, r.Code, r.String())
	name, ctx := wroteContext(t, r)
	assert.Equal(t, "nats://"+listen, ctx.URL, "not the background engine's %s", background)
	assert.Contains(t, r.Stdout, "only while 'orbit serve' runs")

	r = p.Orbit("nats-context", "--name", "remote", "--nats-url", "nats://orbit.example.com:4222")
	require.Equal(t, 0, r.Code, r.String())
	_, remote := wroteContext(t, r)
	assert.Equal(t, "nats://orbit.example.com:4222", remote.URL)
	assert.NotContains(t, r.Stdout, "orbit serve")

	p.StopEngine()
	serveWith(t, p)
	r = p.Orbit("nats-context")
	require.Equal(t, 0, r.Code, r.String())
	assert.NotContains(t, r.Stdout, "only while", "orbit serve runs now")
	out, code := runNATS(t, natsBin, env, "--context", name, "request", "orbit.api.engine.info", "")
	assert.Equal(t, 0, code, out)
	assert.Contains(t, out, `"version"`)
}
