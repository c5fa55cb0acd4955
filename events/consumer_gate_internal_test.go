package events

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// orderedRequest is what nats.go's ordered consumer asks for: a pull
// consumer with a name and no durable, no acks, in memory.
const orderedRequest = `{"stream_name":"ORBIT_EVENTS","config":{"name":"c_1","deliver_policy":"all","ack_policy":"none",
"filter_subject":"orbit.events.run.R.>","replay_policy":"instant","inactive_threshold":60000000000,"num_replicas":1,"mem_storage":true},"action":""}`

// TestTheGateMakesPullConsumersOnly: the gate takes what Follow, Scan and
// nats sub --stream ask for, and refuses a push consumer (a deliver
// subject or group), a durable one, one with acks, one that would linger,
// one without a name, one of another stream, and a request with a field JetStream does not
// know, each saying why.
func TestTheGateMakesPullConsumersOnly(t *testing.T) {
	t.Parallel()
	req, err := gateRequest([]byte(orderedRequest))
	require.NoError(t, err)
	assert.Equal(t, "c_1", req.Config.Name)
	_, err = gateRequest([]byte(`{"stream_name":"ORBIT_EVENTS","config":{"name":"s","ack_policy":"none"}}`))
	assert.NoError(t, err, "an ephemeral consumer that names no threshold gets JetStream's seconds")

	for name, tt := range map[string]struct{ body, why string }{
		"push":      {`{"stream_name":"ORBIT_EVENTS","config":{"name":"x","deliver_subject":"orbit.api.runs.retry","ack_policy":"none"}}`, "push consumer"},
		"group":     {`{"stream_name":"ORBIT_EVENTS","config":{"name":"x","deliver_group":"q","ack_policy":"none"}}`, "push consumer"},
		"durable":   {`{"stream_name":"ORBIT_EVENTS","config":{"durable_name":"x","ack_policy":"none"}}`, "durable"},
		"acks":      {`{"stream_name":"ORBIT_EVENTS","config":{"name":"x","ack_policy":"explicit"}}`, "no acks"},
		"lingering": {`{"stream_name":"ORBIT_EVENTS","config":{"name":"x","ack_policy":"none","inactive_threshold":3600000000000}}`, "idle"},
		"blobs":     {`{"stream_name":"OBJ_orbit_blobs","config":{"name":"x","ack_policy":"none"}}`, "ORBIT_EVENTS only"},
		"unknown":   {`{"stream_name":"ORBIT_EVENTS","config":{"name":"x","ack_policy":"none","deliver_subjekt":"y"}}`, "does not decode"},
		"garbage":   {`not json`, "does not decode"},
	} {
		_, err := gateRequest([]byte(tt.body))
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), tt.why, name)
	}
}

// FuzzGateRequest: whatever a caller sends, what the gate lets through is
// a pull consumer of the log, ephemeral, without acks, gone when idle, and
// re-encoded from what JetStream decodes.
func FuzzGateRequest(f *testing.F) {
	f.Add([]byte(orderedRequest))
	f.Add([]byte(`{"stream_name":"ORBIT_EVENTS","config":{"name":"x","deliver_subject":"orbit.api.x","ack_policy":"none"}}`))
	f.Add([]byte(`{"stream_name":"ORBIT_EVENTS","config":{"name":"x","Deliver_Subject":"a","ack_policy":"none"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		req, err := gateRequest(data)
		if err != nil {
			return
		}
		out, err := json.Marshal(req)
		require.NoError(t, err)
		var again server.CreateConsumerRequest
		require.NoError(t, json.Unmarshal(out, &again))
		c := again.Config
		if again.Stream != EventsStream || c.DeliverSubject != "" || c.DeliverGroup != "" || c.Durable != "" ||
			c.AckPolicy != server.AckNone || c.InactiveThreshold < 0 || c.InactiveThreshold > gateMaxInactive {
			t.Fatalf("the gate let through %s", out)
		}
		assert.LessOrEqual(t, c.InactiveThreshold, 10*time.Minute)
	})
}
