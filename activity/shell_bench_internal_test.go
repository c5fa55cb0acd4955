package activity

import (
	"bytes"
	"context"
	"io"
	"os/exec"
	"sync"
	"testing"
	"testing/iotest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/proc"
	"github.com/orbitrun/orbit/internal/testkit"
	"github.com/orbitrun/orbit/interpreter"
)

// BenchmarkShellStep runs `/bin/echo hi` as a worker runs one shell step
// (shellRun.run under a step's process scope: its checks, its environment,
// its process group and mark, its output captured and described, the
// sweep for what left the group; shell.exited built but not stored) and
// bare (exec.Command's Run: fork, exec, wait), alternating, one at a time
// and 16 at once, and reports each and their ratio: the overhead of a
// shell step over the fork it costs (goal ≤ 1.2×, issue 29).
func BenchmarkShellStep(b *testing.B) {
	log := testkit.StartLog(b, events.Config{})
	ctx := proc.WithScope(context.Background(), proc.NewScope())
	workspace := b.TempDir()
	step := func() {
		s := &shellRun{
			cmd: &interpreter.StepCommand{
				RunID: "run", StepKey: "echo", Attempt: 1, Workspace: workspace,
				Activity: assets.ActivitySpec{Type: assets.TypeShell, Program: "/bin/echo",
					Args: []string{"hi"}, AllowedPrograms: []string{"/bin/echo"}},
			},
			log:  log,
			emit: func(context.Context, string, any) error { return nil },
		}
		out, err := s.run(proc.WithScope(ctx, proc.NewScope()))
		if err != nil || out.(map[string]any)["stdout"] != "hi\n" {
			b.Fatalf("step: %v %v", out, err)
		}
	}
	bare := func() {
		if err := exec.Command("/bin/echo", "hi").Run(); err != nil {
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
		one += timed(1, step)
		oneBare += timed(1, bare)
		many += timed(16, step)
		manyBare += timed(16, bare)
	}
	n := float64(b.N)
	b.ReportMetric(one.Seconds()*1e3/n, "step-ms")
	b.ReportMetric(oneBare.Seconds()*1e3/n, "bare-ms")
	b.ReportMetric(one.Seconds()/oneBare.Seconds(), "step/bare(goal≤1.2)")
	b.ReportMetric(many.Seconds()*1e3/n/16, "step-16-ms")
	b.ReportMetric(manyBare.Seconds()*1e3/n/16, "bare-16-ms")
	b.ReportMetric(many.Seconds()/manyBare.Seconds(), "step/bare-16")
}

// TestCaptureKeepsTheFirstLimitBytesAndCountsAll reads a stream through
// capture's ReadFrom (the way exec copies a pipe into it) and through
// Write, in pieces that straddle the limit.
func TestCaptureKeepsTheFirstLimitBytesAndCountsAll(t *testing.T) {
	t.Parallel()
	data := bytes.Repeat([]byte("0123456789"), 2000)
	for _, limit := range []int{0, 1, 4096, 4097, 19999, 20000, 50000} {
		read := &capture{limit: limit}
		n, err := io.Copy(read, iotest.OneByteReader(bytes.NewReader(data[:7])))
		require.NoError(t, err)
		require.EqualValues(t, 7, n)
		n, err = io.Copy(read, bytes.NewReader(data[7:]))
		require.NoError(t, err)
		require.EqualValues(t, len(data)-7, n)
		written := &capture{limit: limit}
		_, _ = written.Write(data[:4099])
		_, _ = written.Write(data[4099:])
		for _, c := range []*capture{read, written} {
			assert.EqualValues(t, len(data), c.size, "limit %d", limit)
			assert.Equal(t, string(data[:min(limit, len(data))]), c.buf.String(), "limit %d", limit)
		}
	}
}
