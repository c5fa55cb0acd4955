package events

import (
	"fmt"
	"net/url"
	"strings"
)

// DefaultClusterReplicas is the replicas of everything Orbit stores on a
// cluster of at least that many servers when none are configured.
const DefaultClusterReplicas = 3

// ClusterSize is the number of servers of the cluster the log is connected
// to, as its client knows them: the URLs it was given and those the
// cluster advertises (server discovery), counted once per host and port.
// A server outside a cluster, and the embedded one, count 1.
func (l *Log) ClusterSize() int {
	if l.srv != nil || l.nc.ConnectedClusterName() == "" {
		return 1
	}
	seen := map[string]bool{}
	for _, s := range l.nc.Servers() {
		u, err := url.Parse(s)
		if err != nil || u.Host == "" {
			continue
		}
		seen[u.Host] = true
	}
	return max(len(seen), 1)
}

// Replicas is the replica count of the log's streams, buckets and object
// stores (see Config.Replicas).
func (l *Log) Replicas() int { return l.cfg.Replicas }

// chooseReplicas settles cfg.Replicas once connected: the default by the
// cluster's size, and a configured count the cluster is too small for is
// refused with both numbers.
func (l *Log) chooseReplicas() error {
	size := l.ClusterSize()
	if l.cfg.Replicas == 0 {
		l.cfg.Replicas = 1
		if size >= DefaultClusterReplicas {
			l.cfg.Replicas = DefaultClusterReplicas
		}
		return nil
	}
	if l.cfg.Replicas > size {
		return fmt.Errorf("%w: nats.replicas is %d but the NATS cluster at %s has %d server(s) (%s): lower nats.replicas (--replicas) or add servers",
			ErrTooFewServers, l.cfg.Replicas, l.cfg.URL, size, strings.Join(l.nc.Servers(), ", "))
	}
	return nil
}
