package events_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

// routedLog starts a log with a client dialled to it, and a raw connection
// as the engine for subscribers that stand in for a stopped engine.
func routedLog(t *testing.T) (l, client *events.Log, raw *nats.Conn, seed string) {
	t.Helper()
	l = testkit.StartLog(t, events.Config{Listen: "127.0.0.1:0"})
	client = dialAs(testkit.Context(t), t, l, events.IdentityClient)
	raw = testkit.DialEngine(t, l.ClientURL(), l.CredsDir())
	return l, client, raw, events.CredsFile(l.CredsDir(), events.IdentityClient)
}

// whoAmI serves one endpoint that answers with the serving engine's id.
func whoAmI(t *testing.T, l *events.Log, id string) {
	t.Helper()
	stop, err := l.Serve(id, "test", "0.0.1", 10*time.Second, map[string]events.Handler{
		"who.am_i": func(context.Context, json.RawMessage) (any, error) { return id, nil },
	})
	require.NoError(t, err)
	t.Cleanup(stop.Stop)
}

// TestRequestsPassAStoppedEngineBy: an engine that is subscribed but
// answers nothing (SIGSTOPped, wedged) sits in the endpoint's queue group
// and on the roll call; every request still reaches the engine that
// answers, none of them waiting out a timeout.
func TestRequestsPassAStoppedEngineBy(t *testing.T) {
	t.Parallel()
	ctx := testkit.Context(t)
	l, _, raw, seed := routedLog(t)
	whoAmI(t, l, "E1")
	// The stopped engine: the same subscriptions, no answers.
	_, err := raw.QueueSubscribe(events.APISubject("who.am_i"), "q", func(*nats.Msg) {})
	require.NoError(t, err)
	_, err = raw.Subscribe("orbit.api.engines", func(*nats.Msg) {})
	require.NoError(t, err)
	require.NoError(t, raw.Flush())

	began := time.Now()
	for range 20 {
		// A fresh client each time: the roll call is made anew.
		c, err := events.Dial(ctx, l.ClientURL(), events.Config{NKeySeedFile: seed})
		require.NoError(t, err)
		var got string
		rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		err = c.Request(rctx, "who.am_i", nil, &got)
		cancel()
		c.Close()
		require.NoError(t, err)
		assert.Equal(t, "E1", got)
	}
	assert.Less(t, time.Since(began), 10*time.Second, "no request waited for the stopped engine")
}

// TestRequestEngineAsksThatEngine: the roll call names every serving
// engine, and a request to one of them is answered by it alone; an engine
// that does not serve is ErrUnavailable at once, and one that is stopped
// (subscribed, silent) after its roll call's two seconds, not the
// request's deadline.
func TestRequestEngineAsksThatEngine(t *testing.T) {
	t.Parallel()
	ctx := testkit.Context(t)
	l, client, raw, _ := routedLog(t)
	whoAmI(t, l, "E1")
	whoAmI(t, l, "E2")
	ids, err := client.Engines(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"E1", "E2"}, ids)
	for _, id := range ids {
		var got string
		require.NoError(t, client.RequestEngine(ctx, id, "who.am_i", nil, &got))
		assert.Equal(t, id, got)
	}
	err = client.RequestEngine(ctx, "E3", "who.am_i", nil, nil)
	assert.True(t, errors.Is(err, events.ErrUnavailable), "%v", err)

	for _, s := range []string{events.EngineSubject("E4", "engines"), events.EngineSubject("E4", "who.am_i")} {
		_, err := raw.Subscribe(s, func(*nats.Msg) {})
		require.NoError(t, err)
	}
	require.NoError(t, raw.Flush())
	began := time.Now()
	err = client.RequestEngine(ctx, "E4", "who.am_i", nil, nil)
	assert.True(t, errors.Is(err, events.ErrUnavailable), "%v", err)
	assert.Less(t, time.Since(began), 5*time.Second, "the stopped engine was not waited for")
}

// TestRequestWithNoEngineFailsAtOnce: with no engine serving, a request
// and a roll call are ErrUnavailable without waiting for their deadline.
func TestRequestWithNoEngineFailsAtOnce(t *testing.T) {
	t.Parallel()
	ctx := testkit.Context(t)
	_, client, _, _ := routedLog(t)
	began := time.Now()
	err := client.Request(ctx, "who.am_i", nil, nil)
	assert.True(t, errors.Is(err, events.ErrUnavailable), "%v", err)
	_, err = client.Engines(ctx)
	assert.True(t, errors.Is(err, events.ErrUnavailable), "%v", err)
	assert.Less(t, time.Since(began), 5*time.Second)
}

// TestARequestOverTheServersLargestMessageIsInvalid: a request the server
// cannot carry is the request's fault, said with both sizes, not the
// engine unavailable (which a caller would try again).
func TestARequestOverTheServersLargestMessageIsInvalid(t *testing.T) {
	t.Parallel()
	ctx := testkit.Context(t)
	l := testkit.StartLog(t, events.Config{Listen: "127.0.0.1:0", MaxPayload: 64 << 10})
	client := dialAs(ctx, t, l, events.IdentityClient)
	whoAmI(t, l, "E1")

	var got string
	require.NoError(t, client.Request(ctx, "who.am_i", strings.Repeat("x", 1<<10), &got))
	err := client.Request(ctx, "who.am_i", strings.Repeat("x", 100<<10), &got)
	require.ErrorIs(t, err, events.ErrInvalidRequest)
	assert.NotErrorIs(t, err, events.ErrUnavailable)
	assert.Contains(t, err.Error(), "max_payload")
	assert.Contains(t, err.Error(), "65536 bytes")
}
