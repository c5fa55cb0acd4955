package events

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// leaderInfo returns stream's info as its leader knows it. On a cluster a
// stream's info is answered by its leader; but a stream that has had no
// leader for a while (an election after a node's loss) is answered by any
// of its replicas from its own store, which may be behind, and a leader
// just elected answers before it has applied every event it holds. So an
// answer counts only if it comes from a leader that has caught up: one
// that says since when it leads (ClusterInfo.LeaderSince, which a server
// sets then and reports only from the leader). Others are asked again,
// until ctx ends.
func leaderInfo(ctx context.Context, stream jetstream.Stream) (*jetstream.StreamInfo, error) {
	for {
		info, err := stream.Info(ctx)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
		}
		if atLeader(info) {
			return info, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w: stream %s has no leader to say where it ends (answered by a replica; leader %q)",
				ErrUnavailable, info.Config.Name, info.Cluster.Leader)
		case <-time.After(electionRetryWait):
		}
	}
}

// atLeader reports whether info was answered by the stream's caught-up
// leader, or by the one server of a stream that has no Raft group (a
// server outside a cluster) or is not replicated.
func atLeader(info *jetstream.StreamInfo) bool {
	return info.Cluster == nil || info.Cluster.RaftGroup == "" || info.Cluster.LeaderSince != nil || info.Config.Replicas <= 1
}
