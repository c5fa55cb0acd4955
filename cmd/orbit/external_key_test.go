package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
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

// orbitWithin runs the binary on p like p.Orbit, killing it after d: a
// command that would wait for ever fails the test instead of hanging it.
func orbitWithin(t *testing.T, p *testkit.Project, d time.Duration, args ...string) testkit.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	cmd := p.Command(args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		code := 0
		if exitErr, ok := err.(*exec.ExitError); ok {
			code = exitErr.ExitCode()
		}
		return testkit.Result{Stdout: stdout.String(), Stderr: stderr.String(), Code: code}
	case <-ctx.Done():
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("orbit %v did not end within %s:\nstdout:\n%s\nstderr:\n%s", args, d, stdout.String(), stderr.String())
		return testkit.Result{}
	}
}

// TestAnExternalEngineAndItsClientsFollowOneKeyRule takes the documented
// path to an external NATS server in a project that once ran the embedded
// engine: orbit init --new-log, orbit nats-config into the server's
// configuration, orbit serve with the server's URL and no --log-key. That engine signs nothing, while
// the root keeps the key the embedded engine made; the client used it and
// left out every event, so orbit job run waited for ever and run events
// printed nothing. Now the engine says in engine.info with which key it
// signs, and the client verifies with that one or none.
func TestAnExternalEngineAndItsClientsFollowOneKeyRule(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	r := p.Orbit("job", "run", "example")
	require.Equal(t, 0, r.Code, r.String())
	p.StopEngine()
	_, err := os.Stat(engine.LogKeyPath(p.Root))
	require.NoError(t, err, "the embedded engine made the root's key")

	// The views of the embedded log are set aside, as the engine says to
	// when it finds another log.
	r = p.Orbit("init", "--new-log")
	require.Equal(t, 0, r.Code, r.String())
	r = p.Orbit("nats-config")
	require.Equal(t, 0, r.Code, r.String())
	stderr := serveOnExternalServer(t, p, r.Stdout)

	r = orbitWithin(t, p, time.Minute, "job", "run", "example")
	require.Equal(t, 0, r.Code, r.String())
	runID := strings.TrimSpace(strings.SplitN(r.Stdout, "\n", 2)[0])
	assert.NotContains(t, r.Stderr, "left out")
	r = orbitWithin(t, p, time.Minute, "run", "events", runID)
	require.Equal(t, 0, r.Code, r.String())
	assert.Contains(t, r.Stdout, events.StepFinished)
	assert.Contains(t, r.Stdout, events.RunFinished)
	r = orbitWithin(t, p, time.Minute, "audit")
	assert.Equal(t, 0, r.Code, r.String())
	assert.Contains(t, r.Stdout, "not signed: MACs not checked")
	assert.NotContains(t, stderr.String(), "rejecting")
}

// TestWhatAClientLeavesOutItSays: a forged, unsigned step.finished and
// run.finished for a running run. The command following the run says on
// stderr what it left out, goes on, and ends with the run's real end.
func TestWhatAClientLeavesOutItSays(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	p.WriteFile(".orbit/jobs/slow.yaml", sleepJob)
	serve(t, p)
	cmd := p.Command("job", "run", "slow")
	var stdout, stderr testkit.SyncBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var runID string
	waitFor(t, "the run to start", func() bool {
		runID = strings.TrimSpace(stdout.String())
		return runID != "" && strings.Contains(stderr.String(), "started")
	})
	js := outsideJetStream(t, p)
	for _, typ := range []string{events.StepFinished, events.RunFinished} {
		forged := events.Event{ID: events.NewID(), Type: typ, Time: time.Now().UTC(), RunID: runID, StepKey: "wait",
			Data: json.RawMessage(`{"state":"failed","attempt":1,"duration_ms":1}`)}
		subject, err := forged.Subject()
		require.NoError(t, err)
		body, err := json.Marshal(forged)
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err = js.PublishMsg(ctx, &nats.Msg{Subject: subject, Data: body})
		cancel()
		require.NoError(t, err)
	}
	select {
	case err := <-done:
		require.NoError(t, err, "stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	case <-time.After(time.Minute):
		_ = cmd.Process.Kill()
		t.Fatalf("job run did not end:\n%s", stderr.String())
	}
	assert.Equal(t, 2, strings.Count(stderr.String(), "orbit: left out ORBIT_EVENTS sequence"), stderr.String())
	assert.Contains(t, stderr.String(), "orbit.events.run."+runID+".run.finished): unsigned")
	assert.Contains(t, stderr.String(), "success")
}
