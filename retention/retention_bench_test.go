package retention_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/projector"
	"github.com/orbitrun/orbit/retention"
)

// BenchmarkRetention100kRuns: a signed log of 100,000 finished trivial
// runs (run.requested, run.started, run.finished; ten jobs), appended
// directly through the group commit, and views folded from it; then one
// retention pass that keeps 1,000 runs per job, so removes 90% of them.
// It reports the log's size (the stream's bytes) and a rebuild's time
// (projector.Rebuild from sequence 1 into a fresh file) before and after,
// and their ratios, with the pass's own time (export, records, purges,
// the views rebuilt and snapshotted), and the same two figures of a log
// that only ever held the retained runs, which bound the log after the
// pass. After the pass, audit and replay --verify find nothing, the views
// hold the retained runs, and the archive verifies and folds into views
// of every removed run (archive-replay-s). Run it with -benchtime=1x: one
// round builds the whole log. docs/benchmarks.md has the numbers.
func BenchmarkRetention100kRuns(b *testing.B) {
	const runs, jobs, keep = 100_000, 10, 1_000
	for range b.N {
		b.StopTimer()
		dir := b.TempDir()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
		l, err := events.Open(ctx, events.Config{StoreDir: filepath.Join(dir, "nats"), Redactor: &events.Redactor{},
			LogKeyFile: filepath.Join(dir, "creds", events.LogKeyFile), MakeLogKey: true})
		if err != nil {
			b.Fatal(err)
		}
		appendRuns(ctx, b, l, runs, jobs)
		views, err := projector.Open(ctx, projector.Config{Path: filepath.Join(dir, "views.db"), Source: l, SnapshotEvery: -1})
		if err != nil {
			b.Fatal(err)
		}
		runCtx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); _ = views.Run(runCtx) }()
		last, err := l.LastSeq(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if err := views.WaitFor(ctx, last); err != nil {
			b.Fatal(err)
		}
		bytesBefore, rebuildBefore := measure(ctx, b, l, dir, "before")

		c := retention.New(retention.Config{Log: l, Views: views, Root: dir,
			Policy: func() assets.RetentionConfig {
				return assets.RetentionConfig{Runs: assets.RunRetention{KeepPerJob: keep}}
			}})
		b.StartTimer()
		began := time.Now()
		rep, err := c.Collect(ctx, false)
		took := time.Since(began)
		b.StopTimer()
		if err != nil {
			b.Fatal(err)
		}
		if len(rep.Runs) != runs-jobs*keep {
			b.Fatalf("removed %d runs, want %d", len(rep.Runs), runs-jobs*keep)
		}
		bytesAfter, rebuildAfter := measure(ctx, b, l, dir, "after")
		audit, err := l.Audit(ctx)
		if err != nil || len(audit.Problems) > 0 {
			b.Fatalf("audit after the pass: %v %v", err, audit.Problems)
		}
		verify, err := views.Replay(ctx, true)
		if err != nil || verify.TotalDifferences > 0 {
			b.Fatalf("replay --verify after the pass: %v %v", err, verify.Differences)
		}
		if n, err := views.CountRuns(ctx, projector.RunFilter{}); err != nil || n != jobs*keep {
			b.Fatalf("the views hold %d runs after the pass (%v), want the %d kept", n, err, jobs*keep)
		}
		replayArchive := archived(ctx, b, &rep, filepath.Join(dir, "creds", events.LogKeyFile), dir)
		b.ReportMetric(float64(bytesBefore)/1e6, "log-MB-before")
		b.ReportMetric(float64(bytesAfter)/1e6, "log-MB-after")
		b.ReportMetric(float64(bytesAfter)/float64(bytesBefore), "log-size-ratio")
		b.ReportMetric(rebuildBefore.Seconds(), "rebuild-s-before")
		b.ReportMetric(rebuildAfter.Seconds(), "rebuild-s-after")
		b.ReportMetric(rebuildAfter.Seconds()/rebuildBefore.Seconds(), "rebuild-ratio")
		b.ReportMetric(took.Seconds(), "collect-s")
		b.ReportMetric(float64(len(rep.Records)), "records")
		b.ReportMetric(replayArchive.Seconds(), "archive-replay-s")
		stop()
		<-done
		views.Close()
		l.Close()

		// A log that only ever held the retained runs, measured alike:
		// what the log after the pass is bounded by.
		only := filepath.Join(dir, "only")
		l, err = events.Open(ctx, events.Config{StoreDir: filepath.Join(only, "nats"), Redactor: &events.Redactor{},
			LogKeyFile: filepath.Join(only, "creds", events.LogKeyFile), MakeLogKey: true})
		if err != nil {
			b.Fatal(err)
		}
		appendRuns(ctx, b, l, jobs*keep, jobs)
		bytesOnly, rebuildOnly := measure(ctx, b, l, only, "only")
		l.Close()
		b.ReportMetric(float64(bytesOnly)/1e6, "log-MB-retained-only")
		b.ReportMetric(rebuildOnly.Seconds(), "rebuild-s-retained-only")
		b.ReportMetric(float64(bytesAfter)/float64(bytesOnly), "log-size-after/retained-only")
		b.ReportMetric(rebuildAfter.Seconds()/rebuildOnly.Seconds(), "rebuild-after/retained-only")
		cancel()
	}
}

// archived checks the pass's archive: it verifies against the log's key
// (orbit audit --archive) and folds into views that hold every removed
// run, finished as it was (orbit replay --from-archive). It returns how
// long the fold took.
func archived(ctx context.Context, b *testing.B, rep *retention.Report, key, dir string) time.Duration {
	b.Helper()
	a, err := events.ReadArchive(rep.Archive)
	if err != nil {
		b.Fatal(err)
	}
	if audit, err := events.AuditArchive(key, a); err != nil || len(audit.Problems) > 0 {
		b.Fatalf("audit --archive: %v %v", err, audit.Problems)
	}
	src, err := events.NewArchiveSource(key, a)
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(dir, "archived.db")
	began := time.Now()
	if err := projector.Rebuild(ctx, src, path, 0); err != nil {
		b.Fatal(err)
	}
	took := time.Since(began)
	views, err := projector.Open(ctx, projector.Config{Path: path, Source: src})
	if err != nil {
		b.Fatal(err)
	}
	defer views.Close()
	held, err := views.Runs(ctx, projector.RunFilter{})
	if err != nil {
		b.Fatal(err)
	}
	state := make(map[string]string, len(held))
	for _, v := range held {
		state[v.ID] = v.State
	}
	for _, id := range rep.Runs {
		if state[id] != events.StateSuccess {
			b.Fatalf("run %s is %q in the archive's views, want success", id, state[id])
		}
	}
	if len(held) != len(rep.Runs) {
		b.Fatalf("the archive's views hold %d runs, want the %d removed", len(held), len(rep.Runs))
	}
	return took
}

// appendRuns appends n trivial finished runs of jobs jobs, a few thousand
// appends in flight at once so that the group commit stores them
// together.
func appendRuns(ctx context.Context, b *testing.B, l *events.Log, n, jobs int) {
	b.Helper()
	var pending []*events.PendingAppend
	flush := func() {
		for _, p := range pending {
			if _, err := p.Wait(ctx); err != nil {
				b.Fatal(err)
			}
		}
		pending = pending[:0]
	}
	for i := range n {
		id, job := events.NewID(), fmt.Sprintf("j%d", i%jobs)
		for _, e := range []struct {
			ev      events.Event
			payload any
		}{
			{events.Event{Type: events.RunRequested, ID: events.DecisionID(events.RunRequested, id)}, events.RunRequestedData{JobName: job}},
			{events.Event{Type: events.RunStarted}, events.RunStartedData{}},
			{events.Event{Type: events.RunFinished, ID: events.RunFinishedID(id, 0)}, events.RunFinishedData{State: events.StateSuccess}},
		} {
			e.ev.RunID, e.ev.Job = id, job
			p, err := l.AppendAsync(ctx, e.ev, e.payload)
			if err != nil {
				b.Fatal(err)
			}
			pending = append(pending, p)
		}
		if len(pending) >= 4096 {
			flush()
		}
	}
	flush()
}

// measure returns the event stream's bytes and how long a rebuild of the
// views from sequence 1 takes.
func measure(ctx context.Context, b *testing.B, l *events.Log, dir, name string) (uint64, time.Duration) {
	b.Helper()
	health, err := l.Health(ctx)
	if err != nil {
		b.Fatal(err)
	}
	var bytes uint64
	for _, h := range health {
		if h.Name == events.EventsStream {
			bytes = h.Bytes
		}
	}
	began := time.Now()
	if err := projector.Rebuild(ctx, l, filepath.Join(dir, "rebuilt-"+name+".db"), 0); err != nil {
		b.Fatal(err)
	}
	return bytes, time.Since(began)
}
