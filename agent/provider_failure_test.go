package agent_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/agent"
	"github.com/orbitrun/orbit/internal/testkit"
)

// saidHi makes the provider opts say and asks it to answer "hi", which it
// must.
func saidHi(t *testing.T, opts agent.ProviderOptions) {
	t.Helper()
	p, err := agent.NewProvider(opts)
	require.NoError(t, err)
	_, err = p.Complete(context.Background(), &agent.Request{Model: "m", Messages: []agent.Message{wireUser("hi")}})
	require.NoError(t, err)
}

// failedHi asks p to answer "hi" and returns the *ProviderError the call
// fails with, checking that the provider's key is nowhere in it.
func failedHi(t *testing.T, p agent.Provider, key string) *agent.ProviderError {
	t.Helper()
	_, err := p.Complete(context.Background(), &agent.Request{Model: "m", Messages: []agent.Message{wireUser("hi")}})
	perr, ok := errors.AsType[*agent.ProviderError](err)
	require.True(t, ok, "want a *ProviderError, got %v", err)
	require.Equal(t, err.Error(), perr.Error(), "the provider's error, unwrapped")
	assert.NotContains(t, err.Error(), key)
	return perr
}

// statusCase is an HTTP error a provider's API answers, and the
// *ProviderError it becomes.
type statusCase struct {
	name      string
	reply     testkit.WireReply
	message   string
	retryable bool
}

// wireKey is how a provider sends its key: the header and its value.
type wireKey struct {
	key, header, value string
}

// checkErrorStatuses asks a provider made by newProvider for each case on
// a server that answers the case's reply, then ok: the call fails at once
// (the SDK does not retry) with the case's error, the key sent as it
// should be and never shown.
func checkErrorStatuses(t *testing.T, provider string, ok string, key wireKey, newProvider func(*testing.T, *testkit.WireServer) agent.Provider, cases []statusCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ws := testkit.NewWireServer(t, tc.reply, testkit.WireReply{Body: ok})
			perr := failedHi(t, newProvider(t, ws), key.key)
			assert.Equal(t, provider, perr.Provider)
			assert.Equal(t, tc.reply.Status, perr.Status)
			assert.Equal(t, tc.message, perr.Message)
			assert.Equal(t, tc.retryable, perr.Retryable)
			assert.NotContains(t, perr.Error(), "test-FAKE")

			req := ws.Only() // and the SDK did not retry
			assert.Equal(t, key.value, req.Header.Get(key.header))
		})
	}
}

// malformedCase is a reply of status 200 that is no answer of the
// provider's API, and how the error it becomes starts.
type malformedCase struct {
	name  string
	reply testkit.WireReply
	want  string
}

// checkMalformed asks p, on a server that answers each case's reply, to
// answer "hi": the call fails, not to be retried, with an error that
// starts as the case wants and does not show key.
func checkMalformed(t *testing.T, newProvider func(*testing.T, *testkit.WireServer) agent.Provider, key string, cases []malformedCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ws := testkit.NewWireServer(t, tc.reply)
			perr := failedHi(t, newProvider(t, ws), key)
			assert.Equal(t, 0, perr.Status)
			assert.False(t, perr.Retryable)
			assert.True(t, strings.HasPrefix(perr.Error(), tc.want), "%q does not start with %q", perr.Error(), tc.want)
		})
	}
}

// badRequest is a request a provider cannot express on its wire, and the
// error it is refused with.
type badRequest struct {
	name string
	req  agent.Request
	want string
}

// checkBadRequests asks p each request: each is refused as the case
// wants, and nothing reaches ws.
func checkBadRequests(t *testing.T, p agent.Provider, ws *testkit.WireServer, cases []badRequest) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := p.Complete(context.Background(), &tc.req)
			require.EqualError(t, err, tc.want)
		})
	}
	assert.Empty(t, ws.Received(), "nothing is sent for a request that cannot be expressed")
}
