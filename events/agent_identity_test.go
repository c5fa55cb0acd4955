package events_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

// TestTheAgentIdentityMayCallTheVerbEndpointOnly: signed in as the agent
// identity, a connection reaches the groundhog.verb endpoint through the
// roll call, and the server refuses it everything else: events and
// commands, the log through JetStream, key-value and objects, any other
// endpoint (by the queue group's subject or by one engine's), serving an
// endpoint itself, and another identity's inbox.
func TestTheAgentIdentityMayCallTheVerbEndpointOnly(t *testing.T) {
	t.Parallel()
	ctx := testkit.Context(t)
	l := testkit.StartLog(t, events.Config{Listen: "127.0.0.1:0"})
	creds, err := events.EnsureCreds(l.CredsDir())
	require.NoError(t, err)
	const engineID = "E1"
	var submitted, approved bool
	stop, err := l.Serve(engineID, "test", "0.0.1", 10*time.Second, map[string]events.Handler{
		"groundhog.verb":    func(context.Context, json.RawMessage) (any, error) { return "taken", nil },
		"runs.submit":       func(context.Context, json.RawMessage) (any, error) { submitted = true; return "submitted", nil },
		"groundhog.approve": func(context.Context, json.RawMessage) (any, error) { approved = true; return "approved", nil },
	})
	require.NoError(t, err)
	defer stop.Stop()
	_, err = l.Append(ctx, events.Event{Type: events.RunRequested, RunID: "R1"}, events.RunRequestedData{})
	require.NoError(t, err)
	seed := creds.File(events.IdentityAgent)

	agent, err := events.DialAPI(ctx, l.ClientURL(), events.Config{NKeySeedFile: seed})
	require.NoError(t, err)
	defer agent.Close()
	var answer string
	require.NoError(t, agent.Request(ctx, "groundhog.verb", nil, &answer), "the verb endpoint answers the agent")
	assert.Equal(t, "taken", answer)
	short, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	err = agent.Request(short, "runs.submit", nil, &answer)
	require.Error(t, err, "runs.submit is not the agent's to call")
	assert.True(t, errors.Is(err, events.ErrNotPermitted), "%v", err)

	_, err = events.Dial(ctx, l.ClientURL(), events.Config{NKeySeedFile: seed})
	require.Error(t, err, "the agent may not look the log up")
	assert.ErrorIs(t, err, events.ErrNotPermitted, "refused at once, not after a timeout")

	o, err := testkit.DialOutsider(t, l.ClientURL(), seed)
	require.NoError(t, err)
	event, err := json.Marshal(map[string]any{"id": events.NewID(), "type": events.RunFinished, "time": "2026-01-01T00:00:00Z", "run_id": "R1", "data": map[string]any{}})
	require.NoError(t, err)
	for name, subject := range map[string]string{
		"an event":                 events.EventSubject(events.AggregateRun, "R1", events.RunFinished),
		"a command":                events.CommandSubject("step.shell"),
		"the stream's info":        "$JS.API.STREAM.INFO." + events.EventsStream,
		"a stored event":           "$JS.API.DIRECT.GET." + events.EventsStream,
		"a consumer on the log":    "$JS.API.CONSUMER.CREATE." + events.EventsStream,
		"a key-value put":          "$KV.orbit_leases.x",
		"runs.submit by the group": events.APISubject("runs.submit"),
		"runs.submit at an engine": events.EngineSubject(engineID, "runs.submit"),
		"groundhog.approve":        events.EngineSubject(engineID, "groundhog.approve"),
		"the service's discovery":  "$SRV.INFO",
	} {
		_, refused := o.Ask(&nats.Msg{Subject: subject, Data: event})
		assert.True(t, refused, "%s (%s) must be refused to the agent", name, subject)
	}
	reply, refused := o.Ask(&nats.Msg{Subject: events.EngineSubject(engineID, "groundhog.verb"), Data: []byte("{}")})
	assert.False(t, refused)
	require.NotNil(t, reply, "the verb endpoint answers a plain connection too")
	for _, subject := range []string{
		events.EventsRoot + ".>",
		events.APIRoot + ".>",
		events.EngineSubject(engineID, "groundhog.verb"),
		events.InboxPrefix(creds.Public[events.IdentityClient]) + ".>",
		"_INBOX.>",
	} {
		assert.True(t, o.SubscribeRefused(subject), "the agent may not subscribe to %s", subject)
	}
	assert.False(t, submitted, "runs.submit was called")
	assert.False(t, approved, "groundhog.approve was called")
}
