package events

import (
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTheEngineActsOnlyOnItsCallersRequests: checkRequest refuses what a
// consumer or a JetStream answer delivers (an ack reply, the headers of a
// stored message or of a status) and a request whose answer would go
// anywhere but an inbox of its caller; it names the signer the server
// authenticated for a request through an import, the engine for one from
// the engine's account, and nobody on a server without accounts.
func TestTheEngineActsOnlyOnItsCallersRequests(t *testing.T) {
	t.Parallel()
	info := func(acc, user string) nats.Header {
		return nats.Header{"Nats-Request-Info": []string{`{"acc":"` + acc + `","user":"` + user + `"}`}}
	}
	l := &Log{accounts: true, selfKey: "UENGINE"}
	legacy := &Log{}
	for _, tt := range []struct {
		name   string
		log    *Log
		h      nats.Header
		reply  string
		signer *Signer
		err    bool
	}{
		{"a client through its import", l, info("CLIENT", "UCLIENT"), "_R_.ab.cd", &Signer{Identity: IdentityClient, Key: "UCLIENT"}, false},
		{"a serve --nkey key", l, info(extraAccountPrefix+"UEXTRA", "UEXTRA"), "_R_.ab.cd", &Signer{Identity: IdentityClient, Key: "UEXTRA"}, false},
		{"the agent", l, info("AGENT", "UAGENT"), "_R_.ab.cd", &Signer{Identity: IdentityAgent, Key: "UAGENT"}, false},
		{"an engine of the account", l, nil, "_ORBIT_ENGINE.x.y", &Signer{Identity: IdentityEngine, Key: "UENGINE"}, false},
		{"a client of a server without accounts", legacy, nil, "_ORBIT_INBOX.UCLIENT.x", nil, false},
		{"an import without its signer", l, nil, "_R_.ab.cd", nil, true},
		{"an account of no identity", l, info("OTHER", "U"), "_R_.ab.cd", nil, true},
		{"the engine's account through an import", l, info(EngineAccount, "U"), "_R_.ab.cd", nil, true},
		{"a push consumer's delivery", l, nil, "$JS.ACK.ORBIT_EVENTS.x.1.2.3.4.5", nil, true},
		{"a direct get's answer", l, nats.Header{"Nats-Stream": []string{EventsStream}, "Nats-Sequence": []string{"4"}}, "_R_.ab.cd", nil, true},
		{"a stored event", l, nats.Header{MACHeader: []string{"00"}}, "_ORBIT_ENGINE.x", nil, true},
		{"a status", legacy, nats.Header{"Status": []string{"404"}}, "_INBOX.x", nil, true},
		{"an answer into the log", l, nil, "orbit.events.run.R.x", nil, true},
		{"an answer into the queue", legacy, nil, "orbit.cmd.run.request", nil, true},
		{"an answer into the API", legacy, nil, "orbit.api.runs.retry", nil, true},
		{"no reply", l, nil, "", nil, true},
	} {
		signer, err := tt.log.checkRequest(tt.h, tt.reply)
		if tt.err {
			require.ErrorIs(t, err, ErrRefusedRequest, tt.name)
			continue
		}
		require.NoError(t, err, tt.name)
		assert.Equal(t, tt.signer, signer, tt.name)
	}
}
