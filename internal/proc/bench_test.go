package proc

import (
	"context"
	"os/exec"
	"sync"
	"testing"
	"time"
)

// BenchmarkStartWait runs /bin/true as Orbit runs every program (Start,
// then Wait: its own group, its mark, the sweep for what left the group)
// and bare (exec.Command's Run: fork, exec, wait), alternating, one at a
// time and 16 at once, and reports each and their ratio, the overhead of
// a program's way in and out (goal ≤ 1.2×).
func BenchmarkStartWait(b *testing.B) {
	ctx := context.Background()
	orbit := func() {
		g, err := Start(ctx, exec.Command("/bin/true"))
		if err != nil {
			b.Fatal(err)
		}
		if r := g.Wait(ctx, time.Minute, time.Second); r.ExitCode != 0 {
			b.Fatalf("exit %d: %v", r.ExitCode, r.Err)
		}
	}
	bare := func() {
		if err := exec.Command("/bin/true").Run(); err != nil {
			b.Fatal(err)
		}
	}
	timed := func(n int, f func()) time.Duration {
		start := time.Now()
		var wg sync.WaitGroup
		for range n {
			wg.Go(f)
		}
		wg.Wait()
		return time.Since(start)
	}
	var one, oneBare, many, manyBare time.Duration
	for range b.N {
		one += timed(1, orbit)
		oneBare += timed(1, bare)
		many += timed(16, orbit)
		manyBare += timed(16, bare)
	}
	n := float64(b.N)
	b.ReportMetric(one.Seconds()*1e3/n, "orbit-ms")
	b.ReportMetric(oneBare.Seconds()*1e3/n, "bare-ms")
	b.ReportMetric(one.Seconds()/oneBare.Seconds(), "orbit/bare(goal≤1.2)")
	b.ReportMetric(many.Seconds()*1e3/n/16, "orbit-16-ms")
	b.ReportMetric(manyBare.Seconds()*1e3/n/16, "bare-16-ms")
	b.ReportMetric(many.Seconds()/manyBare.Seconds(), "orbit/bare-16")
}
