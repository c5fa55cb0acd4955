package main_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/orbitrun/orbit/internal/testkit"
)

// TestServeOnNATSURLsThatAnswerNothing: exit 3 naming every URL tried.
func TestServeOnNATSURLsThatAnswerNothing(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	r := p.Orbit("serve", "--nats-url", "nats://127.0.0.1:1,nats://127.0.0.1:2")
	assert.Equal(t, 3, r.Code, r.String())
	assert.Contains(t, r.Stderr, "nats://127.0.0.1:1,nats://127.0.0.1:2")
}

// TestServeWithMoreReplicasThanServers: a clear error at start naming
// both numbers, from the flag and from nats.replicas in the config.
func TestServeWithMoreReplicasThanServers(t *testing.T) {
	t.Parallel()
	c := testkit.StartCluster(t, filepath.Join(t.TempDir(), "creds"))
	p := testkit.ClusterProject(t, c, filepath.Join(t.TempDir(), "log.key"))
	r := p.Orbit("serve", "--replicas", "4")
	assert.Equal(t, 2, r.Code, r.String())
	assert.Contains(t, r.Stderr, "nats.replicas is 4 but the NATS cluster at "+c.URLs()+" has 3 server(s)")

	p.WriteFile(".orbit/config.yaml", "nats:\n  replicas: 5\n")
	r = p.Orbit("serve")
	assert.Equal(t, 2, r.Code, r.String())
	assert.Contains(t, r.Stderr, "nats.replicas is 5 but")

	r = p.Orbit("serve", "--replicas", "9")
	assert.Equal(t, 2, r.Code, r.String())
	assert.Contains(t, r.Stderr, "--replicas 9: want 1 to 5")
}
