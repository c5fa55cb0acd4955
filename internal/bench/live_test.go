package bench

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/projector"
)

// BenchmarkLiveProjection measures the live projector: b.N step.finished
// events appended one at a time, each waited for in the views (WaitFor)
// before the next, as a caller that reads its own writes does: the batches
// are of one event, each its own bbolt transaction. The raw part is the
// same appends with nothing waiting for the views. It reports both per
// event, in wall and CPU time, and the ratio of the walls.
func BenchmarkLiveProjection(b *testing.B) {
	engineLog, _ := openLog(b, events.DurabilityRelaxed)
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	p, err := projector.Open(ctx, projector.Config{Path: filepath.Join(b.TempDir(), "views.db"), Source: engineLog})
	if err != nil {
		b.Fatal(err)
	}
	ran := make(chan error, 1)
	go func() { ran <- p.Run(ctx) }()
	b.Cleanup(func() {
		cancel()
		<-ran
		_ = p.Close()
	})
	appendEach := func(run string, n int, wait bool) (wall, cpu time.Duration) {
		start, startCPU := time.Now(), processCPU(b)
		for i := range n {
			ev, data := stepFinished(i)
			ev.RunID = run
			ev.ID = events.DecisionID(events.StepFinished, run, ev.StepKey, "1")
			res, err := engineLog.Append(ctx, ev, data)
			if err != nil {
				b.Fatal(err)
			}
			if wait {
				if err := p.WaitFor(ctx, res.Seq); err != nil {
					b.Fatal(err)
				}
			}
		}
		return time.Since(start), processCPU(b) - startCPU
	}
	b.ResetTimer()
	live, liveCPU := appendEach("live", b.N, true)
	raw, rawCPU := appendEach("raw", b.N, false)
	b.StopTimer()
	perEvent := func(d time.Duration) float64 { return d.Seconds() * 1000 / float64(b.N) }
	b.ReportMetric(perEvent(live), "live-ms/event")
	b.ReportMetric(perEvent(liveCPU), "live-cpu-ms/event")
	b.ReportMetric(perEvent(raw), "append-ms/event")
	b.ReportMetric(perEvent(rawCPU), "append-cpu-ms/event")
	b.ReportMetric(live.Seconds()/raw.Seconds(), "live/append")
}
