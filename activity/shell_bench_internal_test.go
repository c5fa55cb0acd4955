package activity

import (
	"bytes"
	"context"
	"io"
	"os/exec"
	"slices"
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
			last: func(string, any) {},
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
	testkit.BenchAgainstBare(b, "step", step, bare)
}

// BenchmarkShellStepEnd stores a shell step's end on one log as the worker
// stores it (appendAll: shell.exited and step.finished sent together, then
// both awaited) and as it did before (shell.exited awaited, then
// step.finished), alternating, relaxed and strict: what one awaited
// append less is worth at every shell step's end. It reports medians: on
// a shared machine a few writes that wait for the disk would outweigh the
// rest in a mean.
func BenchmarkShellStepEnd(b *testing.B) {
	for _, durability := range []string{events.DurabilityRelaxed, events.DurabilityStrict} {
		b.Run(durability, func(b *testing.B) {
			log := testkit.StartLog(b, events.Config{Durability: durability})
			w := &Worker{cfg: WorkerConfig{Log: log}}
			ctx := context.Background()
			cmd := &interpreter.StepCommand{RunID: events.NewID(), StepKey: "echo", Attempt: 1}
			end := func() []endEvent {
				return []endEvent{
					{stepEvent(cmd, events.ShellExited, ""), events.ShellExitedData{Attempt: 1, Program: "/bin/echo", Args: []string{"hi"}}},
					{stepEvent(cmd, events.StepFinished, ""), events.StepFinishedData{Attempt: 1, State: events.StateSuccess,
						Output: map[string]any{"exit_code": 0, "stdout": "hi\n"}}},
				}
			}
			together := func() error { return w.appendAll(ctx, nil, end()) }
			apart := func() error {
				e := end()
				if _, err := log.Append(ctx, e[0].ev, e[0].payload); err != nil {
					return err
				}
				return w.appendAll(ctx, nil, e[1:])
			}
			timed := func(f func() error) time.Duration {
				start := time.Now()
				if err := f(); err != nil {
					b.Fatal(err)
				}
				return time.Since(start)
			}
			var inOne, inTwo []time.Duration
			for range b.N {
				inOne = append(inOne, timed(together))
				inTwo = append(inTwo, timed(apart))
			}
			median := func(d []time.Duration) float64 {
				slices.Sort(d)
				return d[len(d)/2].Seconds() * 1e6
			}
			b.ReportMetric(median(inOne), "together-p50-µs")
			b.ReportMetric(median(inTwo), "apart-p50-µs")
			b.ReportMetric(median(inOne)/median(inTwo), "together/apart")
		})
	}
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
