package events

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// openSigned opens a strict, signed log in a temp dir.
func openSigned(t *testing.T) *Log {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	dir := t.TempDir()
	l, err := Open(ctx, Config{StoreDir: filepath.Join(dir, "nats"), Redactor: &Redactor{},
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
// it. Every read leaves it out, the engine records it, audit lists it.
func TestALateCopyOfASignedEventIsRejected(t *testing.T) {
	t.Parallel()
	l := openSigned(t)
	l.maxLag = time.Second
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := l.Append(ctx, Event{Type: StepFinished, RunID: "R", StepKey: "s", ID: DecisionID(StepFinished, "R", "s", "1")},
		StepFinishedData{Attempt: 1, State: StateSuccess})
	if err != nil {
		t.Fatal(err)
	}
	orig, err := l.events.GetMsg(ctx, res.Seq)
	if err != nil {
		t.Fatal(err)
	}
	// The server forgets ids past the window on a timer of its own: a
	// copy is dropped as a duplicate until it has. An update of the window
	// sets that timer to fire at once, which may be before the update has
	// set the new window: that purge keeps every id for the old window (two
	// minutes) and sets the timer by it. A second update, made once the
	// first has returned, fires the purge again with a short window.
	cfg := l.events.CachedInfo().Config
	for _, window := range []time.Duration{200 * time.Millisecond, 100 * time.Millisecond} {
		cfg.Duplicates = window
		if _, err := l.js.UpdateStream(ctx, cfg); err != nil {
			t.Fatal(err)
		}
	}
	hdr := nats.Header{MACHeader: orig.Header.Values(MACHeader), jetstream.MsgIDHeader: orig.Header.Values(jetstream.MsgIDHeader)}
	var ack *jetstream.PubAck
	time.Sleep(time.Second)
	for deadline := time.Now().Add(20 * time.Second); ; {
		time.Sleep(500 * time.Millisecond)
		if ack, err = l.js.PublishMsg(ctx, &nats.Msg{Subject: orig.Subject, Header: hdr, Data: orig.Data}); err != nil {
			t.Fatal(err)
		}
		if !ack.Duplicate {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the server dropped every copy as a duplicate; the test shows nothing")
		}
	}

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
	if _, err := l.EventAt(ctx, ack.Sequence); !errors.Is(err, ErrTampered) {
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
	if err := rejected[0].Decode(&d); err != nil || d.Reason != ReasonLate || d.Seq != ack.Sequence {
		t.Errorf("integrity.rejected %+v (%v), want the copy at %d, %q", d, err, ack.Sequence, ReasonLate)
	}

	rep, err := l.Audit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]uint64{}
	for _, p := range rep.Problems {
		kinds[p.Kind] = p.Seq
	}
	for _, kind := range []string{ProblemLate, ProblemRepeatedID} {
		if kinds[kind] != ack.Sequence {
			t.Errorf("audit: no %q at the copy's sequence %d: %v", kind, ack.Sequence, rep.Problems)
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
		msg, err := l.eventMsg(ctx, &ev, StepStartedData{Attempt: 1})
		if err != nil {
			t.Fatal(err)
		}
		reqs = append(reqs, l.commitRequest(msg, &ev, false, stamped))
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
