package events

import (
	"context"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"
)

// openStrict opens a log of the default durability, strict, in a temp
// dir, closed when the test ends.
func openStrict(t *testing.T) *Log { return openLog(t, DurabilityStrict) }

// openLog opens a log of durability in a temp dir, closed when the test
// ends.
func openLog(t *testing.T, durability string) *Log {
	t.Helper()
	l, err := Open(testContext(t), Config{StoreDir: filepath.Join(t.TempDir(), "nats"), Redactor: &Redactor{}, Durability: durability})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// testContext is a context that ends with the test or after a minute.
func testContext(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// loneAppend submits one append to g alone and returns how long it
// waited for its commit.
func loneAppend(t *testing.T, l *Log, g *groupCommit) time.Duration {
	t.Helper()
	lone := requests(t, l, "lone")[0]
	start := time.Now()
	if err := g.submit(lone); err != nil {
		t.Fatal(err)
	}
	if _, err := lone.wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	return time.Since(start)
}

// requests encodes step.started events of run R with ids, in order, as
// group commit requests, without submitting them.
func requests(t *testing.T, l *Log, ids ...string) []*commitReq {
	t.Helper()
	var reqs []*commitReq
	for i, id := range ids {
		ev := Event{ID: id, Type: StepStarted, RunID: "R", StepKey: "s"}
		msg, _, err := l.eventMsg(context.Background(), &ev, StepStartedData{Attempt: i + 1})
		if err != nil {
			t.Fatal(err)
		}
		reqs = append(reqs, l.commitRequest(msg, &ev, false, true, false))
	}
	return reqs
}

// results waits for reqs and checks that each is stored, in order, at the
// sequence it was answered, and that the log holds want events.
func checkStored(t *testing.T, l *Log, reqs []*commitReq, want uint64) {
	t.Helper()
	ctx := context.Background()
	var prev uint64
	for i, r := range reqs {
		res, err := r.wait(ctx)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if res.Duplicate {
			continue
		}
		if res.Seq <= prev {
			t.Errorf("request %d stored at %d, after %d: out of order", i, res.Seq, prev)
		}
		prev = res.Seq
		ev, err := l.EventAt(ctx, res.Seq)
		if err != nil {
			t.Fatalf("request %d at %d: %v", i, res.Seq, err)
		}
		if id := r.msg.Header.Get("Nats-Msg-Id"); l.publishID(ev.ID) != id {
			t.Errorf("request %d: event at %d is %s", i, res.Seq, ev.ID)
		}
	}
	last, err := l.LastSeq(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if last != want {
		t.Errorf("the log holds %d events, want %d", last, want)
	}
}

func TestGroupCommitBatchWithADuplicateStoresItOnce(t *testing.T) {
	t.Parallel()
	l := openStrict(t)
	ctx := context.Background()
	first, err := l.Append(ctx, Event{ID: "dup", Type: StepStarted, RunID: "R", StepKey: "s"}, StepStartedData{Attempt: 1})
	if err != nil {
		t.Fatal(err)
	}
	// A batch with the duplicate among others, and one that repeats an id
	// of its own.
	reqs := requests(t, l, "a", "b", "dup", "c", "c", "d", "e", "f", "g", "h", "i", "j")
	if len(reqs) < minBatchMsgs {
		t.Fatalf("%d requests would not be sent as a batch", len(reqs))
	}
	l.committer().commit(reqs)
	checkStored(t, l, reqs, first.Seq+uint64(len(reqs))-2)
	for _, i := range []int{2, 4} {
		res, _ := reqs[i].wait(ctx)
		if !res.Duplicate {
			t.Errorf("request %d: a duplicate id not answered as Duplicate", i)
		}
	}
	if res, _ := reqs[2].wait(ctx); res.Seq != first.Seq {
		t.Errorf("the duplicate answered sequence %d, want the original's %d", res.Seq, first.Seq)
	}
}

func TestGroupCommitSplitsABatchOverTheServersLimit(t *testing.T) {
	t.Parallel()
	l := openStrict(t)
	ids := make([]string, maxBatchMsgs+500)
	for i := range ids {
		ids[i] = "e" + strconv.Itoa(i)
	}
	reqs := requests(t, l, ids...)
	l.committer().commit(reqs)
	checkStored(t, l, reqs, uint64(len(ids)))
	if batches, batched := l.GroupCommits(); batches < 2 || batched != uint64(len(ids)) {
		t.Errorf("%d batches held %d events, want the %d in at least 2", batches, batched, len(ids))
	}
}

func TestGroupCommitBatchesWhatIsQueued(t *testing.T) {
	t.Parallel()
	l := openStrict(t)
	ids := make([]string, 50)
	for i := range ids {
		ids[i] = "e" + strconv.Itoa(i)
	}
	reqs := requests(t, l, ids...)
	l.committer().commit(reqs)
	checkStored(t, l, reqs, uint64(len(ids)))
	if batches, batched := l.GroupCommits(); batches != 1 || batched != uint64(len(ids)) {
		t.Errorf("%d batches held %d events, want one of %d", batches, batched, len(ids))
	}
}

func TestGroupCommitStopCommitsWhatWasQueued(t *testing.T) {
	t.Parallel()
	l := openStrict(t)
	reqs := requests(t, l, "x", "y", "z")
	for _, r := range reqs {
		if err := l.committer().submit(r); err != nil {
			t.Fatal(err)
		}
	}
	l.stopCommits()
	for i, r := range reqs {
		select {
		case <-r.done:
			if r.err != nil {
				t.Errorf("request %d: %v", i, r.err)
			}
		default:
			t.Errorf("request %d still waits after the stop", i)
		}
	}
	if err := l.committer().submit(requests(t, l, "late")[0]); err == nil {
		t.Error("a submit after the stop was accepted")
	}
}

// TestGroupCommitOfCommandsStoresEachOnce: 64 senders send 10 commands
// each, every one twice; the queue holds each once. The group commit of
// commands is held back until every sender's first command waits in its
// queue, so its first round is an atomic batch of 64 whatever the machine's
// load, and the duplicates go in later rounds.
func TestGroupCommitOfCommandsStoresEachOnce(t *testing.T) {
	t.Parallel()
	l := openStrict(t)
	ctx := context.Background()
	held := newGroupCommit(l, CommandsStream)
	l.commitOnce.Do(func() {
		l.commits = newGroupCommit(l, EventsStream)
		l.stepCommits = newGroupCommit(l, StepsStream)
		go l.commits.run()
		go l.stepCommits.run()
		l.cmdCommits = held
	})
	if l.cmdCommits != held {
		t.Fatal("the log started its group commits before the test could hold them")
	}
	const senders, each = 64, 10
	var wg sync.WaitGroup
	for s := range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				name := "run.request.s" + strconv.Itoa(s) + "." + strconv.Itoa(i)
				// Every command twice: the second is a duplicate, in the
				// same batch or a later one.
				for range 2 {
					if err := l.Send(ctx, name, "cmd-"+name, map[string]int{"i": i}); err != nil {
						t.Error(err)
						return
					}
				}
			}
		}()
	}
	// Each sender waits for its first command: they all queue.
	deadline := time.Now().Add(time.Minute)
	for held.queued() < senders {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d senders queued a command in a minute", held.queued(), senders)
		}
		time.Sleep(time.Millisecond)
	}
	go held.run()
	wg.Wait()
	info, err := l.cmds.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != senders*each+1 { // and the queue's keeper
		t.Errorf("the command queue holds %d messages, want %d commands and the keeper", info.State.Msgs, senders*each)
	}
	if l.cmdCommits.batches.Load() == 0 || l.cmdCommits.appended.Load() < senders {
		t.Errorf("%d batches held %d commands, want the first %d in one", l.cmdCommits.batches.Load(), l.cmdCommits.appended.Load(), senders)
	}
	t.Logf("%d batches held %d commands", l.cmdCommits.batches.Load(), l.cmdCommits.appended.Load())
}

// TestGroupCommitGathersTheAppendersOfTheLastBatch checks that after a
// round that was a batch of n, the committer waits for n requests before
// the next round, instead of sending the first that come back on their own,
// and that it waits no longer than a quarter of that round's time, nor
// than its cap, when fewer come.
func TestGroupCommitGathersTheAppendersOfTheLastBatch(t *testing.T) {
	t.Parallel()
	l := openStrict(t)
	g := l.committer()
	g.gatherCap = time.Minute // appenders of a loaded test machine are slow to come back
	const n = 20
	ids := make([]string, n)
	for i := range ids {
		ids[i] = "e" + strconv.Itoa(i)
	}
	reqs := requests(t, l, ids...)
	// As after a round of n that took a minute; the committer reads them
	// only after the first submit wakes it.
	g.lastSize, g.lastTook = n, time.Minute
	for _, r := range reqs {
		if err := g.submit(r); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Millisecond) // appenders coming back one by one
	}
	checkStored(t, l, reqs, n)
	if batches, batched := l.GroupCommits(); batches != 1 || batched != n {
		t.Errorf("%d batches held %d events, want one of %d", batches, batched, n)
	}

	// Fewer come back than the last round held: the one that came waits a
	// quarter of the last round's time, not more.
	l = openStrict(t)
	g = l.committer()
	const took = 400 * time.Millisecond
	g.gatherCap = time.Minute
	g.lastSize, g.lastTook = n, took
	if waited := loneAppend(t, l, g); waited < took/gatherShare || waited > 10*time.Second {
		t.Errorf("a lone append after a batch waited %s, want about %s", waited, took/gatherShare)
	}
}

// TestGroupCommitGatherWaitsNoLongerThanItsCap checks that a round that
// took long (a leader election, a timeout) does not make the next one wait
// a quarter of that.
func TestGroupCommitGatherWaitsNoLongerThanItsCap(t *testing.T) {
	t.Parallel()
	l := openStrict(t)
	g := l.committer()
	g.lastSize, g.lastTook = 20, time.Minute
	if waited := loneAppend(t, l, g); waited < maxGatherWait || waited > 10*time.Second {
		t.Errorf("a lone append after a round of a minute waited %s, want about %s", waited, maxGatherWait)
	}
}
