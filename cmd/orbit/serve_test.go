package main_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/engine"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

// TestServeIsTailableWithPlainNATS subscribes to orbit.events.> the way
// `nats sub` does, with the project's reader key, on an engine run with
// `orbit serve`, and sees a run's events live, on the subjects of the
// design.
func TestServeIsTailableWithPlainNATS(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	serve(t, p)
	data, err := os.ReadFile(filepath.Join(p.Root, ".orbit", "state", "engine.json"))
	require.NoError(t, err)
	var info engine.Info
	require.NoError(t, json.Unmarshal(data, &info))
	assert.True(t, strings.HasPrefix(info.URL, "nats://127.0.0.1:"), info.URL)
	assert.False(t, info.Background)

	_, err = nats.Connect(info.URL)
	require.ErrorIs(t, err, nats.ErrAuthorization, "no key, no events")
	reader, err := nats.NkeyOptionFromSeed(credsFile(p, events.IdentityReader))
	require.NoError(t, err)
	nc, err := nats.Connect(info.URL, reader)
	require.NoError(t, err)
	defer nc.Close()
	msgs := make(chan *nats.Msg, 100)
	sub, err := nc.ChanSubscribe("orbit.events.>", msgs)
	require.NoError(t, err)
	defer sub.Unsubscribe()
	require.NoError(t, nc.Flush())

	runID := runJob(t, p, "hello")
	var subjects []string
	timeout := time.After(10 * time.Second)
	for done := false; !done; {
		select {
		case m := <-msgs:
			subjects = append(subjects, m.Subject)
			ev, err := events.DecodeEvent(m.Data)
			require.NoError(t, err)
			done = ev.Type == events.RunFinished
		case <-timeout:
			t.Fatalf("saw only %v", subjects)
		}
	}
	assert.Equal(t, "orbit.events.run."+runID+".run.requested", subjects[0])
	assert.Contains(t, subjects, "orbit.events.run."+runID+".step.finished")
	assert.Equal(t, "orbit.events.run."+runID+".run.finished", subjects[len(subjects)-1])
}

func TestSecondEngineOnARootRefusesToStart(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	first := serve(t, p)
	r := p.Orbit("serve", "--listen", "127.0.0.1:0")
	assert.Equal(t, 3, r.Code, r.String())
	assert.Contains(t, r.Stderr, "another engine is serving this root")
	assert.Contains(t, r.Stderr, "pid "+strconv.Itoa(first.Process.Pid))
}

// TestServeConsoleRefusesABadHostName: a serve.http_hosts entry that is not
// a host name stops orbit serve with exit 2, naming the file, the line and
// the entry, before anything listens.
func TestServeConsoleRefusesABadHostName(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	file := p.WriteFile(".orbit/config.yaml", "serve:\n  http: 127.0.0.1:0\n  http_hosts:\n    - orbit.example.com\n    - \"*.example.com\"\n")
	r := p.Orbit("serve", "--listen", "127.0.0.1:0")
	assert.Equal(t, 2, r.Code, r.String())
	assert.Contains(t, r.Stderr, file+`:5: serve.http_hosts[1]: "*.example.com" is not a host name or address`)
	_, err := os.Stat(filepath.Join(p.Root, ".orbit", "state", "console.token"))
	assert.True(t, os.IsNotExist(err), "no console was started: %v", err)
}
