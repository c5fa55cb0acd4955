package main_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

// appendJob has three shell steps that each append a line to lines.txt; the
// second sleeps after writing and the third before (having noted that it
// began), so the engine can be killed while a step is running.
const appendJob = `
schemaVersion: 2
kind: Job
metadata: {name: appender}
spec:
  steps:
    - id: one
      spec: {type: shell, program: sh, args: ["-c", "echo one >> lines.txt"], allowed_programs: [sh]}
    - id: two
      spec: {type: shell, program: sh, args: ["-c", "echo two >> lines.txt; sleep 2"], allowed_programs: [sh]}
    - id: three
      spec: {type: shell, program: sh, args: ["-c", "echo began-three >> lines.txt; sleep 2; echo three >> lines.txt"], allowed_programs: [sh]}
`

// serve starts `orbit serve` as a child process and waits until it serves.
func serve(t *testing.T, p *testkit.Project) *exec.Cmd {
	t.Helper()
	return serveWith(t, p, "--listen", "127.0.0.1:0")
}

// serveWith is serve with the flags of orbit serve given: none listens at
// serve.listen.
func serveWith(t *testing.T, p *testkit.Project, flags ...string) *exec.Cmd {
	t.Helper()
	cmd := p.Command(append([]string{"serve"}, flags...)...)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		signalled := false
		for sc.Scan() {
			if !signalled && strings.Contains(sc.Text(), "engine running") {
				close(ready)
				signalled = true
			}
		}
	}()
	select {
	case <-ready:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("orbit serve did not start")
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd
}

// serveToFailpoint starts an engine armed to crash at the failpoint
// point (ORBIT_FAILPOINT, perhaps with its hit: "name@5"), set for that
// engine alone: clients and the engines started after it run without it.
// The returned died waits until the engine has reached the point, that is
// until it was killed with SIGKILL, and fails the test otherwise.
func serveToFailpoint(t *testing.T, p *testkit.Project, point string) (died func()) {
	t.Helper()
	env := p.Env
	p.Env = append(slices.Clone(env), "ORBIT_FAILPOINT="+point)
	engine := serve(t, p)
	p.Env = env
	exited := make(chan struct{})
	go func() { _ = engine.Wait(); close(exited) }()
	return func() {
		t.Helper()
		select {
		case <-exited:
		case <-time.After(2 * time.Minute):
			t.Fatalf("the engine did not reach the failpoint %s", point)
		}
		status, ok := engine.ProcessState.Sys().(syscall.WaitStatus)
		require.True(t, ok && status.Signaled() && status.Signal() == syscall.SIGKILL,
			"the engine died at the failpoint %s (SIGKILL), not otherwise: %s", point, engine.ProcessState)
	}
}

// startedEngine runs the hello job, which starts the project's
// background engine, and returns the engine's pid.
func startedEngine(t *testing.T, p *testkit.Project) int {
	t.Helper()
	runJob(t, p, "hello")
	pid := p.EnginePID()
	require.NotZero(t, pid)
	return pid
}

// waitFor waits up to 30 s for cond, asking every 25 ms.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	waitWithin(t, what, 30*time.Second, 25*time.Millisecond, cond)
}

// waitWithin asks cond every so often until it holds, and fails the test
// naming what it waited for when it has not within the bound.
func waitWithin(t *testing.T, what string, within, every time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(every)
	}
}

func readLines(t *testing.T, path string) []string {
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	return strings.Fields(string(data))
}

func count(lines []string, s string) int {
	n := 0
	for _, l := range lines {
		if l == s {
			n++
		}
	}
	return n
}

// TestKilledEngineResumesWithoutRepeatingFinishedSteps SIGKILLs the engine
// twice in a three-step job — once while step two runs, once while step
// three runs — and restarts it each time. Steps that had finished are never
// run again; the step the kill interrupted runs again, and its redelivery is
// on record: under step protocol 5 a first execution on an embedded store
// has no activity.started, and each repeat has one, redelivered (its
// command redelivered, or, lost with the engine, sent again from the
// log).
func TestKilledEngineResumesWithoutRepeatingFinishedSteps(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	p.WriteFile(".orbit/jobs/appender.yaml", appendJob)
	lines := filepath.Join(p.Root, "lines.txt")

	engine := serve(t, p)
	runID := runJob(t, p, "appender", "--detach")

	waitFor(t, "step two to write", func() bool { return count(readLines(t, lines), "two") == 1 })
	killEngine(t, engine)

	engine = serve(t, p)
	waitFor(t, "step three to start", func() bool { return count(readLines(t, lines), "began-three") == 1 })
	killEngine(t, engine)

	serve(t, p)
	waitFor(t, "the run to finish", func() bool { return events.Terminal(runView(t, p, runID).State) })

	v := runView(t, p, runID)
	assert.Equal(t, events.StateSuccess, v.State)
	got := readLines(t, lines)
	assert.Equal(t, 1, count(got, "one"), "step one finished before the first kill: %v", got)
	assert.GreaterOrEqual(t, count(got, "two"), 1, "%v", got)
	assert.LessOrEqual(t, count(got, "two"), 2, "%v", got)
	assert.Equal(t, 1, count(got, "three"), "step three wrote only after its sleep: %v", got)
	assert.Equal(t, 2, count(got, "began-three"), "step three began again after the kill: %v", got)
	assert.Equal(t, "three", got[len(got)-1])

	// Step two was interrupted: it ran again, and the repeat is on
	// record. Step one never ran twice.
	deliveries := map[string]int{}
	for _, ev := range runEvents(t, p, runID, "--type", events.ActivityStarted) {
		var d events.ActivityStartedData
		require.NoError(t, ev.Decode(&d))
		assert.True(t, d.Redelivered, "step %s: an execution after a kill is a possible repeat", ev.StepKey)
		deliveries[ev.StepKey]++
	}
	assert.Equal(t, 0, deliveries["one"])
	assert.Equal(t, count(got, "two")-1, deliveries["two"])
	assert.Equal(t, 1, deliveries["three"])
	resumed := runEvents(t, p, runID, "--type", events.RunResumed)
	assert.Len(t, resumed, 2)

	r := p.Orbit("replay", "--verify")
	assert.Equal(t, 0, r.Code, r.String())
}

// leaverJob's step, on its first execution, leaves a background child in
// its process group and a daemon in a session of its own, then waits; on
// the next it succeeds at once.
const leaverJob = `
schemaVersion: 2
kind: Job
metadata: {name: leaver}
spec:
  steps:
    - id: leave
      spec:
        type: shell
        program: sh
        args: ["-c", "if [ -e started ]; then exit 0; fi; touch started; sleep 300 & echo $! > child.pid; setsid sleep 300 > /dev/null 2>&1 & echo $! > daemon.pid; wait"]
        allowed_programs: [sh]
`

// TestAKilledEnginesLeftoversDieBeforeItsStepRunsAgain: SIGKILL takes an
// engine and, by Pdeathsig, the leader of the step's process group, but not
// what that started. The next engine on the root kills those before the
// step runs again.
func TestAKilledEnginesLeftoversDieBeforeItsStepRunsAgain(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	p.WriteFile(".orbit/jobs/leaver.yaml", leaverJob)
	pidIn := func(name string) int {
		data, err := os.ReadFile(filepath.Join(p.Root, name))
		require.NoError(t, err)
		pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
		require.NoError(t, err)
		t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
		return pid
	}

	engine := serve(t, p)
	runID := runJob(t, p, "leaver", "--detach")
	waitFor(t, "the step to start its daemon", func() bool {
		data, err := os.ReadFile(filepath.Join(p.Root, "daemon.pid"))
		return err == nil && len(data) > 0
	})
	child, daemon := pidIn("child.pid"), pidIn("daemon.pid")
	killEngine(t, engine)
	time.Sleep(200 * time.Millisecond)
	require.True(t, testkit.Runs(child), "the background child outlives the engine")
	require.True(t, testkit.Runs(daemon), "the daemon outlives the engine")

	serve(t, p)
	waitFor(t, "the run to finish", func() bool { return events.Terminal(runView(t, p, runID).State) })
	assert.Equal(t, events.StateSuccess, runView(t, p, runID).State)
	assert.False(t, testkit.Runs(child), "the background child was killed")
	assert.False(t, testkit.Runs(daemon), "the daemon was killed")
}

// TestAnEngineAStepStartsOutlivesTheStep: a step that runs orbit on
// another project starts that project's engine, which serves whatever
// comes later; killing the step's processes at its end spares it.
func TestAnEngineAStepStartsOutlivesTheStep(t *testing.T) {
	t.Parallel()
	p, other := testkit.NewProject(t), testkit.NewProject(t)
	p.WriteFile(".orbit/jobs/nested.yaml", fmt.Sprintf(`
schemaVersion: 2
kind: Job
metadata: {name: nested}
spec:
  steps:
    - id: other
      spec: {type: shell, program: %q, args: ["--root", %q, "job", "run", "hello"], allowed_programs: [%q]}
`, p.Bin, other.Root, p.Bin))
	r := p.Orbit("job", "run", "nested")
	require.Equal(t, 0, r.Code, r.String())
	pid := other.EnginePID()
	require.NotZero(t, pid)
	time.Sleep(300 * time.Millisecond)
	assert.True(t, testkit.Runs(pid), "the other project's engine runs on")
	r = other.Orbit("run", "history")
	assert.Equal(t, 0, r.Code, r.String())
	assert.Equal(t, pid, other.EnginePID(), "and serves the next command")
}
