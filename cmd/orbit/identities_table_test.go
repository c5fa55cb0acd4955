package main_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
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

// identityTable is the table of identities of docs/security.md: for each
// row (what an identity may do), whether each identity may, by column.
type identityTable struct {
	columns []events.Identity
	rows    map[string]map[events.Identity]bool
}

// readIdentityTable parses the table of identities in docs/security.md:
// its header names the identities, each row says yes or no for each.
func readIdentityTable(t *testing.T) identityTable {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testkit.ModuleRoot(t), "docs", "security.md"))
	require.NoError(t, err)
	_, table, ok := strings.Cut(string(data), "\n| identity may … |")
	require.True(t, ok, "docs/security.md has the table of identities")
	lines := strings.Split("| identity may … |"+table, "\n")
	cells := func(line string) []string {
		parts := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
		for i := range parts {
			parts[i] = strings.TrimSpace(parts[i])
		}
		return parts
	}
	tab := identityTable{rows: map[string]map[events.Identity]bool{}}
	for _, c := range cells(lines[0])[1:] {
		tab.columns = append(tab.columns, events.Identity(c))
	}
	require.ElementsMatch(t, events.Identities, tab.columns, "a column per identity")
	for _, line := range lines[2:] {
		if !strings.HasPrefix(line, "|") {
			break
		}
		c := cells(line)
		require.Len(t, c, len(tab.columns)+1, line)
		row := map[events.Identity]bool{}
		for i, v := range c[1:] {
			require.Contains(t, []string{"yes", "no"}, v, line)
			row[tab.columns[i]] = v == "yes"
		}
		tab.rows[c[0]] = row
	}
	return tab
}

// identityProbes are the rows of the table, each as what it asks of the
// server: true when the identity could.
var identityProbes = map[string]func(pb *prober, id events.Identity) bool{
	"write the log, the command queue, the buckets and the blobs":                                (*prober).writes,
	"read the log and the blobs (stream info, direct and stored-message gets)":                   (*prober).reads,
	"follow the log with a pull consumer, made through the engine":                               (*prober).follows,
	"make a push or a durable consumer":                                                          (*prober).makesPushOrDurable,
	"tail `orbit.events.>`":                                                                      (*prober).tails,
	"call the API (`orbit.api.>`)":                                                               (*prober).callsTheAPI,
	"send a Groundhog verb (`groundhog.verb`, which takes it only with an open attempt's token)": (*prober).sendsAVerb,
	"fetch an API answer too large for a message (`orbit_replies`)":                              (*prober).fetchesLargeAnswers,
	"make the server deliver into the engine's subjects (a consumer, a reply subject)":           (*prober).makesTheServerDeliver,
	"read another identity's inbox":                                                              (*prober).readsAnotherInbox,
}

// TestTheTableOfIdentitiesHolds reads the table of identities in
// docs/security.md and checks every cell against a running
// engine's server, signing in with each identity's seed: what a row says
// an identity may do, it can, and what it may not, the server refuses (or
// it reaches nothing). A row without a probe, or a probe without a row,
// fails the test.
func TestTheTableOfIdentitiesHolds(t *testing.T) {
	t.Parallel()
	tab := readIdentityTable(t)
	for row := range tab.rows {
		assert.Contains(t, identityProbes, row, "the docs' row %q has no probe", row)
	}
	for row := range identityProbes {
		assert.Contains(t, tab.rows, row, "the probe %q has no row in docs/security.md", row)
	}
	p := testkit.NewProject(t)
	serve(t, p)
	r := p.Orbit("job", "run", "hello")
	require.Equal(t, 0, r.Code, r.String())
	pb := newProber(t, p)
	r = p.Orbit("job", "run", "hello")
	require.Equal(t, 0, r.Code, r.String())
	for row, want := range tab.rows {
		probe, ok := identityProbes[row]
		if !ok {
			continue
		}
		for _, id := range tab.columns {
			assert.Equal(t, want[id], probe(pb, id), "%s may %s: docs/security.md says %t", id, row, want[id])
		}
	}
	r = p.Orbit("audit")
	assert.Equal(t, 0, r.Code, "the probes left the log clean: %s", r.String())
}

// prober holds a connection per identity to a running engine's server,
// each with its own inbox, and one more as the engine to watch with.
type prober struct {
	t       *testing.T
	ctx     context.Context
	engine  string
	conns   map[events.Identity]*testkit.Outsider
	keys    map[events.Identity]string
	logSubs map[events.Identity]*nats.Subscription
	watch   *nats.Conn
}

func newProber(t *testing.T, p *testkit.Project) *prober {
	t.Helper()
	info, err := engine.ReadInfo(p.Root)
	require.NoError(t, err)
	creds, err := events.EnsureCreds(engine.CredsDir(p.Root))
	require.NoError(t, err)
	pb := &prober{t: t, ctx: testkit.Context(t), engine: info.Engine, conns: map[events.Identity]*testkit.Outsider{},
		keys: creds.Public, logSubs: map[events.Identity]*nats.Subscription{}}
	for _, id := range events.Identities {
		o, err := testkit.DialOutsider(t, info.URL, credsFile(p, id))
		require.NoError(t, err, id)
		pb.conns[id] = o
		if sub, err := o.NC.SubscribeSync(events.EventsRoot + ".>"); err == nil {
			pb.logSubs[id] = sub
		}
		require.NoError(t, o.NC.Flush())
	}
	watch, err := testkit.DialOutsider(t, info.URL, credsFile(p, events.IdentityEngine))
	require.NoError(t, err)
	pb.watch = watch.NC
	return pb
}

// answered is an answer of JetStream's that is not an error.
func answered(reply *nats.Msg) bool {
	if reply == nil || reply.Header.Get("Status") != "" {
		return false
	}
	var e struct {
		Error *struct{} `json:"error"`
	}
	return json.Unmarshal(reply.Data, &e) != nil || e.Error == nil
}

// writes publishes to the log, the command queue, a bucket and the blobs
// expecting a last sequence no stream has: JetStream answers (refusing to
// store it) only a publisher that reached the stream.
func (pb *prober) writes(id events.Identity) bool {
	reached := 0
	for _, subject := range []string{
		events.EventSubject(events.AggregateRun, "PROBE", "probe"), events.CommandSubject("probe"),
		"$KV." + events.LocksBucket + ".probe", "$O." + events.BlobsStore + ".C.probe",
	} {
		msg := &nats.Msg{Subject: subject, Header: nats.Header{"Nats-Expected-Last-Sequence": []string{"1000000000"}}, Data: []byte("{}")}
		reply, refused := pb.conns[id].Ask(msg)
		if !refused && reply != nil && strings.Contains(string(reply.Data), "wrong last sequence") {
			reached++
		}
	}
	require.Contains(pb.t, []int{0, 4}, reached, "%s reached some of the streams only", id)
	return reached == 4
}

func (pb *prober) reads(id events.Identity) bool {
	info, _ := pb.conns[id].Ask(&nats.Msg{Subject: "$JS.API.STREAM.INFO." + events.EventsStream})
	blobs, _ := pb.conns[id].Ask(&nats.Msg{Subject: "$JS.API.STREAM.INFO.OBJ_" + events.BlobsStore})
	first, _ := pb.conns[id].Ask(&nats.Msg{Subject: "$JS.API.DIRECT.GET." + events.EventsStream, Data: []byte(`{"seq":1}`)})
	stored, _ := pb.conns[id].Ask(&nats.Msg{Subject: "$JS.API.STREAM.MSG.GET." + events.EventsStream, Data: []byte(`{"seq":1}`)})
	return answered(info) && answered(blobs) && answered(first) && first.Header.Get("Nats-Sequence") == "1" && answered(stored)
}

func (pb *prober) follows(id events.Identity) bool {
	js, err := jetstream.New(pb.conns[id].NC)
	require.NoError(pb.t, err)
	ctx, cancel := context.WithTimeout(pb.ctx, 3*time.Second)
	defer cancel()
	cons, err := js.OrderedConsumer(ctx, events.EventsStream, jetstream.OrderedConsumerConfig{})
	if err != nil {
		return false
	}
	msg, err := cons.Next(jetstream.FetchMaxWait(2 * time.Second))
	if err != nil {
		return false
	}
	md, err := msg.Metadata()
	return err == nil && md.Sequence.Stream == 1
}

func (pb *prober) makesPushOrDurable(id events.Identity) bool {
	push := fmt.Sprintf("probe-push-%s", id)
	durable := fmt.Sprintf("probe-durable-%s", id)
	made := 0
	for name, cfg := range map[string]map[string]any{
		push:    {"name": push, "deliver_subject": pb.conns[id].NC.NewInbox(), "ack_policy": "none"},
		durable: {"durable_name": durable, "ack_policy": "none"},
	} {
		body, err := json.Marshal(map[string]any{"stream_name": events.EventsStream, "config": cfg})
		require.NoError(pb.t, err)
		reply, refused := pb.conns[id].Ask(&nats.Msg{Subject: "$JS.API.CONSUMER.CREATE." + events.EventsStream + "." + name, Data: body})
		if !refused && answered(reply) {
			made++
			_, err := pb.watch.Request("$JS.API.CONSUMER.DELETE."+events.EventsStream+"."+name, nil, 2*time.Second)
			require.NoError(pb.t, err)
		}
	}
	require.Contains(pb.t, []int{0, 2}, made, "%s made one kind only", id)
	return made == 2
}

// tails says whether the identity's subscription to the log, made before
// the second run, got its events.
func (pb *prober) tails(id events.Identity) bool {
	sub := pb.logSubs[id]
	if sub == nil {
		return false
	}
	_, err := sub.NextMsg(2 * time.Second)
	return err == nil
}

func (pb *prober) callsTheAPI(id events.Identity) bool {
	reply, refused := pb.conns[id].Ask(&nats.Msg{Subject: events.APISubject(engine.EndpointInfo)})
	return !refused && reply != nil && strings.Contains(string(reply.Data), `"version"`)
}

// sendsAVerb sends a verb for a task the log does not have: the endpoint
// answers (not found) only a caller that reached it.
func (pb *prober) sendsAVerb(id events.Identity) bool {
	body := []byte(`{"task_id":"T-404","token":"x","verb":"checkpoint_success","input":{}}`)
	reply, refused := pb.conns[id].Ask(&nats.Msg{Subject: events.EngineSubject(pb.engine, engine.EndpointGroundhogVerb), Data: body})
	return !refused && reply != nil && reply.Header.Get("Nats-Service-Error-Code") == "404"
}

func (pb *prober) fetchesLargeAnswers(id events.Identity) bool {
	reply, _ := pb.conns[id].Ask(&nats.Msg{Subject: "$JS.API.STREAM.INFO.OBJ_" + events.RepliesStore})
	return answered(reply)
}

// makesTheServerDeliver asks JetStream for the log's first event with a
// reply subject in the engine's account (under orbit.api), where the
// engine's connection watches.
func (pb *prober) makesTheServerDeliver(id events.Identity) bool {
	target := events.APISubject("probe." + string(id))
	sub, err := pb.watch.SubscribeSync(target)
	require.NoError(pb.t, err)
	defer func() { _ = sub.Unsubscribe() }()
	require.NoError(pb.t, pb.watch.Flush())
	nc := pb.conns[id].NC
	if err := nc.PublishRequest("$JS.API.DIRECT.GET."+events.EventsStream, target, []byte(`{"seq":1}`)); err != nil {
		return false
	}
	_ = nc.Flush()
	_, err = sub.NextMsg(time.Second)
	return err == nil
}

// readsAnotherInbox subscribes the identity to another's inbox, which then
// asks JetStream (or, for the agent, the roll) for an answer there.
func (pb *prober) readsAnotherInbox(id events.Identity) bool {
	other := events.IdentityClient
	if id == events.IdentityClient {
		other = events.IdentityReader
	}
	sub, err := pb.conns[id].NC.SubscribeSync(events.InboxPrefix(pb.keys[other]) + ".>")
	if err != nil {
		return false
	}
	defer func() { _ = sub.Unsubscribe() }()
	if pb.conns[id].NC.Flush() != nil {
		return false
	}
	_, err = pb.conns[other].NC.Request("$JS.API.STREAM.INFO."+events.EventsStream, nil, 2*time.Second)
	require.NoError(pb.t, err, other)
	_, err = sub.NextMsg(500 * time.Millisecond)
	return err == nil
}
