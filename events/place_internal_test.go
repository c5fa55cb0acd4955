package events

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// openSigned opens a strict, signed log in a temp dir.
func openSigned(t testing.TB) *Log {
	t.Helper()
	dir := t.TempDir()
	l, err := Open(testContext(t), Config{StoreDir: filepath.Join(dir, "nats"), Redactor: &Redactor{},
		LogKeyFile: filepath.Join(dir, "creds", LogKeyFile), MakeLogKey: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// TestALateCopyOfASignedEventIsRejected stores a signed event again under
// its own message id once the server's duplicate window let it in (made
// short here, as a holder of the engine's NATS identity could, and the
// allowed lag with it, so that the test need not wait two minutes): the
// copy verifies by its MAC, but its time is long before the server stored
// it and its id was stored before. Every read leaves it out, the engine
// records it, audit lists it.
func TestALateCopyOfASignedEventIsRejected(t *testing.T) {
	t.Parallel()
	l := openSigned(t)
	l.maxLag = time.Second
	ctx := testContext(t)
	res, err := l.Append(ctx, Event{Type: StepFinished, RunID: "R", StepKey: "s", ID: DecisionID(StepFinished, "R", "s", "1")},
		StepFinishedData{Attempt: 1, State: StateSuccess})
	if err != nil {
		t.Fatal(err)
	}
	orig, err := l.events.GetMsg(ctx, res.Seq)
	if err != nil {
		t.Fatal(err)
	}
	hdr := nats.Header{MACHeader: orig.Header.Values(MACHeader), jetstream.MsgIDHeader: orig.Header.Values(jetstream.MsgIDHeader)}
	time.Sleep(time.Second)
	copied := storedPastWindow(ctx, t, l, func() (*jetstream.PubAck, error) {
		return l.js.PublishMsg(ctx, &nats.Msg{Subject: orig.Subject, Header: hdr, Data: orig.Data})
	})

	evs, err := l.Read(ctx, FollowOptions{Filters: []string{RunFilter("R")}})
	if err != nil {
		t.Fatal(err)
	}
	var finished int
	for _, ev := range evs {
		if ev.Type == StepFinished {
			finished++
		}
	}
	if finished != 1 {
		t.Errorf("read %d step.finished, want the original alone", finished)
	}
	if _, err := l.EventAt(ctx, copied); !errors.Is(err, ErrTampered) {
		t.Errorf("EventAt of the copy: %v, want ErrTampered", err)
	}
	rejected, err := l.Read(ctx, FollowOptions{Filters: []string{EventSubject(AggregateRun, "R", IntegrityRejected)}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rejected) != 1 {
		t.Fatalf("%d integrity.rejected, want 1", len(rejected))
	}
	var d IntegrityRejectedData
	if err := rejected[0].Decode(&d); err != nil || d.Reason != ReasonRepeated || d.Seq != copied {
		t.Errorf("integrity.rejected %+v (%v), want the copy at %d, %q", d, err, copied, ReasonRepeated)
	}

	rep, err := l.Audit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]uint64{}
	for _, p := range rep.Problems {
		kinds[p.Kind] = p.Seq
	}
	for _, kind := range []string{ProblemRepeated, ProblemRepeatedID} {
		if kinds[kind] != copied {
			t.Errorf("audit: no %q at the copy's sequence %d: %v", kind, copied, rep.Problems)
		}
	}
	if _, ok := kinds[ProblemDuplicateWindow]; !ok {
		t.Errorf("audit does not say the duplicate window was shortened: %v", rep.Problems)
	}
}

// TestGroupCommitMakesAStaleEventAgain: an event that waited longer than
// refreshAfter before the group commit sent it is made again with the
// time of now, so that it is stored within the lag its readers allow; a
// time its caller chose is kept.
func TestGroupCommitMakesAStaleEventAgain(t *testing.T) {
	t.Parallel()
	l := openSigned(t)
	ctx := context.Background()
	long := time.Now().Add(-refreshAfter - 5*time.Second).UTC()
	var reqs []*commitReq
	for _, stamped := range []bool{true, false} {
		ev := Event{Type: StepStarted, RunID: "R", StepKey: "s", Time: long}
		msg, _, err := l.eventMsg(ctx, &ev, StepStartedData{Attempt: 1})
		if err != nil {
			t.Fatal(err)
		}
		reqs = append(reqs, l.commitRequest(msg, &ev, false, stamped, false))
	}
	l.committer().commit(reqs)
	for i, r := range reqs {
		res, err := r.wait(ctx)
		if err != nil {
			t.Fatal(err)
		}
		ev, err := l.EventAt(ctx, res.Seq)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		refreshed := time.Since(ev.Time) < refreshAfter
		if want := i == 0; refreshed != want {
			t.Errorf("request %d (stamped by the log: %v): stored with time %s", i, want, ev.Time)
		}
	}
}

// The time check of signed events holds only while the shortest duplicate
// window a Log accepts is longer than the lag plus the clock skew allowed
// (see maxLag).
func TestThePlaceCheckFitsTheShortestDuplicateWindow(t *testing.T) {
	shortest := 2 * time.Minute
	cfg := Config{StoreDir: t.TempDir(), DuplicateWindow: shortest}
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	cfg.DuplicateWindow = shortest - time.Second
	if err := cfg.Validate(); err == nil {
		t.Fatalf("a duplicate window under %s is accepted", shortest)
	}
	if maxLag+maxClockSkew >= shortest {
		t.Errorf("maxLag %s + maxClockSkew %s is not under the shortest duplicate window %s", maxLag, maxClockSkew, shortest)
	}
}

// TestADecisionMadeAgainAndStoredLateIsRejected: the first message under a
// decision's id is the decision, whenever it was stored. An event stored
// late as the first under its id is read; a copy of it stored again past
// the duplicate window, and the decision made again with another time
// that reaches the server late, are not: readers reject them as stored
// out of their time under an id stored before, and audit lists them.
func TestADecisionMadeAgainAndStoredLateIsRejected(t *testing.T) {
	t.Parallel()
	l := openSigned(t)
	ctx := testContext(t)
	long := func() time.Time { return time.Now().Add(-2 * time.Minute).UTC() }
	finished := Event{Type: StepFinished, RunID: "R", StepKey: "s", ID: DecisionID(StepFinished, "R", "s", "1"), Time: long()}
	first, err := l.Append(ctx, finished, StepFinishedData{Attempt: 1, State: StateSuccess})
	if err != nil {
		t.Fatal(err)
	}
	cancelled := Event{Type: RunCancelRequested, RunID: "R", ID: DecisionID(RunCancelRequested, "R")}
	firstCancel, err := l.Append(ctx, cancelled, RunCancelRequestedData{Requester: "me"})
	if err != nil {
		t.Fatal(err)
	}
	orig, err := l.events.GetMsg(ctx, first.Seq)
	if err != nil {
		t.Fatal(err)
	}
	untilStored := func(publish func() (*jetstream.PubAck, error)) uint64 {
		t.Helper()
		return storedPastWindow(ctx, t, l, publish)
	}
	hdr := nats.Header{MACHeader: orig.Header.Values(MACHeader), jetstream.MsgIDHeader: orig.Header.Values(jetstream.MsgIDHeader)}
	copied := untilStored(func() (*jetstream.PubAck, error) {
		return l.js.PublishMsg(ctx, &nats.Msg{Subject: orig.Subject, Header: hdr, Data: orig.Data})
	})
	again := untilStored(func() (*jetstream.PubAck, error) {
		cancelled.Time = long()
		res, err := l.Append(ctx, cancelled, RunCancelRequestedData{Requester: "me, later"})
		return &jetstream.PubAck{Sequence: res.Seq, Duplicate: res.Duplicate}, err
	})

	evs, err := l.Read(ctx, FollowOptions{Filters: []string{RunFilter("R")}})
	if err != nil {
		t.Fatal(err)
	}
	var read []uint64
	for _, ev := range evs {
		if ev.Type != IntegrityRejected {
			read = append(read, ev.Seq)
		}
	}
	if want := []uint64{first.Seq, firstCancel.Seq}; !slices.Equal(read, want) {
		t.Errorf("read the events at %v, want the first of each id alone, %v", read, want)
	}
	rejected, err := l.Read(ctx, FollowOptions{Filters: []string{EventSubject(AggregateRun, "R", IntegrityRejected)}})
	if err != nil {
		t.Fatal(err)
	}
	got := map[uint64]string{}
	for _, ev := range rejected {
		var d IntegrityRejectedData
		if err := ev.Decode(&d); err != nil {
			t.Fatal(err)
		}
		got[d.Seq] = d.Reason
	}
	if want := map[uint64]string{copied: ReasonRepeated, again: ReasonRepeated}; !maps.Equal(got, want) {
		t.Errorf("integrity.rejected %v, want %v", got, want)
	}

	rep, err := l.Audit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	repeated := map[uint64]string{}
	for _, p := range rep.Problems {
		if p.Kind == ProblemRepeated {
			repeated[p.Seq] = p.Detail
		}
	}
	for seq, before := range map[uint64]uint64{copied: first.Seq, again: firstCancel.Seq} {
		if want := fmt.Sprintf("its id is stored at seq %d", before); !strings.HasSuffix(repeated[seq], want) {
			t.Errorf("audit of seq %d: %q, want a %q ending %q: %v", seq, repeated[seq], ProblemRepeated, want, rep.Problems)
		}
	}
	if len(rep.Notes) != 1 || rep.Notes[0].Seq != first.Seq || rep.Notes[0].Kind != ProblemLate {
		t.Errorf("audit notes %v, want the late first step.finished at %d", rep.Notes, first.Seq)
	}
}

// TestAPlaceLookUpThatCannotReachTheEventFails: a look-up that does not
// read through the event it is for (a replica behind its leader) cannot
// say what came before it, and says so rather than answer.
func TestAPlaceLookUpThatCannotReachTheEventFails(t *testing.T) {
	t.Parallel()
	l := openSigned(t)
	ctx := testContext(t)
	res, err := l.Append(ctx, Event{Type: RunRequested, RunID: "R"}, RunRequestedData{JobName: "j"})
	if err != nil {
		t.Fatal(err)
	}
	msg, err := l.events.GetMsg(ctx, res.Seq)
	if err != nil {
		t.Fatal(err)
	}
	// Under another id: the message there is no earlier one of it.
	hdr := nats.Header{jetstream.MsgIDHeader: []string{l.publishID("another")}}
	_, err = l.placeBefore(ctx, res.Seq+5, msg.Subject, hdr, time.Time{}, time.Now())
	if !errors.Is(err, ErrUnavailable) {
		t.Errorf("placeBefore of a sequence past the log's end: %v, want ErrUnavailable", err)
	}
}

// storedPastWindow shortens the duplicate window of l's stream to about
// 100 ms, as a holder of the engine's NATS identity could, and publishes
// with publish until the server stores the message rather than drop it as
// a duplicate; it returns the sequence. The server forgets ids on a timer
// of its own, which a change of the window makes fire at once; but under
// load it may fire before the server has put the new window in place
// (nats-server resets the timer first), and then waits out the old one,
// two minutes. Each retry moves the window by a millisecond, which
// resets the timer again, now with the short window in place.
func storedPastWindow(ctx context.Context, t *testing.T, l *Log, publish func() (*jetstream.PubAck, error)) uint64 {
	t.Helper()
	cfg := l.events.CachedInfo().Config
	deadline := time.Now().Add(20 * time.Second)
	for i := time.Duration(0); ; i++ {
		cfg.Duplicates = 100*time.Millisecond + i*time.Millisecond
		if _, err := l.js.UpdateStream(ctx, cfg); err != nil {
			t.Fatal(err)
		}
		time.Sleep(500 * time.Millisecond)
		ack, err := publish()
		if err != nil {
			t.Fatal(err)
		}
		if !ack.Duplicate {
			return ack.Sequence
		}
		if time.Now().After(deadline) {
			t.Fatal("the server dropped every message as a duplicate; the test shows nothing")
		}
	}
}

// BenchmarkReadOutOfItsTime: what a reader pays for an event stored out
// of its time (EventAt, the look-up not yet made: placeBefore's answer is
// forgotten at each round) against one within its time, with n earlier
// messages on its subject (a run's step.finished subject holds one per
// step attempt of the run).
func BenchmarkReadOutOfItsTime(b *testing.B) {
	for _, n := range []int{10, 1000} {
		l := openSigned(b)
		ctx := context.Background()
		for i := range n {
			if _, err := l.Append(ctx, Event{Type: StepFinished, RunID: "R", StepKey: fmt.Sprint("s", i)},
				StepFinishedData{Attempt: 1, State: StateSuccess}); err != nil {
				b.Fatal(err)
			}
		}
		late, err := l.Append(ctx, Event{Type: StepFinished, RunID: "R", StepKey: "late", Time: time.Now().Add(-2 * time.Minute).UTC()},
			StepFinishedData{Attempt: 1, State: StateSuccess})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("within/%d", n), func(b *testing.B) {
			for b.Loop() {
				if _, err := l.EventAt(ctx, late.Seq-1); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("out/%d", n), func(b *testing.B) {
			for b.Loop() {
				l.places.Delete(late.Seq)
				if _, err := l.EventAt(ctx, late.Seq); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
