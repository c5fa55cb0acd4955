package bench

import (
	"fmt"
	"os/exec"
	"testing"
	"time"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
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
			engine(b, engineLog)
			run := func(job *assets.Job) time.Duration {
				wall, _, hist := runJob(b, engineLog, job, nil)
				var fin events.RunFinishedData
				if err := hist[len(hist)-1].Decode(&fin); err != nil || fin.State != events.StateSuccess {
					b.Fatalf("run %s: %s %v", hist[0].RunID, fin.State, err)
				}
				return wall
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
