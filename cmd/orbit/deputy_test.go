package main_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/engine"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

// bigJob prints more than an event holds inline, so that its run leaves a
// blob in OBJ_orbit_blobs.
const bigJob = `
schemaVersion: 2
kind: Job
metadata: {name: big}
spec:
  steps:
    - id: print
      spec: {type: shell, program: sh, args: ["-c", "head -c 300000 /dev/zero | tr '\\0' a"], allowed_programs: [sh]}
`

// writeEndpoints are the API endpoints that change something: what a
// message the server delivers on someone's behalf must never reach.
var writeEndpoints = []string{
	engine.EndpointSubmit, engine.EndpointCancel, engine.EndpointRunRetry, engine.EndpointRunResume,
	engine.EndpointRunSignal, engine.EndpointGroundhogApprove, engine.EndpointGroundhogAbandon,
	engine.EndpointGroundhogRewind, engine.EndpointGroundhogVerb, engine.EndpointTaskCreate, engine.EndpointTaskPlan,
}

// deliveredByTheServer reports whether m is something the NATS server
// sent on its own account rather than a client's request: a consumer's
// delivery (its ack reply, a stored message's headers), a status, or a
// JetStream API answer.
func deliveredByTheServer(m *nats.Msg) bool {
	if strings.HasPrefix(m.Reply, "$JS.ACK.") || strings.HasPrefix(string(m.Data), `{"type":"io.nats.jetstream.api`) {
		return true
	}
	for _, h := range []string{"Nats-Stream", "Nats-Sequence", "Nats-Subject", "Nats-Msg-Id", "Orbit-Mac", "Status"} {
		if m.Header.Get(h) != "" {
			return true
		}
	}
	return false
}

// spy listens with the engine's own key where only the engine's peers and
// its clients' requests should arrive, and keeps what the server itself
// delivered there, and anything at all on the command subjects.
type spy struct {
	mu  sync.Mutex
	got []string
}

func (s *spy) seen() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.got...)
}

func listenAsTheEngine(t *testing.T, p *testkit.Project, url string) *spy {
	t.Helper()
	nc, err := testkit.DialOutsider(t, url, credsFile(p, events.IdentityEngine))
	require.NoError(t, err)
	s := &spy{}
	for _, subject := range []string{events.APIRoot + ".>", events.CommandsRoot + ".>"} {
		_, err := nc.NC.Subscribe(subject, func(m *nats.Msg) {
			if strings.HasPrefix(m.Subject, events.CommandsRoot+".") || deliveredByTheServer(m) {
				s.mu.Lock()
				s.got = append(s.got, fmt.Sprintf("%s (reply %q, headers %v): %.120s", m.Subject, m.Reply, m.Header, m.Data))
				s.mu.Unlock()
			}
		})
		require.NoError(t, err)
	}
	require.NoError(t, nc.NC.Flush())
	return s
}

// consumerRequest is a JetStream request to create consumer name on
// stream, pushing to deliver (in queue group q, the API's) what filter
// matches, from the start, without acks.
func consumerRequest(stream, name, filter, deliver string) *nats.Msg {
	body, _ := json.Marshal(map[string]any{"stream_name": stream, "action": "create", "config": map[string]any{
		"name": name, "deliver_subject": deliver, "deliver_group": "q", "filter_subject": filter,
		"deliver_policy": "all", "ack_policy": "none", "replay_policy": "instant",
	}})
	return &nats.Msg{Subject: "$JS.API.CONSUMER.CREATE." + stream + "." + name + "." + filter, Data: body}
}

// TestNoIdentityMakesTheServerDeliverForIt replays the confused-deputy
// attacks of issue 24 with a raw NATS client as each identity but the
// engine: push consumers on the log and on the blobs that deliver to every
// write endpoint (in the API's queue group and at the engine's own
// subject) and into the log; JetStream requests (stream info, direct and
// stored-message gets, a pull) whose reply subject is such a target; and
// requests to the engine whose reply is in the log, in the command queue,
// or another identity's inbox. Nothing reaches the engine's subjects, the
// log does not grow, the reader's inbox gets nothing, no run was retried
// or cancelled, and the audit is clean.
func TestNoIdentityMakesTheServerDeliverForIt(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	p.WriteFile(".orbit/jobs/big.yaml", bigJob)
	serve(t, p)
	runID := runJob(t, p, "big")
	info, err := engine.ReadInfo(p.Root)
	require.NoError(t, err)
	url := info.URL
	spied := listenAsTheEngine(t, p, url)
	creds, err := events.EnsureCreds(engine.CredsDir(p.Root))
	require.NoError(t, err)

	reader, err := testkit.DialOutsider(t, url, credsFile(p, events.IdentityReader))
	require.NoError(t, err)
	readerInbox := events.InboxPrefix(creds.Public[events.IdentityReader])
	var strayMu sync.Mutex
	var stray []string
	_, err = reader.NC.Subscribe(readerInbox+".stray.>", func(m *nats.Msg) {
		strayMu.Lock()
		stray = append(stray, fmt.Sprintf("%s: %.120s", m.Subject, m.Data))
		strayMu.Unlock()
	})
	require.NoError(t, err)
	require.NoError(t, reader.NC.Flush())
	before := lastSeq(t, p)

	finished := events.EventSubject(events.AggregateRun, runID, events.RunFinished)
	var targets []string
	for _, ep := range writeEndpoints {
		targets = append(targets, events.APISubject(ep), events.EngineSubject(info.Engine, ep))
	}
	n := 0
	for _, id := range []events.Identity{events.IdentityReader, events.IdentityClient, events.IdentityAgent} {
		o, err := testkit.DialOutsider(t, url, credsFile(p, id))
		require.NoError(t, err, id)
		nc := o.NC
		// Interest in the log, where the identity may have it, so that a
		// consumer pushing there would deliver.
		_, _ = nc.SubscribeSync(events.EventsRoot + ".>")
		injected := events.EventSubject(events.AggregateRun, runID, "injected."+string(id))
		// A pull consumer of its own (refused to the agent), to pull from
		// into each target.
		pull := "pull-" + string(id)
		body, _ := json.Marshal(map[string]any{"stream_name": events.EventsStream, "action": "create", "config": map[string]any{
			"name": pull, "filter_subject": finished, "ack_policy": "none", "inactive_threshold": int64(time.Minute)}})
		_, _ = nc.Request("$JS.API.CONSUMER.CREATE."+events.EventsStream+"."+pull+"."+finished, body, 500*time.Millisecond)
		for i, target := range append(targets, injected) {
			n++
			require.NoError(t, nc.PublishMsg(withReply(consumerRequest(events.EventsStream, fmt.Sprintf("atk%d", n), finished, target), nc)))
			if i == len(targets) {
				n++
				blobs := "OBJ_" + events.BlobsStore
				require.NoError(t, nc.PublishMsg(withReply(consumerRequest(blobs, fmt.Sprintf("atk%d", n), "$O."+events.BlobsStore+".C.>", target), nc)))
			}
			for _, ask := range []*nats.Msg{
				{Subject: "$JS.API.STREAM.INFO." + events.EventsStream},
				{Subject: "$JS.API.DIRECT.GET." + events.EventsStream, Data: []byte(`{"last_by_subj":"` + finished + `"}`)},
				{Subject: "$JS.API.STREAM.MSG.GET." + events.EventsStream, Data: []byte(`{"last_by_subj":"` + finished + `"}`)},
			} {
				ask.Reply = target
				require.NoError(t, nc.PublishMsg(ask))
			}
			require.NoError(t, nc.PublishRequest("$JS.API.CONSUMER.MSG.NEXT."+events.EventsStream+"."+pull, target, []byte(`{"batch":1,"no_wait":true}`)))
		}
		// Requests to the engine whose answer would go into the log, the
		// command queue, or the reader's inbox.
		ask := events.APISubject(engine.EndpointInfo)
		if id == events.IdentityAgent {
			ask = events.EngineSubject(info.Engine, "engines")
		}
		for _, reply := range []string{injected + ".answer", events.CommandSubject("answer." + string(id)), readerInbox + ".stray." + string(id)} {
			require.NoError(t, nc.PublishRequest(ask, reply, nil))
		}
		require.NoError(t, nc.Flush())
	}
	time.Sleep(2 * time.Second)

	assert.Empty(t, spied.seen(), "the server delivered into the engine's subjects")
	strayMu.Lock()
	assert.Empty(t, stray, "the engine answered into the reader's inbox")
	strayMu.Unlock()
	assert.Equal(t, before, lastSeq(t, p), "the log grew")
	r := p.Orbit("run", "history")
	require.Equal(t, 0, r.Code, r.String())
	assert.Equal(t, 1, strings.Count(r.Stdout, "big"), "no run was retried:\n%s", r.Stdout)
	r = p.Orbit("run", "events", runID)
	require.Equal(t, 0, r.Code, r.String())
	assert.NotContains(t, r.Stdout, events.RunCancelRequested)
	r = p.Orbit("audit")
	assert.Equal(t, 0, r.Code, "the audit is clean: %s", r.String())
}

// withReply gives a JetStream request a reply subject in nc's own inbox.
func withReply(m *nats.Msg, nc *nats.Conn) *nats.Msg {
	m.Reply = nc.NewRespInbox()
	return m
}

// lastSeq is the log's last sequence, as the audit reports it.
func lastSeq(t *testing.T, p *testkit.Project) uint64 {
	t.Helper()
	r := p.Orbit("audit", "--json")
	var report events.AuditReport
	require.NoError(t, json.Unmarshal([]byte(r.Stdout), &report), r.String())
	return report.LastSeq
}

// TestAReaderCannotMakeTheServerRetryARun is finding 1 of issue 24 as it
// was found, with the official nats CLI: as the reader, and as the client,
// a push consumer of a finished run's run.finished that delivers to
// orbit.api.runs.retry in the API's queue group. The server refuses it, and
// the run is not run again.
func TestAReaderCannotMakeTheServerRetryARun(t *testing.T) {
	t.Parallel()
	p, natsBin, env := natsCLIProject(t)
	serve(t, p)
	runID := runJob(t, p, "hello")
	for _, reader := range []bool{true, false} {
		name := "orbit-deputy-client"
		args := []string{"nats-context", "--name", name}
		if reader {
			name = "orbit-deputy-reader"
			args = append(args, "--reader")
		}
		args[2] = name
		r := p.Orbit(args...)
		require.Equal(t, 0, r.Code, r.String())
		out, code := runNATS(t, natsBin, env, "--context", name, "--timeout", "3s", "consumer", "add", events.EventsStream, "retrier-"+name,
			"--target", events.APISubject(engine.EndpointRunRetry), "--deliver-group", "q",
			"--filter", events.EventSubject(events.AggregateRun, runID, events.RunFinished),
			"--deliver", "all", "--ack", "none", "--replay", "instant", "--defaults")
		assert.NotEqual(t, 0, code, "%s: the consumer was created: %s", name, out)
	}
	time.Sleep(2 * time.Second)
	r := p.Orbit("run", "history")
	require.Equal(t, 0, r.Code, r.String())
	assert.Equal(t, 1, strings.Count(r.Stdout, "hello"), "the run was retried:\n%s", r.Stdout)
}

// TestAReaderCannotWriteTheLogThroughTheBlobs is finding 2 of issue 24 as
// it was found: the reader tails the log with the official nats CLI (the
// interest a push consumer needs: its deliver subject) and adds a consumer of the blob store
// that pushes into orbit.events. The server refuses it: the log does not
// grow and the audit stays clean.
func TestAReaderCannotWriteTheLogThroughTheBlobs(t *testing.T) {
	t.Parallel()
	p, natsBin, env := natsCLIProject(t)
	p.WriteFile(".orbit/jobs/big.yaml", bigJob)
	serve(t, p)
	runID := runJob(t, p, "big")
	r := p.Orbit("nats-context", "--reader", "--name", "orbit-blobs-reader")
	require.Equal(t, 0, r.Code, r.String())
	before := lastSeq(t, p)

	injected := events.EventSubject(events.AggregateRun, runID, "injected")
	sub := exec.Command(natsBin, "--context", "orbit-blobs-reader", "sub", injected)
	sub.Env = append(os.Environ(), env...)
	var tail testkit.SyncBuffer
	sub.Stdout, sub.Stderr = &tail, &tail
	require.NoError(t, sub.Start())
	t.Cleanup(func() { _ = sub.Process.Kill(); _ = sub.Wait() })
	waitFor(t, "nats sub to subscribe", func() bool { return strings.Contains(tail.String(), "Subscribing on") })

	out, code := runNATS(t, natsBin, env, "--context", "orbit-blobs-reader", "--timeout", "3s", "consumer", "add", "OBJ_"+events.BlobsStore, "copier",
		"--target", injected,
		"--deliver", "all", "--ack", "none", "--replay", "instant", "--defaults")
	assert.NotEqual(t, 0, code, "the consumer was created: %s", out)
	time.Sleep(2 * time.Second)
	assert.Equal(t, before, lastSeq(t, p), "the log grew")
	r = p.Orbit("audit")
	assert.Equal(t, 0, r.Code, "the audit is clean: %s", r.String())
}
