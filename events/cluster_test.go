package events_test

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
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

// laggingFollower opens a log on a three-server cluster, appends ten
// events of run R1 that every server holds, then kills a follower of the
// event stream and appends n more (of about 2 KB, from eight goroutines)
// without it. Restarting the follower (c.Restart) gives a replica that is
// far behind and catches up while it serves. Its context, for the rest
// of the test too, allows five minutes: thousands of replicated appends
// and the reads after them take more than testkit.Context's minute on a
// loaded machine.
func laggingFollower(t *testing.T, n int) (context.Context, *testkit.Cluster, *events.Log, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	c := testkit.StartCluster(t, filepath.Join(t.TempDir(), "creds"))
	l, err := openOnCluster(t, c, c.URLs(), 0)
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	appendN := func(n int) {
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := g; i < n; i += 8 {
					_, err := l.Append(ctx, events.Event{Type: events.StepFinished, RunID: "R1", StepKey: "s"},
						events.StepFinishedData{State: events.StateSuccess, Output: strings.Repeat("x", 2000)})
					assert.NoError(t, err)
				}
			}()
		}
		wg.Wait()
	}
	appendN(10)
	require.NoError(t, c.WaitCurrent(ctx, events.EventsStream))
	leader, err := c.StreamLeader(ctx, events.EventsStream)
	require.NoError(t, err)
	follower := (leader + 1) % len(c.Nodes)
	c.Kill(follower)
	appendN(n)
	return ctx, c, l, follower
}

// readerOn opens a log named "reader" on the cluster's server node, as
// the engine or a CLI whose server that is would, and checks that it is
// connected to that server.
func readerOn(ctx context.Context, t *testing.T, c *testkit.Cluster, node int) *events.Log {
	t.Helper()
	r, err := events.Open(ctx, events.Config{URL: c.Nodes[node].URL(), NKeySeedFile: c.Creds.File(events.IdentityEngine),
		Redactor: &events.Redactor{}, Name: "reader"})
	require.NoError(t, err)
	t.Cleanup(func() { r.Close() })
	require.Equal(t, []int{node}, c.ClientNodes("reader"), "the reader is connected to server %d", node)
	return r
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
	for _, s := range []string{events.EventsStream, events.CommandsStream, events.StepsStream, "KV_" + events.LeasesBucket,
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

// TestEnginesOpenTogetherOnAFreshCluster: two engines opening the log at
// the same moment on a cluster started that moment, without a JetStream
// leader yet, both wait for it and provision side by side. Before, each
// request sent before the election went unanswered for the caller's whole
// deadline, and two engines' CreateOrUpdateKeyValue of one bucket at once
// left both unanswered (`events: bucket orbit_locks: context deadline
// exceeded`).
func TestEnginesOpenTogetherOnAFreshCluster(t *testing.T) {
	t.Parallel()
	c := testkit.StartFreshCluster(t, filepath.Join(t.TempDir(), "creds"))
	ctx, cancel := context.WithTimeout(testkit.Context(t), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l, err := events.Open(ctx, events.Config{
				URL:          c.URLs(),
				NKeySeedFile: c.Creds.File(events.IdentityEngine),
				Redactor:     &events.Redactor{},
			})
			errs[i] = err
			if err == nil {
				t.Cleanup(func() { l.Close() })
			}
		}()
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "engine %d", i)
	}
	for _, s := range []string{events.EventsStream, events.CommandsStream, events.StepsStream, "KV_" + events.LeasesBucket,
		"KV_" + events.LocksBucket, "OBJ_" + events.BlobsStore, "OBJ_" + events.RepliesStore} {
		n, err := c.StreamReplicas(testkit.Context(t), s)
		require.NoError(t, err, s)
		assert.Equal(t, 3, n, "replicas of %s", s)
	}
}

// TestOpenWaitsForServersThatDoNotAnswerYet: an engine whose servers are
// not up waits for them, saying so in its log, until told to stop; then it
// fails with what it waited for. Credentials the cluster refuses are not
// waited for.
func TestOpenWaitsForServersThatDoNotAnswerYet(t *testing.T) {
	t.Parallel()
	var logged testkit.SyncBuffer
	ctx, cancel := context.WithCancel(testkit.Context(t))
	done := make(chan error, 1)
	go func() {
		_, err := events.Open(ctx, events.Config{
			URL:      "nats://127.0.0.1:1,nats://127.0.0.1:2",
			Redactor: &events.Redactor{},
			Logger:   slog.New(slog.NewTextHandler(&logged, nil)),
		})
		done <- err
	}()
	require.Eventually(t, func() bool { return strings.Count(logged.String(), "waiting for the NATS servers") >= 2 },
		30*time.Second, 50*time.Millisecond, "the waits are logged")
	select {
	case err := <-done:
		t.Fatalf("Open gave up on servers that may yet start: %v", err)
	default:
	}
	assert.Contains(t, logged.String(), "url=nats://127.0.0.1:1,nats://127.0.0.1:2")
	assert.Contains(t, logged.String(), "no servers available for connection")
	cancel()
	err := <-done
	require.ErrorIs(t, err, events.ErrUnavailable)
	assert.Contains(t, err.Error(), "stopped while waiting for the NATS servers at nats://127.0.0.1:1,nats://127.0.0.1:2")

	c := testkit.StartCluster(t, filepath.Join(t.TempDir(), "creds"))
	stranger := filepath.Join(t.TempDir(), "stranger.nk")
	_, err = events.EnsureCreds(filepath.Dir(stranger))
	require.NoError(t, err)
	_, err = events.Open(testkit.Context(t), events.Config{
		URL:          c.URLs(),
		NKeySeedFile: events.CredsFile(filepath.Dir(stranger), events.IdentityEngine),
		Redactor:     &events.Redactor{},
	})
	require.ErrorIs(t, err, events.ErrUnauthorized)
}
