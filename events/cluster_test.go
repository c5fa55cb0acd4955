package events_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

// openOnCluster opens the log on c as an engine does, given only url:
// the rest of the cluster is found by server discovery.
func openOnCluster(t *testing.T, c *testkit.Cluster, url string, replicas int) (*events.Log, error) {
	t.Helper()
	return events.Open(testkit.Context(t), events.Config{
		URL:          url,
		NKeySeedFile: c.Creds.File(events.IdentityEngine),
		Replicas:     replicas,
		Redactor:     &events.Redactor{},
	})
}

// TestReplicatedLogSurvivesItsLeadersLoss: on a three-server cluster the
// log defaults to three replicas of everything, and killing the server that
// leads the event stream — the one the engine is connected to — loses no
// acknowledged event and stops appends only for the leader election.
func TestReplicatedLogSurvivesItsLeadersLoss(t *testing.T) {
	t.Parallel()
	ctx := testkit.Context(t)
	c := testkit.StartCluster(t, filepath.Join(t.TempDir(), "creds"))

	// Created at one replica, as a single-server start would have: the
	// engine on the cluster scales everything up.
	l1, err := openOnCluster(t, c, c.Nodes[0].URL(), 1)
	require.NoError(t, err)
	l1.Close()

	leader, err := c.StreamLeader(ctx, events.EventsStream)
	require.NoError(t, err)
	l, err := openOnCluster(t, c, c.Nodes[leader].URL(), 0)
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	assert.Equal(t, 3, l.ClusterSize())
	assert.Equal(t, 3, l.Replicas())
	for _, s := range []string{events.EventsStream, events.CommandsStream, "KV_" + events.LeasesBucket,
		"KV_" + events.LocksBucket, "OBJ_" + events.BlobsStore, "OBJ_" + events.RepliesStore} {
		n, err := c.StreamReplicas(ctx, s)
		require.NoError(t, err, s)
		assert.Equal(t, 3, n, "replicas of %s", s)
	}

	appendN := func(from, to int) {
		for i := from; i < to; i++ {
			_, err := l.Append(ctx, events.Event{ID: fmt.Sprintf("e%d", i), Type: events.RunStarted, RunID: "R1"}, events.RunStartedData{Engine: "e"})
			require.NoError(t, err, "append %d", i)
		}
	}
	appendN(0, 50)
	require.NoError(t, c.WaitCurrent(ctx, events.EventsStream))
	leader, err = c.StreamLeader(ctx, events.EventsStream)
	require.NoError(t, err)
	killed := time.Now()
	c.Kill(leader)
	appendN(50, 100)
	t.Logf("50 appends across the loss of the leader %s took %s", c.Nodes[leader].Name, time.Since(killed))
	next, err := c.StreamLeader(ctx, events.EventsStream)
	require.NoError(t, err)
	assert.NotEqual(t, leader, next)

	got, err := l.Read(ctx, events.FollowOptions{Filters: []string{events.RunFilter("R1")}})
	require.NoError(t, err)
	require.Len(t, got, 100, "every acknowledged event is in the log")
	for i, ev := range got {
		assert.Equal(t, uint64(i+1), ev.Seq)
	}
}

// TestMoreReplicasThanServersIsRefused names both numbers.
func TestMoreReplicasThanServersIsRefused(t *testing.T) {
	t.Parallel()
	c := testkit.StartCluster(t, filepath.Join(t.TempDir(), "creds"))
	_, err := openOnCluster(t, c, c.URLs(), 5)
	require.ErrorIs(t, err, events.ErrTooFewServers)
	assert.Contains(t, err.Error(), "nats.replicas is 5 but the NATS cluster at "+c.URLs()+" has 3 server(s)")
	assert.True(t, strings.Contains(err.Error(), c.Nodes[2].URL()), err.Error())

	_, err = events.Open(testkit.Context(t), events.Config{StoreDir: t.TempDir(), Replicas: 3})
	require.ErrorIs(t, err, events.ErrTooFewServers)
}
