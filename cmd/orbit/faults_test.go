package main_test

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/engine"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

// withConfig replaces the engine section of a project's config.yaml.
func withConfig(t *testing.T, p *testkit.Project, engine string) {
	t.Helper()
	p.WriteFile(".orbit/config.yaml", "engine:\n"+engine)
}

// TestADeadLetterEndsACommandThatKeepsFailing: a step whose worker dies
// every time it runs it (a failpoint after the side effect) is started
// engine.max_deliveries times, then dead-lettered: the run fails, and
// nothing loops. Its first execution has no activity.started (step
// protocol 5 on an embedded store), so it runs max_deliveries + 1 times:
// the bound counts the starts on record, the repeats.
func TestADeadLetterEndsACommandThatKeepsFailing(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	withConfig(t, p, "  max_deliveries: 2\n")
	p.WriteFile(".orbit/jobs/poison.yaml", `
schemaVersion: 2
kind: Job
metadata: {name: poison}
spec:
  steps:
    - id: crash
      spec: {type: shell, program: sh, args: ["-c", "echo ran >> runs.txt"], allowed_programs: [sh]}
`)
	p.Env = append(p.Env, "ORBIT_FAILPOINT=worker-after-side-effect")
	engine := serve(t, p)
	runID := runJob(t, p, "poison", "--detach")
	// Each engine dies at the failpoint, until one dead-letters the
	// command and lives on.
	pid := engine.Process.Pid
	deadline := time.Now().Add(2 * time.Minute)
	for restarts := 0; !terminal(p, runID); time.Sleep(200 * time.Millisecond) {
		require.True(t, time.Now().Before(deadline), "the run never ended")
		if !testkit.Runs(pid) {
			restarts++
			require.Less(t, restarts, 5, "the command must be dead-lettered, not retried forever")
			pid = serveUntilDead(t, p).Process.Pid
		}
	}
	p.Env = p.Env[:len(p.Env)-1]
	v := runView(t, p, runID)
	assert.Equal(t, events.StateFailed, v.State)
	require.NotNil(t, v.Error)
	assert.Equal(t, events.KindDeadLetter, v.Error.Kind)
	assert.Contains(t, v.Error.Message, "started 2 times without finishing")
	assert.Len(t, runEvents(t, p, runID, "--type", events.StepDeadLettered), 1)
	runs, err := os.ReadFile(filepath.Join(p.Root, "runs.txt"))
	require.NoError(t, err)
	assert.Equal(t, 3, strings.Count(string(runs), "ran"))
	starts := runEvents(t, p, runID, "--type", events.ActivityStarted)
	assert.Len(t, starts, 2)
	for _, ev := range starts {
		var d events.ActivityStartedData
		require.NoError(t, ev.Decode(&d))
		assert.True(t, d.Redelivered)
	}
}

// serveUntilDead starts orbit serve and returns it; with a failpoint in the
// environment it may die by itself at any moment.
func serveUntilDead(t *testing.T, p *testkit.Project) *exec.Cmd {
	t.Helper()
	cmd := p.Command("serve", "--listen", "127.0.0.1:0")
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd
}

// terminal reports whether a run has finished, asking the engine that
// serves the root, if one does: it never starts one (an engine started
// with the failpoint would die in its turn).
func terminal(p *testkit.Project, runID string) bool {
	info, err := engine.ReadInfo(p.Root)
	if err != nil {
		return false
	}
	r := p.Orbit("--nats-url", info.URL, "run", "events", "--json", "--type", events.RunFinished, runID)
	return r.Code == 0 && strings.Contains(r.Stdout, events.RunFinished)
}

func readFinished(p *testkit.Project, runID string) (bool, error) {
	r := p.Orbit("run", "events", "--json", "--type", events.RunFinished, runID)
	if r.Code != 0 {
		return false, nil
	}
	return strings.Contains(r.Stdout, events.RunFinished), nil
}

// TestAStoppedWorkerIsFencedAndItsLateResultDropped runs two engines on one
// NATS server. Engine A starts a step; A is stopped (SIGSTOP) past the ack
// wait; engine B takes the step over — killing A's process group first, so
// that two copies never run at once — and finishes it. A, continued, finds
// its lease gone and records nothing.
func TestAStoppedWorkerIsFencedAndItsLateResultDropped(t *testing.T) {
	t.Parallel()
	srv := externalNATSServer(t)
	logFile := filepath.Join(t.TempDir(), "copies.log")
	job := `
schemaVersion: 2
kind: Job
metadata: {name: long}
spec:
  steps:
    - id: work
      spec:
        type: shell
        program: sh
        args: ["-c", "echo \"start $$\" >> ` + logFile + `; sleep 6; echo \"end $$\" >> ` + logFile + `"]
        allowed_programs: [sh]
`
	a, b := testkit.NewProject(t), testkit.NewProject(t)
	for _, p := range []*testkit.Project{a, b} {
		withConfig(t, p, "  ack_wait_seconds: 2\n")
		p.Env = append(p.Env, "ORBIT_NATS_URL="+srv.ClientURL())
		p.WriteFile(".orbit/jobs/long.yaml", job)
	}
	engineA := serve(t, a)
	runID := runJob(t, a, "long", "--detach")
	waitFor(t, "engine A to start the step", func() bool { return len(copies(t, logFile, "start")) == 1 })
	serve(t, b)
	require.NoError(t, engineA.Process.Signal(syscall.SIGSTOP))
	waitFor(t, "engine B to take the step over", func() bool { return len(copies(t, logFile, "start")) == 2 })
	first := copies(t, logFile, "start")[0]
	// A, stopped, cannot reap its child: killed, the child is a zombie
	// until A is continued.
	assert.False(t, testkit.Runs(first), "A's copy (pid %d) was killed before B's started", first)
	require.NoError(t, engineA.Process.Signal(syscall.SIGCONT))
	assert.True(t, testkit.WaitGone(first, 5*time.Second))

	waitFor(t, "the run to finish", func() bool {
		ok, _ := readFinished(b, runID)
		return ok
	})
	assert.Equal(t, []int{copies(t, logFile, "start")[1]}, copies(t, logFile, "end"), "only B's copy ran to its end")
	assert.Equal(t, events.StateSuccess, runView(t, b, runID).State)
	assert.Len(t, runEvents(t, b, runID, "--type", events.StepFinished), 1, "A's late result was dropped")
	starts := runEvents(t, b, runID, "--type", events.ActivityStarted)
	require.Len(t, starts, 2)
	var second events.ActivityStartedData
	require.NoError(t, starts[1].Decode(&second))
	assert.True(t, second.Redelivered)
}

// copies returns the pids a copies log records for a word.
func copies(t *testing.T, path, word string) []int {
	t.Helper()
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	defer f.Close()
	var pids []int
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 2 && fields[0] == word {
			pid, err := strconv.Atoi(fields[1])
			require.NoError(t, err)
			pids = append(pids, pid)
		}
	}
	return pids
}
