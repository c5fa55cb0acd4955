package bench

import (
	"context"
	"fmt"
	"os/exec"
	"testing"
	"time"

	"github.com/orbitrun/orbit/activity"
	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/executor"
)

// BenchmarkShellJob runs a job of 200 `shell` steps that each run
// `/bin/echo` and the same job of `deterministic` echo steps, on one
// engine, alternating, and between them forks `/bin/echo` 200 times bare
// (exec.Command's Run). What a shell step costs over a deterministic one
// (shell-ms − det-ms, per step) against the bare fork it holds is the
// shell step's overhead end to end (goal ≤ 1.2×, issue 29; it also
// carries the step's shell.exited event, which the deterministic step
// does not write).
func BenchmarkShellJob(b *testing.B) {
	const steps = 200
	shell, det := stepJob(b, "shell", steps), echoJob(b, steps)
	for _, durability := range durabilities {
		b.Run(durability, func(b *testing.B) {
			engineLog, _ := openLog(b, durability)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			orch := executor.NewOrchestrator(executor.Config{Log: engineLog, Root: b.TempDir()})
			worker := activity.NewWorker(activity.WorkerConfig{Log: engineLog})
			go func() { _ = worker.Run(ctx) }()
			go func() { _ = orch.Run(ctx) }()
			run := func(job *assets.Job) time.Duration {
				req, err := executor.NewRunRequest(job, nil, "bench")
				if err != nil {
					b.Fatal(err)
				}
				feed, err := engineLog.Follow(ctx, events.FollowOptions{Filters: []string{
					events.EventSubject(events.AggregateRun, req.RunID, events.RunFinished)}})
				if err != nil {
					b.Fatal(err)
				}
				defer feed.Stop()
				start := time.Now()
				if err := executor.Submit(ctx, engineLog, req); err != nil {
					b.Fatal(err)
				}
				ev := <-feed.Events()
				var fin events.RunFinishedData
				if err := ev.Decode(&fin); err != nil || fin.State != events.StateSuccess {
					b.Fatalf("run %s: %s %v", req.RunID, fin.State, err)
				}
				return time.Since(start)
			}
			bare := func() time.Duration {
				start := time.Now()
				for range steps {
					if err := exec.Command("/bin/echo", "hi").Run(); err != nil {
						b.Fatal(err)
					}
				}
				return time.Since(start)
			}
			run(shell)
			run(det)
			var shellTime, detTime, bareTime time.Duration
			b.ResetTimer()
			for range b.N {
				shellTime += run(shell)
				bareTime += bare()
				detTime += run(det)
			}
			b.StopTimer()
			per := float64(b.N * steps)
			extra := (shellTime - detTime).Seconds() * 1e3 / per
			fork := bareTime.Seconds() * 1e3 / per
			b.ReportMetric(shellTime.Seconds()*1e3/float64(b.N), "shell-job-ms")
			b.ReportMetric(detTime.Seconds()*1e3/float64(b.N), "det-job-ms")
			b.ReportMetric(extra, "shell-extra-ms/step")
			b.ReportMetric(fork, "fork-ms")
			b.ReportMetric(extra/fork, "extra/fork(goal≤1.2)")
		})
	}
}

// stepJob is a job of n steps that each run /bin/echo as a step of type
// shell.
func stepJob(b *testing.B, name string, n int) *assets.Job {
	b.Helper()
	yaml := "schemaVersion: 2\nkind: Job\nmetadata: {name: " + name + "}\nspec:\n  steps:\n"
	for i := range n {
		yaml += fmt.Sprintf("    - id: s%d\n      spec: {type: shell, program: /bin/echo, args: [\"%d\"], allowed_programs: [/bin/echo]}\n", i, i)
	}
	job, err := assets.ParseJob(name+".yaml", []byte(yaml), nil)
	if err != nil {
		b.Fatal(err)
	}
	return job
}
