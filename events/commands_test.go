package events_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

func TestCommandsAreDeliveredUntilAcked(t *testing.T) {
	t.Parallel()
	ctx := testkit.Context(t)
	l := testkit.StartLog(t, events.Config{})

	require.NoError(t, l.Send(ctx, "step.shell.R.a.1", "cmd-a", map[string]string{"x": "1"}))
	require.NoError(t, l.Send(ctx, "step.shell.R.a.1", "cmd-a", map[string]string{"x": "1"}), "a duplicate send")
	pending, err := l.Pending(ctx, "step.shell.R.a.1")
	require.NoError(t, err)
	assert.True(t, pending)

	var mu sync.Mutex
	var deliveries []int
	done := make(chan struct{})
	stop, err := l.Consume(ctx, events.ConsumerSpec{Durable: "t", Command: "step.shell.>", AckWait: time.Second}, func(c *events.Command) {
		mu.Lock()
		deliveries = append(deliveries, c.Delivery)
		n := len(deliveries)
		mu.Unlock()
		if n == 1 {
			require.NoError(t, c.Nak(0))
			return
		}
		require.NoError(t, c.Ack(ctx))
		close(done)
	})
	require.NoError(t, err)
	defer stop.Stop()
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatal("command not redelivered")
	}
	mu.Lock()
	assert.Equal(t, []int{1, 2}, deliveries, "the duplicate send was stored once; the nak redelivered it")
	mu.Unlock()
	assert.Eventually(t, func() bool {
		pending, err := l.Pending(ctx, "step.shell.R.a.1")
		return err == nil && !pending
	}, 5*time.Second, 10*time.Millisecond)
}

func TestKeyValueCompareAndSet(t *testing.T) {
	t.Parallel()
	ctx := testkit.Context(t)
	kv := testkit.StartLog(t, events.Config{}).Leases()

	_, err := kv.Get(ctx, "run.R")
	assert.ErrorIs(t, err, events.ErrNotFound)
	rev, err := kv.Create(ctx, "run.R", []byte("a"))
	require.NoError(t, err)
	_, err = kv.Create(ctx, "run.R", []byte("b"))
	assert.ErrorIs(t, err, events.ErrConflict)
	_, err = kv.Update(ctx, "run.R", []byte("b"), rev+10)
	assert.ErrorIs(t, err, events.ErrConflict)
	rev, err = kv.Update(ctx, "run.R", []byte("b"), rev)
	require.NoError(t, err)
	e, err := kv.Get(ctx, "run.R")
	require.NoError(t, err)
	assert.Equal(t, "b", string(e.Value))
	keys, err := kv.Keys(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"run.R"}, keys)
	require.NoError(t, kv.Delete(ctx, "run.R", rev))
	_, err = kv.Get(ctx, "run.R")
	assert.ErrorIs(t, err, events.ErrNotFound)
}

func TestSubjectTokensAreSanitised(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "T-7", events.Token("T-7"))
	assert.Equal(t, "a_b_c_d_e", events.Token("a.b*c>d e"))
	assert.Equal(t, "_", events.Token(""))
	assert.Equal(t, "orbit.events.task.my_task.groundhog.attempt.started", events.EventSubject(events.AggregateTask, "my.task", "groundhog.attempt.started"))
}

func TestAppendAsyncKeepsOrder(t *testing.T) {
	t.Parallel()
	ctx := testkit.Context(t)
	l := testkit.StartLog(t, events.Config{})
	var pending []*events.PendingAppend
	for i := 1; i <= 20; i++ {
		p, err := l.AppendAsync(ctx, events.Event{Type: events.StepStarted, RunID: "R"}, events.StepStartedData{Attempt: i})
		require.NoError(t, err)
		pending = append(pending, p)
	}
	for i, p := range pending {
		a, err := p.Wait(ctx)
		require.NoError(t, err)
		assert.Equal(t, uint64(i+1), a.Seq)
	}
	short, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	again, err := pending[0].Wait(short)
	require.NoError(t, err, "waiting again returns the outcome at once")
	assert.Equal(t, uint64(1), again.Seq)
}
