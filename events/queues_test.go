package events_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

// TestQueueDepths: commands waiting for a consumer count as pending, those
// delivered and not acknowledged as ack pending.
func TestQueueDepths(t *testing.T) {
	t.Parallel()
	ctx := testkit.Context(t)
	l := testkit.StartLog(t, events.Config{})

	held := make(chan *events.Command, 10)
	stop, err := l.Consume(ctx, events.ConsumerSpec{Durable: "busy", Command: "step.shell.>", MaxAckPending: 1, AckWait: time.Minute},
		func(c *events.Command) { held <- c })
	require.NoError(t, err)
	defer stop.Stop()
	for _, id := range []string{"a", "b", "c"} {
		require.NoError(t, l.Send(ctx, "step.shell.R."+id+".1", "cmd-"+id, map[string]string{}))
	}
	<-held
	assert.Eventually(t, func() bool {
		depths, err := l.QueueDepths(ctx)
		require.NoError(t, err)
		return assert.ObjectsAreEqual([]events.QueueDepth{{Consumer: "busy", Pending: 2, AckPending: 1}}, depths)
	}, 5*time.Second, 20*time.Millisecond, "one in progress, two waiting")
}
