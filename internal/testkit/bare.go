package testkit

import (
	"sync"
	"testing"
	"time"
)

// BenchAgainstBare times f against bare, one at a time and 16 at once,
// alternating within each of b.N rounds, and reports each's milliseconds
// and their ratios, f's metrics under name: what Orbit adds to starting a
// program over the bare start of the same program, measured in the same
// run.
func BenchAgainstBare(b *testing.B, name string, f, bare func()) {
	b.Helper()
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
		one += timed(1, f)
		oneBare += timed(1, bare)
		many += timed(16, f)
		manyBare += timed(16, bare)
	}
	n := float64(b.N)
	b.ReportMetric(one.Seconds()*1e3/n, name+"-ms")
	b.ReportMetric(oneBare.Seconds()*1e3/n, "bare-ms")
	b.ReportMetric(one.Seconds()/oneBare.Seconds(), name+"/bare(goal≤1.2)")
	b.ReportMetric(many.Seconds()*1e3/n/16, name+"-16-ms")
	b.ReportMetric(manyBare.Seconds()*1e3/n/16, "bare-16-ms")
	b.ReportMetric(many.Seconds()/manyBare.Seconds(), name+"/bare-16")
}
