package events_test

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

// sharedQueue is one server and two engines' Logs on their own connections
// to it, with a JetStream client on a third to look at the consumers.
type sharedQueue struct {
	logs [2]*events.Log
	js   jetstream.JetStream
}

func startSharedQueue(t *testing.T) *sharedQueue {
	t.Helper()
	l := testkit.StartLog(t, events.Config{Listen: "127.0.0.1:0"})
	other, err := events.Open(testkit.Context(t), events.Config{
		URL:          l.ClientURL(),
		NKeySeedFile: events.CredsFile(l.CredsDir(), events.IdentityEngine),
		Redactor:     &events.Redactor{},
	})
	require.NoError(t, err)
	t.Cleanup(func() { other.Close() })
	js, err := jetstream.New(testkit.DialEngine(t, l.ClientURL(), l.CredsDir()))
	require.NoError(t, err)
	return &sharedQueue{logs: [2]*events.Log{l, other}, js: js}
}

// holder consumes a durable on each of several Logs with a handler that
// holds every command it is given until released, counting them by Log.
type holder struct {
	mu      sync.Mutex
	held    []int
	order   []int // the Log each command went to, in delivery order
	release map[int][]chan struct{}
	stopped bool // handlers no longer hold what they are given
	stops   []events.Stopper
}

func hold(t *testing.T, logs []*events.Log, spec events.ConsumerSpec) *holder {
	t.Helper()
	ctx := testkit.Context(t)
	h := &holder{held: make([]int, len(logs)), release: map[int][]chan struct{}{}}
	for i, l := range logs {
		stop, err := l.Consume(ctx, spec, func(c *events.Command) {
			done := make(chan struct{})
			h.mu.Lock()
			h.held[i]++
			h.order = append(h.order, i)
			if h.stopped {
				close(done)
			} else {
				h.release[i] = append(h.release[i], done)
			}
			h.mu.Unlock()
			select {
			case <-done:
			case <-ctx.Done():
			}
			_ = c.Ack(ctx)
		})
		require.NoError(t, err)
		h.stops = append(h.stops, stop)
	}
	t.Cleanup(h.stop)
	return h
}

// counts returns how many commands each Log was given.
func (h *holder) counts() []int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]int(nil), h.held...)
}

// releaseOne lets the oldest command held on Log i be acknowledged.
func (h *holder) releaseOne(i int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	close(h.release[i][0])
	h.release[i] = h.release[i][1:]
}

func (h *holder) stop() {
	h.mu.Lock()
	for _, chans := range h.release {
		for _, c := range chans {
			close(c)
		}
	}
	h.release = map[int][]chan struct{}{}
	h.stopped = true
	h.mu.Unlock()
	for _, s := range h.stops {
		s.Stop()
	}
	h.stops = nil
}

func sum(xs []int) int {
	n := 0
	for _, x := range xs {
		n += x
	}
	return n
}

func sendSteps(t *testing.T, l *events.Log, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		require.NoError(t, l.Send(testkit.Context(t), fmt.Sprintf("step.shell.R.s%d.1", i), fmt.Sprintf("cmd-%d", i), map[string]int{"i": i}))
	}
}

// waiting returns how many pull requests the consumer has waiting: one
// per engine with a free slot.
func waiting(t *testing.T, js jetstream.JetStream, durable string) int {
	t.Helper()
	info, err := js.Consumer(testkit.Context(t), events.StepsStream, durable)
	if err != nil {
		return -1
	}
	return info.CachedInfo().NumWaiting
}

// TestSharedConsumerGivesEachEngineItsConcurrency: two engines consuming
// one durable with a concurrency of N each, and 2N commands queued at
// once: each engine runs N. Neither takes the whole burst, and the
// consumer's own bound does not cap both together at one engine's N.
func TestSharedConsumerGivesEachEngineItsConcurrency(t *testing.T) {
	t.Parallel()
	ctx := testkit.Context(t)
	q := startSharedQueue(t)
	const n = 4
	h := hold(t, q.logs[:], events.ConsumerSpec{Durable: "shared", Command: "step.shell.>", AckWait: time.Minute, Concurrency: n})

	sendSteps(t, q.logs[0], 0, 2*n)
	require.Eventually(t, func() bool { return sum(h.counts()) == 2*n }, 10*time.Second, 10*time.Millisecond,
		"both engines together run twice one engine's concurrency: %v", h.counts())
	assert.Equal(t, []int{n, n}, h.counts())
	depths, err := q.logs[0].QueueDepths(ctx)
	require.NoError(t, err)
	assert.Equal(t, []events.QueueDepth{{Consumer: "shared", Pending: 0, AckPending: 2 * n}}, depths)
}

// TestSharedConsumerBoundIsEachEnginesConcurrency: two engines of
// concurrency 2 hold four commands in flight and not a fifth; a slot freed
// on one engine is filled by that engine.
func TestSharedConsumerBoundIsEachEnginesConcurrency(t *testing.T) {
	t.Parallel()
	ctx := testkit.Context(t)
	q := startSharedQueue(t)
	h := hold(t, q.logs[:], events.ConsumerSpec{Durable: "bound", Command: "step.shell.>", AckWait: time.Minute, Concurrency: 2})

	sendSteps(t, q.logs[1], 0, 6)
	require.Eventually(t, func() bool { return sum(h.counts()) == 4 }, 10*time.Second, 10*time.Millisecond)
	require.Never(t, func() bool { return sum(h.counts()) > 4 }, 500*time.Millisecond, 10*time.Millisecond,
		"no engine takes more than its concurrency: %v", h.counts())
	assert.Equal(t, []int{2, 2}, h.counts())
	assert.Equal(t, 0, waiting(t, q.js, "bound"), "a full engine asks for nothing")

	h.releaseOne(0)
	require.Eventually(t, func() bool { return sum(h.counts()) == 5 }, 10*time.Second, 10*time.Millisecond)
	assert.Equal(t, []int{3, 2}, h.counts(), "the freed slot is the first engine's")
	depths, err := q.logs[0].QueueDepths(ctx)
	require.NoError(t, err)
	assert.Equal(t, []events.QueueDepth{{Consumer: "bound", Pending: 1, AckPending: 4}}, depths)
}

// TestSharedConsumerTakesTurns: two idle engines, each with a request
// waiting, are given commands by turns, one each, whoever asked first.
func TestSharedConsumerTakesTurns(t *testing.T) {
	t.Parallel()
	q := startSharedQueue(t)
	h := hold(t, q.logs[:], events.ConsumerSpec{Durable: "turns", Command: "step.shell.>", AckWait: time.Minute, Concurrency: 8})

	for i := range 8 {
		require.Eventually(t, func() bool { return waiting(t, q.js, "turns") == 2 }, 10*time.Second, 5*time.Millisecond,
			"both engines ask before command %d", i)
		sendSteps(t, q.logs[0], i, i+1)
		require.Eventually(t, func() bool { return sum(h.counts()) == i+1 }, 10*time.Second, 5*time.Millisecond)
	}
	h.mu.Lock()
	order := append([]int(nil), h.order...)
	h.mu.Unlock()
	for i := 1; i < len(order); i++ {
		assert.NotEqual(t, order[i-1], order[i], "command %d went to the engine served last: %v", i, order)
	}
	assert.Equal(t, []int{4, 4}, h.counts())
}

// TestSharedConsumerStopWaitsForHandlers: Stop returns once the running
// handlers have, and the request it left behind takes nothing: a command
// sent afterwards goes to the next consumer at once, not after its ack
// wait.
func TestSharedConsumerStopWaitsForHandlers(t *testing.T) {
	t.Parallel()
	ctx := testkit.Context(t)
	q := startSharedQueue(t)
	spec := events.ConsumerSpec{Durable: "stop", Command: "step.shell.>", AckWait: time.Minute, Concurrency: 2}
	h := hold(t, q.logs[:1], spec)
	sendSteps(t, q.logs[0], 0, 1)
	require.Eventually(t, func() bool { return sum(h.counts()) == 1 }, 10*time.Second, 10*time.Millisecond)
	require.Eventually(t, func() bool { return waiting(t, q.js, "stop") == 1 }, 10*time.Second, 10*time.Millisecond)

	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		h.stops[0].Stop()
	}()
	select {
	case <-stopped:
		t.Fatal("Stop returned while a handler ran")
	case <-time.After(300 * time.Millisecond):
	}
	h.releaseOne(0)
	select {
	case <-stopped:
	case <-ctx.Done():
		t.Fatal("Stop did not return once the handler had")
	}
	h.stops = nil

	sendSteps(t, q.logs[0], 1, 2)
	next := hold(t, q.logs[1:], spec)
	require.Eventually(t, func() bool { return sum(next.counts()) == 1 }, 10*time.Second, 10*time.Millisecond,
		"the command sent after Stop is delivered to the next consumer at once")
}

// TestSharedConsumerOutlivesTheConsumersDeletion: a consumer deleted
// under a waiting request (as a reset does), or while no request waits
// (every slot busy), is made again, and consuming goes on.
func TestSharedConsumerOutlivesTheConsumersDeletion(t *testing.T) {
	t.Parallel()
	ctx := testkit.Context(t)
	q := startSharedQueue(t)
	h := hold(t, q.logs[:1], events.ConsumerSpec{Durable: "gone", Command: "step.shell.>", AckWait: time.Minute, Concurrency: 1})
	require.Eventually(t, func() bool { return waiting(t, q.js, "gone") == 1 }, 10*time.Second, 10*time.Millisecond)
	require.NoError(t, q.js.DeleteConsumer(ctx, events.StepsStream, "gone"))
	sendSteps(t, q.logs[0], 0, 1)
	require.Eventually(t, func() bool { return sum(h.counts()) == 1 }, 10*time.Second, 10*time.Millisecond,
		"deleted under a waiting request: made again, and it delivers")

	require.NoError(t, q.js.DeleteConsumer(ctx, events.StepsStream, "gone"))
	h.releaseOne(0) // its ack finds no consumer; the next request neither
	sendSteps(t, q.logs[0], 1, 2)
	require.Eventually(t, func() bool { return sum(h.counts()) == 2 }, 10*time.Second, 10*time.Millisecond,
		"deleted while its one slot was busy: made again, and it delivers")
}

// TestSharedConsumerOnAClusterSurvivesANodesLoss: on a three-node cluster,
// killing the server that leads the command stream stops neither engine's
// consuming: their waiting requests are asked again, and a burst queued
// afterwards still gives each engine its concurrency.
func TestSharedConsumerOnAClusterSurvivesANodesLoss(t *testing.T) {
	t.Parallel()
	ctx := testkit.Context(t)
	c := testkit.StartCluster(t, filepath.Join(t.TempDir(), "creds"))
	var logs []*events.Log
	for i := range 2 {
		l, err := openOnCluster(t, c, c.Nodes[i].URL()+","+c.URLs(), 0)
		require.NoError(t, err)
		t.Cleanup(func() { l.Close() })
		logs = append(logs, l)
	}
	const n = 3
	h := hold(t, logs, events.ConsumerSpec{Durable: "nodeloss", Command: "step.shell.>", AckWait: time.Minute, Concurrency: n})
	sendSteps(t, logs[0], 0, 2)
	require.Eventually(t, func() bool { return sum(h.counts()) == 2 }, 10*time.Second, 10*time.Millisecond)
	h.releaseOne(0)
	h.releaseOne(1)

	require.NoError(t, c.WaitCurrent(ctx, events.StepsStream))
	leader, err := c.StreamLeader(ctx, events.StepsStream)
	require.NoError(t, err)
	killed := time.Now()
	c.Kill(leader)
	t.Logf("killed %s, the leader of %s", c.Nodes[leader].Name, events.StepsStream)

	sendSteps(t, logs[0], 2, 2+2*n)
	require.Eventually(t, func() bool { return sum(h.counts()) == 2+2*n }, 45*time.Second, 50*time.Millisecond,
		"the burst after the loss is delivered: %v", h.counts())
	t.Logf("delivered %s after the kill", time.Since(killed).Round(100*time.Millisecond))
	assert.Equal(t, []int{1 + n, 1 + n}, h.counts())
}
