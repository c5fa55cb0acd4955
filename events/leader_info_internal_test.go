package events

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
)

// A stream's info counts as its leader's only from a caught-up leader, or
// where there is no other server to answer.
func TestAtLeader(t *testing.T) {
	since := time.Now()
	r3 := jetstream.StreamConfig{Replicas: 3}
	for name, tc := range map[string]struct {
		info jetstream.StreamInfo
		want bool
	}{
		"the caught-up leader":                   {jetstream.StreamInfo{Config: r3, Cluster: &jetstream.ClusterInfo{RaftGroup: "S-R3F-1", Leader: "n1", LeaderSince: &since}}, true},
		"a replica of a stream without a leader": {jetstream.StreamInfo{Config: r3, Cluster: &jetstream.ClusterInfo{RaftGroup: "S-R3F-1"}}, false},
		"a leader still applying its log":        {jetstream.StreamInfo{Config: r3, Cluster: &jetstream.ClusterInfo{RaftGroup: "S-R3F-1", Leader: "n1"}}, false},
		"a server outside a cluster":             {jetstream.StreamInfo{Config: jetstream.StreamConfig{Replicas: 1}, Cluster: &jetstream.ClusterInfo{Leader: "s"}}, true},
		"one replica on a cluster":               {jetstream.StreamInfo{Config: jetstream.StreamConfig{Replicas: 1}, Cluster: &jetstream.ClusterInfo{RaftGroup: "S-R1F-1", Leader: "n2"}}, true},
		"no cluster information":                 {jetstream.StreamInfo{Config: r3}, true},
	} {
		assert.Equal(t, tc.want, atLeader(&tc.info), name)
	}
}
