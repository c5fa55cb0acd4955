package events

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// finishedRun appends a trivial finished run: requested, started, one
// step started and finished, finished. It returns the sequence of the
// step.finished.
func finishedRun(ctx context.Context, t *testing.T, l *Log, id string) uint64 {
	t.Helper()
	var finished uint64
	for _, e := range []struct {
		ev      Event
		payload any
	}{
		{Event{Type: RunRequested, ID: DecisionID(RunRequested, id)}, RunRequestedData{JobName: "j"}},
		{Event{Type: RunStarted}, RunStartedData{}},
		{Event{Type: StepStarted, StepKey: "s", ID: DecisionID(StepStarted, id, "s", "1")}, StepStartedData{Attempt: 1}},
		{Event{Type: StepFinished, StepKey: "s", ID: DecisionID(StepFinished, id, "s", "1")}, StepFinishedData{Attempt: 1, State: StateSuccess}},
		{Event{Type: RunFinished, ID: RunFinishedID(id, 0)}, RunFinishedData{State: StateSuccess}},
	} {
		e.ev.RunID, e.ev.Job = id, "j"
		res, err := l.Append(ctx, e.ev, e.payload)
		if err != nil {
			t.Fatal(err)
		}
		if e.ev.Type == StepFinished {
			finished = res.Seq
		}
	}
	return finished
}

// TestARemovalIsArchivedRecordedAndExplained: two finished runs of three
// are exported to an archive, which reads back whole and verifies by the
// log key, and are then removed: the log.removed record explains their
// sequences to audit, EventAt says ErrRemoved, reads find nothing of
// them; the third run's events purged without a record are still missing
// to audit.
func TestARemovalIsArchivedRecordedAndExplained(t *testing.T) {
	t.Parallel()
	l := openSigned(t)
	ctx := testContext(t)
	finishedRun(ctx, t, l, "R1")
	blob, err := l.PutBlob(ctx, []byte("the step's output"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(ctx, Event{Type: ShellExited, RunID: "R2", StepKey: "s"}, ShellExitedData{Attempt: 1, Program: "sh", Stdout: OutputStream{Blob: &blob}}); err != nil {
		t.Fatal(err)
	}
	finishedRun(ctx, t, l, "R2")
	finishedRun(ctx, t, l, "R3")

	path := filepath.Join(t.TempDir(), "archive", "a.orbit-archive.gz")
	exp, err := l.Export(ctx, path, ExportSelection{Runs: []string{"R1", "R2"}})
	if err != nil {
		t.Fatal(err)
	}
	if exp.Events != 11 || exp.Blobs != 1 || exp.Removal([]string{"R1", "R2"}, nil).LastSeq != 11 {
		t.Fatalf("exported %+v, want 11 events through seq 11 and the blob", exp)
	}
	a, err := ReadArchive(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Events) != 11 || string(a.Blobs[blob.Digest]) != "the step's output" {
		t.Fatalf("read back %d events, blobs %v", len(a.Events), a.Blobs)
	}
	orig, err := l.events.GetMsg(ctx, a.Events[3].Seq)
	if err != nil {
		t.Fatal(err)
	}
	if e := a.Events[3]; string(e.Data) != string(orig.Data) || e.Subject != orig.Subject ||
		e.Headers[MACHeader][0] != orig.Header.Get(MACHeader) || e.MsgID != orig.Header.Get(jetstream.MsgIDHeader) {
		t.Errorf("archived %+v, stored %+v", e, orig)
	}
	rep, err := AuditArchive(l.keyFile, a)
	if err != nil || len(rep.Problems) != 0 || rep.SignedFrom == 0 {
		t.Fatalf("audit of the archive: %+v, %v", rep, err)
	}
	sum, err := FileSHA256(path)
	if err != nil || sum != exp.SHA256 {
		t.Fatalf("file sum %s (%v), export said %s", sum, err, exp.SHA256)
	}

	d := exp.Removal([]string{"R1", "R2"}, nil)
	rec, err := l.Remove(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Seq <= d.LastSeq || d.Count != 11 || len(d.Seqs) != 1 || len(d.Filters()) != 2 || d.Subjects != nil || d.Version != LogRemovedVersion {
		t.Fatalf("record at %d", rec.Seq)
	}
	left, err := l.Read(ctx, FollowOptions{Filters: []string{RunFilter("R1"), RunFilter("R2")}})
	if err != nil || len(left) != 0 {
		t.Fatalf("read %d events of the removed runs (%v)", len(left), err)
	}
	if _, err := l.EventAt(ctx, 1); !errors.Is(err, ErrRemoved) || !errors.Is(err, ErrNotFound) {
		t.Errorf("EventAt of a removed event: %v, want ErrRemoved", err)
	}
	audit, err := l.Audit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(audit.Problems) != 0 || audit.Removed != 11 {
		t.Fatalf("audit after the removal: %v (removed %d)", audit.Problems, audit.Removed)
	}

	// Removed behind the log's back: no record names it.
	if err := l.events.Purge(ctx, jetstream.WithPurgeSubject(RunFilter("R3"))); err != nil {
		t.Fatal(err)
	}
	audit, err = l.Audit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(audit.Problems) != 1 || audit.Problems[0].Kind != ProblemMissing || audit.Problems[0].Seq != 12 || audit.Problems[0].Through != 16 {
		t.Errorf("audit after a purge nobody recorded: %v, want seq 12-16 missing", audit.Problems)
	}
}

// TestACutOrChangedArchiveIsRefused: an archive cut short, or with a
// byte changed, does not read.
func TestACutOrChangedArchiveIsRefused(t *testing.T) {
	t.Parallel()
	l := openSigned(t)
	ctx := testContext(t)
	finishedRun(ctx, t, l, "R1")
	path := filepath.Join(t.TempDir(), "a.gz")
	if _, err := l.Export(ctx, path, ExportSelection{Runs: []string{"R1"}}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Export(ctx, path, ExportSelection{Runs: []string{"R1"}}); !errors.Is(err, os.ErrExist) {
		t.Errorf("an export over an archive: %v, want ErrExist", err)
	}
	for name, bad := range map[string][]byte{
		"cut":     data[:len(data)*2/3],
		"changed": append(append(append([]byte{}, data[:len(data)/2]...), data[len(data)/2]^0xff), data[len(data)/2+1:]...),
	} {
		p := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(p, bad, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadArchive(p); !errors.Is(err, ErrBadArchive) {
			t.Errorf("%s archive: %v, want ErrBadArchive", name, err)
		}
	}
}

// TestALateCopyOfARemovedRunIsNotReadmitted: an event of a removed run,
// stored again once the duplicate window let it in, has no first under its
// id any more (that was purged), but its run was removed after it was
// made: every read leaves it out and audit lists it.
func TestALateCopyOfARemovedRunIsNotReadmitted(t *testing.T) {
	t.Parallel()
	l := openSigned(t)
	l.maxLag = time.Second
	ctx := testContext(t)
	seq := finishedRun(ctx, t, l, "R1")
	orig, err := l.events.GetMsg(ctx, seq)
	if err != nil {
		t.Fatal(err)
	}
	exp, err := l.Export(ctx, filepath.Join(t.TempDir(), "a.gz"), ExportSelection{Runs: []string{"R1"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Remove(ctx, exp.Removal([]string{"R1"}, nil)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	hdr := nats.Header{MACHeader: orig.Header.Values(MACHeader), jetstream.MsgIDHeader: orig.Header.Values(jetstream.MsgIDHeader)}
	copied := storedPastWindow(ctx, t, l, func() (*jetstream.PubAck, error) {
		return l.js.PublishMsg(ctx, &nats.Msg{Subject: orig.Subject, Header: hdr, Data: orig.Data})
	})
	evs, err := l.Read(ctx, FollowOptions{Filters: []string{RunFilter("R1")}})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if ev.Type == StepFinished {
			t.Errorf("the copy was read: %+v", ev)
		}
	}
	if _, err := l.EventAt(ctx, copied); !errors.Is(err, ErrTampered) {
		t.Errorf("EventAt of the copy: %v, want ErrTampered", err)
	}
	rep, err := l.Audit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, p := range rep.Problems {
		found = found || (p.Kind == ReasonRemoved && p.Seq == copied)
	}
	if !found {
		t.Errorf("audit does not list the copy at %d: %v", copied, rep.Problems)
	}
}

// FuzzReadArchive: whatever the bytes, ReadArchive returns an archive or
// an error wrapping ErrBadArchive, and never panics.
func FuzzReadArchive(f *testing.F) {
	dir := f.TempDir()
	w, err := createArchive(filepath.Join(dir, "seed.gz"), ArchiveHeader{Format: ArchiveFormat, Version: ArchiveVersion})
	if err != nil {
		f.Fatal(err)
	}
	if err := w.line(archiveLine{Event: &ArchivedEvent{Seq: 1, Subject: "orbit.events.run.R.run.started", Data: []byte(`{}`)}}); err != nil {
		f.Fatal(err)
	}
	if _, err := w.finish(1, 0); err != nil {
		f.Fatal(err)
	}
	seed, err := os.ReadFile(filepath.Join(dir, "seed.gz"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(t.TempDir(), "a.gz")
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadArchive(p); err != nil && !errors.Is(err, ErrBadArchive) {
			t.Fatalf("error not wrapping ErrBadArchive: %v", err)
		}
	})
}

// TestARecordOfTheFirstFormatStillHolds: a log.removed of the first
// format, which names each run's subject filter, is purged by those
// filters, explains its sequences to audit and keeps a late copy of its
// runs out, as a record of the current format (which names none) does.
func TestARecordOfTheFirstFormatStillHolds(t *testing.T) {
	t.Parallel()
	l := openSigned(t)
	ctx := testContext(t)
	finishedRun(ctx, t, l, "R1")
	finishedRun(ctx, t, l, "R2")
	exp, err := l.Export(ctx, filepath.Join(t.TempDir(), "a.orbit-archive.gz"), ExportSelection{Runs: []string{"R1"}})
	if err != nil {
		t.Fatal(err)
	}
	d := exp.Removal([]string{"R1"}, nil)
	d.Version, d.Subjects = 0, []string{RunFilter("R1")}
	if _, err := l.Remove(ctx, d); err != nil {
		t.Fatal(err)
	}
	recs, err := l.Removals(ctx)
	if err != nil || len(recs) != 1 || recs[0].Version != 0 || len(recs[0].Filters()) != 1 {
		t.Fatalf("records %+v (%v)", recs, err)
	}
	left, err := l.Read(ctx, FollowOptions{Filters: []string{RunFilter("R1")}})
	if err != nil || len(left) != 0 {
		t.Fatalf("read %d events of the removed run (%v)", len(left), err)
	}
	audit, err := l.Audit(ctx)
	if err != nil || len(audit.Problems) != 0 || audit.Removed != 5 {
		t.Fatalf("audit: %v %v (removed %d)", err, audit.Problems, audit.Removed)
	}
	removed, err := l.removed(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !removed.copyOf(RunFilter("R1")[:len(RunFilter("R1"))-1]+"run.finished", time.Now().Add(-time.Hour)) {
		t.Error("a late copy of the removed run is not recognised")
	}
}
