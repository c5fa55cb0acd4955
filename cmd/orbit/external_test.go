package main_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

// externalNATSServer starts a JetStream NATS server of the test's own, on a
// random port, that no engine owns.
func externalNATSServer(t *testing.T) *server.Server {
	t.Helper()
	return startNATSServer(t, &server.Options{
		Host: "127.0.0.1", Port: server.RANDOM_PORT, JetStream: true,
		StoreDir: filepath.Join(t.TempDir(), "js"), NoLog: true, NoSigs: true,
	})
}

// startNATSServer starts a NATS server with opts, waits until it takes
// connections, and shuts it down when the test ends.
func startNATSServer(t *testing.T, opts *server.Options) *server.Server {
	t.Helper()
	srv, err := server.NewServer(opts)
	require.NoError(t, err)
	srv.Start()
	require.True(t, srv.ReadyForConnections(10*time.Second))
	t.Cleanup(srv.Shutdown)
	return srv
}

// TestEngineOnAnExternalNATSServer runs the engine against a NATS server it
// does not own (--nats-url), and the CLI against the same URL.
func TestEngineOnAnExternalNATSServer(t *testing.T) {
	t.Parallel()
	url := externalNATSServer(t).ClientURL()

	p := testkit.NewProject(t)
	p.Env = append(p.Env, "ORBIT_NATS_URL="+url)
	serve(t, p)

	r := p.Orbit("job", "run", "hello", "--input", `{"name":"cluster"}`)
	require.Equal(t, 0, r.Code, r.String())
	v := runView(t, p, strings.TrimSpace(r.Stdout))
	assert.Equal(t, events.StateSuccess, v.State)
	assert.Equal(t, 0, p.Orbit("replay", "--verify").Code)
}

func TestNoEngineAtAURLIsExitCode3(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	r := p.Orbit("--nats-url", "nats://127.0.0.1:1", "run", "history")
	assert.Equal(t, 3, r.Code, r.String())
	assert.Contains(t, r.Stderr, "no Orbit engine at nats://127.0.0.1:1")
}
