package main_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/engine"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

const sleepJob = `
schemaVersion: 2
kind: Job
metadata: {name: slow}
spec:
  steps:
    - id: wait
      spec: {type: shell, program: sh, args: ["-c", "sleep 4; echo real"], allowed_programs: [sh]}
`

// outsideJetStream connects to the root's engine with the engine's own
// NATS identity but without the log key: the worst a stolen seed allows.
func outsideJetStream(t *testing.T, p *testkit.Project) jetstream.JetStream {
	t.Helper()
	info, err := engine.ReadInfo(p.Root)
	require.NoError(t, err)
	js, err := jetstream.New(testkit.DialEngine(t, info.URL, engine.CredsDir(p.Root)))
	require.NoError(t, err)
	return js
}

// waitForEvent polls the run's events until one of type typ appears.
func waitForEvent(t *testing.T, p *testkit.Project, runID, typ string) events.Event {
	t.Helper()
	var found events.Event
	waitFor(t, typ+" of "+runID, func() bool {
		r := p.Orbit("run", "events", "--json", runID, "--type", typ)
		if r.Code != 0 {
			return false
		}
		var evs []events.Event
		if json.Unmarshal([]byte(r.Stdout), &evs) != nil || len(evs) == 0 {
			return false
		}
		found = evs[0]
		return true
	})
	return found
}

// TestForgeriesWithoutTheLogKeyAreRejected replays the attacks of a local
// user who can reach the engine's NATS server: a forged step.finished for a
// running step, with the derived Nats-Msg-Id and with a made-up MAC, and a
// forged step command. The real output is kept, the command never runs,
// and each forgery is recorded and listed by orbit audit.
func TestForgeriesWithoutTheLogKeyAreRejected(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	p.WriteFile(".orbit/jobs/slow.yaml", sleepJob)
	serve(t, p)
	runID := runJob(t, p, "slow", "--detach")
	started := waitForEvent(t, p, runID, events.StepStarted)
	var sd events.StepStartedData
	require.NoError(t, started.Decode(&sd))

	js := outsideJetStream(t, p)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	forged := events.Event{
		ID:    events.DecisionID(events.StepFinished, runID, "wait", strconv.Itoa(sd.Attempt)),
		Type:  events.StepFinished,
		Time:  time.Now().UTC(),
		RunID: runID, Job: "slow", StepKey: "wait",
		Data: json.RawMessage(`{"attempt":` + strconv.Itoa(sd.Attempt) + `,"state":"success","output":{"stdout":"forged\n"}}`),
	}
	subject, err := forged.Subject()
	require.NoError(t, err)
	body, err := json.Marshal(forged)
	require.NoError(t, err)
	_, err = js.PublishMsg(ctx, &nats.Msg{Subject: subject, Data: body}, jetstream.WithMsgID(forged.ID))
	require.NoError(t, err)
	_, err = js.PublishMsg(ctx, &nats.Msg{Subject: subject, Data: body, Header: nats.Header{events.MACHeader: []string{strings.Repeat("ab", 32)}}})
	require.NoError(t, err)

	pwned := filepath.Join(p.Root, "pwned")
	cmd, err := json.Marshal(map[string]any{
		"run_id": "FAKE", "job": "x", "step_key": "x", "attempt": 1, "workspace": p.Root, "timeout_seconds": 10,
		"activity": map[string]any{"type": "shell", "program": "sh", "args": []string{"-c", "touch " + pwned}, "allowed_programs": []string{"sh"}},
	})
	require.NoError(t, err)
	_, err = js.PublishMsg(ctx, &nats.Msg{Subject: events.CommandSubject("step.shell.FAKE.x.1"), Data: cmd})
	require.NoError(t, err)

	waitFor(t, "the run to finish", func() bool { return terminal(p, runID) })
	v := runView(t, p, runID)
	assert.Equal(t, events.StateSuccess, v.State)
	out, _ := v.Output.(map[string]any)
	assert.Equal(t, "real\n", out["stdout"], "the real output is kept")

	rejected := runEvents(t, p, runID, "--type", events.IntegrityRejected)
	reasons := map[string]bool{}
	for _, ev := range rejected {
		var d events.IntegrityRejectedData
		require.NoError(t, ev.Decode(&d))
		reasons[d.Reason] = true
	}
	assert.Equal(t, map[string]bool{events.ReasonUnsigned: true, events.ReasonBadMAC: true}, reasons)
	assert.Len(t, rejected, 2, "each forgery is recorded once")
	stream, err := js.Stream(ctx, events.EventsStream)
	require.NoError(t, err)
	waitFor(t, "the forged command's rejection", func() bool {
		m, err := stream.GetLastMsgForSubject(ctx, events.EventSubject(events.AggregateRun, "FAKE", events.IntegrityRejected))
		return err == nil && strings.Contains(string(m.Data), "step.shell.FAKE.x.1")
	})
	_, err = os.Stat(pwned)
	assert.ErrorIs(t, err, os.ErrNotExist, "the forged command never ran")

	r := p.Orbit("audit")
	assert.Equal(t, 1, r.Code, r.String())
	assert.Contains(t, r.Stdout, ": unsigned")
	assert.Contains(t, r.Stdout, ": bad MAC")
	assert.Contains(t, r.Stdout, "2 problems")
	r = p.Orbit("replay", "--verify")
	assert.Equal(t, 1, r.Code, r.String())
	assert.Contains(t, r.Stdout, "0 differences, 2 integrity problems")
}

// TestAnUnsignedLogStaysReadableWhenTheKeyIsMade: a project whose log the
// current key did not sign (written before engines signed; here, by a key
// since removed) reads clean after the key is made, and audits clean.
func TestAnUnsignedLogStaysReadableWhenTheKeyIsMade(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	r := p.Orbit("job", "run", "hello")
	require.Equal(t, 0, r.Code, r.String())
	p.StopEngine()
	key := engine.LogKeyPath(p.Root)
	require.NoError(t, os.Remove(key), "the engine made a key")

	r = p.Orbit("job", "run", "hello")
	require.Equal(t, 0, r.Code, r.String())
	_, err := os.Stat(key)
	require.NoError(t, err, "the next engine made a new key")
	r = p.Orbit("audit")
	assert.Equal(t, 0, r.Code, r.String())
	assert.Contains(t, r.Stdout, "0 problems")
	r = p.Orbit("replay", "--verify")
	assert.Equal(t, 0, r.Code, r.String())
	r = p.Orbit("run", "history")
	assert.Equal(t, 0, r.Code, r.String())
	assert.Equal(t, 2, strings.Count(r.Stdout, "hello"), r.Stdout)
}

// TestReplayVerifyFindsARunWhoseHistoryChanged: the log replaced behind
// the engine's back by a copy of its own signed events, two of one run in
// the other order. Every MAC verifies and no sequence is missing, so only
// the run's hash chain shows that a rebuild no longer reproduces it.
func TestReplayVerifyFindsARunWhoseHistoryChanged(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	serve(t, p)
	runID := runJob(t, p, "hello")

	js := outsideJetStream(t, p)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stream, err := js.Stream(ctx, events.EventsStream)
	require.NoError(t, err)
	info, err := stream.Info(ctx)
	require.NoError(t, err)
	var msgs []*jetstream.RawStreamMsg
	swap := -1
	for seq := uint64(1); seq <= info.State.LastSeq; seq++ {
		m, err := stream.GetMsg(ctx, seq)
		require.NoError(t, err)
		if swap < 0 && strings.HasSuffix(m.Subject, ".step.finished") && len(msgs) > 0 && strings.HasSuffix(msgs[len(msgs)-1].Subject, ".shell.exited") {
			swap = len(msgs)
		}
		msgs = append(msgs, m)
	}
	require.Positive(t, swap, "the run has a shell.exited before a step.finished")
	msgs[swap-1], msgs[swap] = msgs[swap], msgs[swap-1]
	cfg := info.Config
	require.NoError(t, js.DeleteStream(ctx, events.EventsStream))
	_, err = js.CreateStream(ctx, cfg)
	require.NoError(t, err)
	for _, m := range msgs {
		hdr := nats.Header{events.MACHeader: m.Header.Values(events.MACHeader), jetstream.MsgIDHeader: m.Header.Values(jetstream.MsgIDHeader)}
		_, err := js.PublishMsg(ctx, &nats.Msg{Subject: m.Subject, Header: hdr, Data: m.Data})
		require.NoError(t, err)
	}

	r := p.Orbit("audit")
	assert.Equal(t, 0, r.Code, "every event is signed and none is missing:\n%s", r)
	r = p.Orbit("replay", "--verify", "--json")
	assert.Equal(t, 1, r.Code, r.String())
	var report struct {
		Differences []struct{ Bucket, Key string }
	}
	require.NoError(t, json.Unmarshal([]byte(r.Stdout), &report), r.Stdout)
	buckets := map[string]bool{}
	for _, d := range report.Differences {
		if d.Key == runID {
			buckets[d.Bucket] = true
		}
	}
	assert.True(t, buckets["run_chains"], "the run's chain differs: %s", r.Stdout)
}

// TestEnginesOnAnExternalServerSignWithTheLogKeyTheyAreGiven: with
// --log-key the first engine makes the key and signs everything; a client
// with the key verifies what it reads, and one without it still submits
// runs, through the engine's API, which signs them.
func TestEnginesOnAnExternalServerSignWithTheLogKeyTheyAreGiven(t *testing.T) {
	t.Parallel()
	srv := externalNATSServer(t)

	key := filepath.Join(t.TempDir(), "shared", "log.key")
	p := testkit.NewProject(t)
	p.Env = append(p.Env, "ORBIT_NATS_URL="+srv.ClientURL())
	keyed := append(p.Env, "ORBIT_LOG_KEY="+key)
	bare := p.Env
	p.Env = keyed
	serve(t, p)
	fi, err := os.Stat(key)
	require.NoError(t, err, "the engine made the key")
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

	r := p.Orbit("job", "run", "hello")
	require.Equal(t, 0, r.Code, r.String())
	r = p.Orbit("audit")
	assert.Equal(t, 0, r.Code, r.String())
	assert.Contains(t, r.Stdout, "(signed from sequence 1): 0 problems")

	p.Env = bare
	r = p.Orbit("job", "run", "hello")
	require.Equal(t, 0, r.Code, r.String())
	p.Env = keyed
	r = p.Orbit("audit")
	assert.Equal(t, 0, r.Code, r.String())
	assert.Contains(t, r.Stdout, "(signed from sequence 1): 0 problems")
}
