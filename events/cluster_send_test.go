package events_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

// TestSendsWaitThroughALostQuorum: a command sent while the command
// queue has no leader (its leader's node and another killed, one of them
// back 12 s later) is stored once a leader is elected, instead of failing
// after the default timeout of a request (10 s): an orchestrator's
// dispatch that failed so ended its run failed.
func TestSendsWaitThroughALostQuorum(t *testing.T) {
	t.Parallel()
	ctx := testkit.Context(t)
	c := testkit.StartCluster(t, filepath.Join(t.TempDir(), "creds"))
	l, err := openOnCluster(t, c, c.URLs(), 0)
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	require.NoError(t, l.Send(ctx, "warm", "warm", map[string]int{"n": 0}))
	require.NoError(t, c.WaitCurrent(ctx, events.CommandsStream))

	leader, err := c.StreamLeader(ctx, events.CommandsStream)
	require.NoError(t, err)
	other := (leader + 1) % len(c.Nodes)
	c.Kill(leader)
	c.Kill(other)
	killed := time.Now()
	sent := make(chan error, 1)
	var took time.Duration
	go func() {
		// As the orchestrator sends: a context without a deadline.
		err := l.Send(context.Background(), "after.loss", "after-loss", map[string]int{"n": 1})
		took = time.Since(killed)
		sent <- err
	}()
	time.Sleep(12 * time.Second)
	c.Restart(other)
	select {
	case err := <-sent:
		require.NoError(t, err, "the send gave up %s after the loss", took.Round(100*time.Millisecond))
	case <-time.After(60 * time.Second):
		t.Fatal("the send did not end within 60 s")
	}
	t.Logf("the send was stored %s after the loss", took.Round(100*time.Millisecond))
	// The restarted node may still be catching up: a read is asked again
	// while JetStream answers that it is temporarily unavailable.
	var pending bool
	require.Eventually(t, func() bool {
		pending, err = l.Pending(ctx, "after.loss")
		return err == nil
	}, 20*time.Second, 250*time.Millisecond, "looking the command up")
	assert.True(t, pending, "the command is in the queue")
}
