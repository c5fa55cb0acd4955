package events

import (
	"context"
	"fmt"
)

// StreamHealth is what the NATS server says of one of the log's streams.
type StreamHealth struct {
	Name string `json:"name"`
	// Replicas is the stream's configured replica count; Current how many
	// of them the server reports current (the leader and the replicas that
	// are caught up).
	Replicas int    `json:"replicas"`
	Current  int    `json:"current"`
	Messages uint64 `json:"messages"`
	Bytes    uint64 `json:"bytes"`
	// DenyPurge: the stream denies purges, as the event stream of a log
	// made before retention does (JetStream cannot lift that).
	DenyPurge bool `json:"deny_purge,omitempty"`
}

// Health asks the server for the log's stream, ORBIT_EVENTS (the one every
// identity may ask about): an error says JetStream or the stream is not
// there.
func (l *Log) Health(ctx context.Context) ([]StreamHealth, error) {
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	var out []StreamHealth
	for _, name := range []string{EventsStream} {
		s, err := l.js.Stream(ctx, name)
		if err != nil {
			return out, fmt.Errorf("stream %s: %w", name, err)
		}
		info := s.CachedInfo()
		h := StreamHealth{Name: name, Replicas: max(info.Config.Replicas, 1), Current: 1,
			Messages: info.State.Msgs, Bytes: info.State.Bytes, DenyPurge: info.Config.DenyPurge}
		if c := info.Cluster; c != nil {
			for _, r := range c.Replicas {
				if r.Current && !r.Offline {
					h.Current++
				}
			}
		}
		out = append(out, h)
	}
	return out, nil
}
