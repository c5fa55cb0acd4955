package main_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/textproto"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
)

// TestAStepFinishedStoredLateEndsItsRun: the engine's first step.finished
// reaches the server two minutes after its time, as it does when the
// engine (and its embedded server) is suspended between making the event
// and storing it; the failpoint append-stalled-step.finished acts that
// out. The engine acted on the append it was told was stored, so its own
// readers must read it: the run ends, `orbit job run` sees it end, the
// views and a rebuild agree, nothing is recorded as rejected, and audit
// notes the late event without failing.
//
// Then the attack the time check is for, on that very event, with the
// official nats CLI: the reader captures it, the client may not publish
// it, and a holder of the engine's NATS identity (no log key) shortens
// the duplicate window and stores it again under its own id. The copy is
// as late as the original and verifies, but its id was stored before:
// every reader leaves it out, the engine records it as rejected, the
// views keep one step.finished, and audit fails on it.
func TestAStepFinishedStoredLateEndsItsRun(t *testing.T) {
	t.Parallel()
	p, natsBin, env := natsCLIProject(t)
	p.Env = append(p.Env, "ORBIT_FAILPOINT=append-stalled-step.finished")
	serve(t, p)
	p.Env = p.Env[:len(p.Env)-1]

	r := orbitWithin(t, p, 60*time.Second, "job", "run", "example")
	require.Equal(t, 0, r.Code, r.String())
	runID := strings.TrimSpace(strings.SplitN(r.Stdout, "\n", 2)[0])

	finished := runEvents(t, p, runID, "--type", events.StepFinished)
	require.Len(t, finished, 2)
	late := finished[0]
	assert.Greater(t, time.Since(late.Time), time.Minute, "the failpoint made the first step.finished late")
	v := runView(t, p, runID)
	assert.Equal(t, events.StateSuccess, v.State)
	assert.Len(t, v.Steps, 2)
	assert.Empty(t, runEvents(t, p, runID, "--type", events.IntegrityRejected))

	r = p.Orbit("audit")
	assert.Equal(t, 0, r.Code, r.String())
	assert.Contains(t, r.Stdout, "seq "+seqText(late.Seq)+" orbit.events.run."+runID+".step.finished: stored late:")
	r = p.Orbit("replay", "--verify")
	assert.Equal(t, 0, r.Code, r.String())

	// The reader captures the late event, headers and all.
	r = p.Orbit("nats-context", "--reader", "--name", "orbit-late-reader")
	require.Equal(t, 0, r.Code, r.String())
	r = p.Orbit("nats-context", "--name", "orbit-late-client")
	require.Equal(t, 0, r.Code, r.String())
	out, code := runNATS(t, natsBin, env, "--context", "orbit-late-reader", "--timeout", "3s", "stream", "get", events.EventsStream, seqText(late.Seq), "--json")
	require.Equal(t, 0, code, out)
	var captured struct {
		Subject string `json:"subject"`
		Header  []byte `json:"hdrs"`
		Data    []byte `json:"data"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &captured), out)
	// NATS headers: a status line ("NATS/1.0"), then MIME headers.
	lines := bufio.NewReader(bytes.NewReader(captured.Header))
	_, err := lines.ReadString('\n')
	require.NoError(t, err, "%q", captured.Header)
	hdr, err := textproto.NewReader(lines).ReadMIMEHeader()
	require.NoError(t, err, "%q", captured.Header)
	msgID, mac := hdr.Get(jetstream.MsgIDHeader), hdr.Get(events.MACHeader)
	require.NotEmpty(t, msgID)
	require.NotEmpty(t, mac)
	publish := func(identity ...string) (string, int) {
		args := append(identity, "--timeout", "3s", "pub", "--jetstream", "--force-stdin",
			"-H", jetstream.MsgIDHeader+":"+msgID, "-H", events.MACHeader+":"+mac, captured.Subject)
		c := exec.Command(natsBin, args...)
		c.Env = append(os.Environ(), env...)
		c.Stdin = bytes.NewReader(captured.Data)
		b, err := c.CombinedOutput()
		if err != nil {
			return string(b), 1
		}
		return string(b), 0
	}

	out, code = publish("--context", "orbit-late-client")
	assert.NotEqual(t, 0, code, out)
	assert.Contains(t, out, "Permissions Violation for Publish to", "the client may not publish an event")

	js := outsideJetStream(t, p)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	stream, err := js.Stream(ctx, events.EventsStream)
	require.NoError(t, err)
	cfg := stream.CachedInfo().Config
	engineID := []string{"--server", engineURL(t, p), "--nkey", credsFile(p, events.IdentityEngine)}
	stored := regexp.MustCompile(`Stored in Stream: ` + events.EventsStream + ` Sequence: ([\d,]+)( Duplicate: true)?`)
	var copied uint64
	// The server forgets ids on a timer that a change of the window makes
	// fire at once, which under load may be before the new window is in
	// place; each retry moves the window to reset the timer again.
	for i, deadline := time.Duration(0), time.Now().Add(20*time.Second); copied == 0; i++ {
		cfg.Duplicates = time.Second + i*time.Millisecond
		_, err = js.UpdateStream(ctx, cfg)
		require.NoError(t, err)
		time.Sleep(1500 * time.Millisecond)
		out, code = publish(engineID...)
		require.Equal(t, 0, code, out)
		m := stored.FindStringSubmatch(out)
		require.NotNil(t, m, out)
		if m[2] == "" {
			copied, err = strconv.ParseUint(strings.ReplaceAll(m[1], ",", ""), 10, 64)
			require.NoError(t, err)
		}
		require.False(t, time.Now().After(deadline), "the server dropped every copy as a duplicate")
	}

	r = p.Orbit("run", "events", "--json", runID, "--type", events.StepFinished)
	require.Equal(t, 0, r.Code, r.String())
	var evs []events.Event
	require.NoError(t, json.Unmarshal([]byte(r.Stdout), &evs), r.Stdout)
	assert.Equal(t, []uint64{late.Seq, finished[1].Seq}, []uint64{evs[0].Seq, evs[len(evs)-1].Seq})
	assert.Len(t, evs, 2, "the copy is left out")
	assert.Contains(t, r.Stderr, "left out "+events.EventsStream+" sequence "+seqText(copied))
	var rejected events.IntegrityRejectedData
	waitFor(t, "the engine to record the copy as rejected", func() bool {
		for _, ev := range runEvents(t, p, runID, "--type", events.IntegrityRejected) {
			if ev.Decode(&rejected) == nil && rejected.Seq == copied {
				return true
			}
		}
		return false
	})
	assert.Equal(t, events.ReasonRepeated, rejected.Reason)
	assert.Len(t, runView(t, p, runID).Steps, 2)

	r = p.Orbit("audit")
	assert.Equal(t, 1, r.Code, r.String())
	assert.Contains(t, r.Stdout, "seq "+seqText(copied)+" orbit.events.run."+runID+".step.finished: "+events.ReasonRepeated)
	assert.Contains(t, r.Stdout, "its id is stored at seq "+seqText(late.Seq))
	r = p.Orbit("replay", "--verify")
	assert.Equal(t, 1, r.Code, r.String())
	assert.Contains(t, r.Stdout, events.ReasonRepeated)
}
