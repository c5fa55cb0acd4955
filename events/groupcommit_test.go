package events_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

// appendRuns appends perRun step.started events to each of runs runs, one
// goroutine per run, and returns the sequence of every append by run, in
// append order.
func appendRuns(t *testing.T, l *events.Log, runs, perRun int) map[string][]uint64 {
	t.Helper()
	ctx := testkit.Context(t)
	var mu sync.Mutex
	seqs := map[string][]uint64{}
	var wg sync.WaitGroup
	for r := range runs {
		run := fmt.Sprintf("R%d", r)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perRun {
				res, err := l.Append(ctx, events.Event{
					ID:   events.DecisionID(events.StepStarted, run, strconv.Itoa(i)),
					Type: events.StepStarted, RunID: run, StepKey: "s",
				}, events.StepStartedData{Attempt: i + 1})
				if !assert.NoError(t, err) {
					return
				}
				assert.False(t, res.Duplicate)
				mu.Lock()
				seqs[run] = append(seqs[run], res.Seq)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return seqs
}

// checkRuns checks that every run's events are stored at the sequences
// their appends answered, in the order they were appended.
func checkRuns(t *testing.T, l *events.Log, seqs map[string][]uint64) {
	t.Helper()
	ctx := testkit.Context(t)
	for run, want := range seqs {
		got, err := l.Read(ctx, events.FollowOptions{Filters: []string{events.RunFilter(run)}})
		require.NoError(t, err)
		require.Len(t, got, len(want), run)
		for i, ev := range got {
			var d events.StepStartedData
			require.NoError(t, ev.Decode(&d))
			assert.Equal(t, i+1, d.Attempt, "%s: events out of order", run)
			assert.Equal(t, want[i], ev.Seq, "%s: event %d not at the sequence its append answered", run, i)
		}
	}
}

func TestGroupCommitBatchesConcurrentAppendsInOrder(t *testing.T) {
	t.Parallel()
	l := testkit.StartLog(t, events.Config{})
	const runs, perRun = 64, 25
	seqs := appendRuns(t, l, runs, perRun)
	checkRuns(t, l, seqs)

	last, err := l.LastSeq(testkit.Context(t))
	require.NoError(t, err)
	assert.Equal(t, uint64(runs*perRun), last, "every append stored once")
	batches, batched := l.GroupCommits()
	t.Logf("%d batches held %d of %d events", batches, batched, runs*perRun)
	require.NotZero(t, batches, "64 concurrent appenders never formed a batch")
	assert.Greater(t, float64(batched)/float64(batches), 2.0, "events per batch")
}

func TestGroupCommitAsyncAppendsKeepTheirOrder(t *testing.T) {
	t.Parallel()
	ctx := testkit.Context(t)
	l := testkit.StartLog(t, events.Config{})
	var pending []*events.PendingAppend
	for i := range 300 {
		p, err := l.AppendAsync(ctx, events.Event{Type: events.StepStarted, RunID: "R", StepKey: "s"}, events.StepStartedData{Attempt: i + 1})
		require.NoError(t, err)
		pending = append(pending, p)
	}
	// An Append after AppendAsyncs is stored after them.
	after, err := l.Append(ctx, events.Event{Type: events.StepStarted, RunID: "R", StepKey: "s"}, events.StepStartedData{Attempt: 301})
	require.NoError(t, err)
	want := map[string][]uint64{}
	for _, p := range pending {
		res, err := p.Wait(ctx)
		require.NoError(t, err)
		want["R"] = append(want["R"], res.Seq)
	}
	want["R"] = append(want["R"], after.Seq)
	checkRuns(t, l, want)
	batches, _ := l.GroupCommits()
	assert.NotZero(t, batches)
}

// TestGroupCommitCountedBeforeTheFirstAppend: asking a fresh strict Log
// how many batches it committed (as /metrics does before anything ran)
// must not keep its group commit from starting: the appends after it are
// stored, and batched.
func TestGroupCommitCountedBeforeTheFirstAppend(t *testing.T) {
	t.Parallel()
	l := testkit.StartLog(t, events.Config{})
	batches, batched := l.GroupCommits()
	assert.Zero(t, batches)
	assert.Zero(t, batched)
	seqs := appendRuns(t, l, 64, 5)
	checkRuns(t, l, seqs)
	batches, _ = l.GroupCommits()
	assert.NotZero(t, batches, "64 concurrent appenders never formed a batch")
}

// rawClient connects a plain JetStream client to l.
func rawClient(t *testing.T, l *events.Log) jetstream.JetStream {
	t.Helper()
	js, err := jetstream.New(testkit.DialEngine(t, l.ClientURL(), l.CredsDir()))
	require.NoError(t, err)
	return js
}

func TestGroupCommitOnAStreamWithoutAtomicBatches(t *testing.T) {
	t.Parallel()
	ctx := testkit.Context(t)
	dir := filepath.Join(t.TempDir(), "nats")
	l, err := events.Open(ctx, events.Config{StoreDir: dir, Listen: "127.0.0.1:0", Redactor: &events.Redactor{}})
	require.NoError(t, err)
	js := rawClient(t, l)
	s, err := js.Stream(ctx, events.EventsStream)
	require.NoError(t, err)
	cfg := s.CachedInfo().Config
	require.True(t, cfg.AllowAtomicPublish, "ORBIT_EVENTS must allow atomic batches")

	// A stream that refuses batches (as one provisioned by an older
	// engine): appends still succeed, one by one.
	cfg.AllowAtomicPublish = false
	_, err = js.UpdateStream(ctx, cfg)
	require.NoError(t, err)
	seqs := appendRuns(t, l, 16, 10)
	checkRuns(t, l, seqs)
	require.NoError(t, l.Close())

	// Opening again adds it to the existing stream.
	l, err = events.Open(ctx, events.Config{StoreDir: dir, Listen: "127.0.0.1:0", Redactor: &events.Redactor{}})
	require.NoError(t, err)
	defer l.Close()
	s, err = rawClient(t, l).Stream(ctx, events.EventsStream)
	require.NoError(t, err)
	assert.True(t, s.CachedInfo().Config.AllowAtomicPublish, "provisioning adds AllowAtomicPublish to an existing stream")
	checkRuns(t, l, seqs)
}

// killChildEnv names the store directory of the child engine
// TestGroupCommitAcknowledgedAppendsSurviveKill starts.
const killChildEnv = "ORBIT_TEST_GROUP_COMMIT_CHILD"

// TestGroupCommitAcknowledgedAppendsSurviveKill runs 64 concurrent
// appenders in a child engine in strict mode, which prints each append as
// soon as it is acknowledged, kills it with SIGKILL while they run, and
// checks that every acknowledged event is in the log after a restart.
func TestGroupCommitAcknowledgedAppendsSurviveKill(t *testing.T) {
	if dir := os.Getenv(killChildEnv); dir != "" {
		groupCommitChild(dir)
		return
	}
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "nats")
	cmd := exec.Command(os.Args[0], "-test.run=^TestGroupCommitAcknowledgedAppendsSurviveKill$")
	cmd.Env = append(os.Environ(), killChildEnv+"="+dir)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

	acked := map[string]uint64{}
	sc := bufio.NewScanner(out)
	deadline := time.Now().Add(30 * time.Second)
	for sc.Scan() && len(acked) < 3000 && time.Now().Before(deadline) {
		id, seq, ok := strings.Cut(sc.Text(), " ")
		require.True(t, ok, "child printed %q", sc.Text())
		n, err := strconv.ParseUint(seq, 10, 64)
		require.NoError(t, err)
		acked[id] = n
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	// What the child printed before it died was acknowledged too.
	for sc.Scan() {
		if id, seq, ok := strings.Cut(sc.Text(), " "); ok {
			if n, err := strconv.ParseUint(seq, 10, 64); err == nil {
				acked[id] = n
			}
		}
	}
	_ = cmd.Wait()
	require.GreaterOrEqual(t, len(acked), 1000, "the child acknowledged too little before the kill")

	l := testkit.StartLog(t, events.Config{StoreDir: dir})
	ctx := testkit.Context(t)
	for id, seq := range acked {
		ev, err := l.EventAt(ctx, seq)
		if !assert.NoError(t, err, "acknowledged event %s at %d lost", id, seq) {
			continue
		}
		assert.Equal(t, id, ev.ID, "event at %d", seq)
	}
	t.Logf("%d acknowledged events all found after kill -9", len(acked))
}

// groupCommitChild is the child engine: 64 appenders that print "id seq"
// for every acknowledged append, until killed.
func groupCommitChild(dir string) {
	ctx := context.Background()
	l, err := events.Open(ctx, events.Config{StoreDir: dir, Durability: events.DurabilityStrict, Redactor: &events.Redactor{}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var mu sync.Mutex
	w := bufio.NewWriter(os.Stdout)
	for a := range 64 {
		go func() {
			run := fmt.Sprintf("K%d", a)
			for i := 0; ; i++ {
				id := events.DecisionID(events.StepStarted, run, strconv.Itoa(i))
				res, err := l.Append(ctx, events.Event{ID: id, Type: events.StepStarted, RunID: run, StepKey: "s"},
					events.StepStartedData{Attempt: i + 1})
				if err != nil {
					fmt.Fprintln(os.Stderr, err)
					os.Exit(1)
				}
				mu.Lock()
				fmt.Fprintf(w, "%s %d\n", id, res.Seq)
				_ = w.Flush()
				mu.Unlock()
			}
		}()
	}
	select {}
}

func TestGroupCommitAppendFirstAmongConcurrentAppends(t *testing.T) {
	t.Parallel()
	ctx := testkit.Context(t)
	l := testkit.StartLog(t, events.Config{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		appendRuns(t, l, 32, 20)
	}()
	var created, conflicts int
	var mu sync.Mutex
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := l.AppendFirst(ctx, events.Event{Type: events.TaskCreated, TaskID: "T-1"}, events.TaskCreatedData{Title: "t"})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				created++
			case errors.Is(err, events.ErrConflict):
				conflicts++
			default:
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	assert.Equal(t, 1, created, "task.created stored once")
	assert.Equal(t, 7, conflicts, "the others refused with ErrConflict")
}
