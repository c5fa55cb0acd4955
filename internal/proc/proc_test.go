package proc_test

import (
	"context"
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

	"github.com/orbitrun/orbit/internal/proc"
	"github.com/orbitrun/orbit/internal/testkit"
)

func childPID(t *testing.T, dir string) int {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "child.pid"))
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	require.NoError(t, err)
	return pid
}

func TestExitCodesAndSignals(t *testing.T) {
	t.Parallel()
	for script, want := range map[string]proc.Result{
		"exit 0":        {ExitCode: 0},
		"exit 3":        {ExitCode: 3},
		"kill -9 $$":    {ExitCode: -1, Signal: "killed"},
		"kill -TERM $$": {ExitCode: -1, Signal: "terminated"},
	} {
		g, err := proc.Start(exec.Command("sh", "-c", script))
		require.NoError(t, err)
		r := g.Wait(context.Background(), 0, time.Second)
		assert.Equal(t, want.ExitCode, r.ExitCode, script)
		assert.Equal(t, want.Signal, r.Signal, script)
		assert.False(t, r.TimedOut || r.Stopped, script)
	}
}

// TestTimeoutStopsTheWholeGroup: a program that ignores SIGTERM and has a
// background child is killed after the grace period, child included.
func TestTimeoutStopsTheWholeGroup(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cmd := exec.Command("sh", "-c", "trap '' TERM; sleep 60 & echo $! > child.pid; sleep 60")
	cmd.Dir = dir
	g, err := proc.Start(cmd)
	require.NoError(t, err)
	began := time.Now()
	r := g.Wait(context.Background(), 300*time.Millisecond, 300*time.Millisecond)
	assert.True(t, r.TimedOut)
	assert.Equal(t, "killed", r.Signal)
	assert.Less(t, time.Since(began), 3*time.Second)
	assert.True(t, testkit.WaitGone(childPID(t, dir), 3*time.Second))
}

func TestCancelAndLeftoversAreKilled(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cmd := exec.Command("sh", "-c", "sleep 60 > /dev/null 2>&1 & echo $! > child.pid")
	cmd.Dir = dir
	g, err := proc.Start(cmd)
	require.NoError(t, err)
	r := g.Wait(context.Background(), 0, time.Second)
	assert.Equal(t, 0, r.ExitCode)
	assert.True(t, testkit.WaitGone(childPID(t, dir), 3*time.Second), "a finished program's leftovers are killed")

	ctx, cancel := context.WithCancel(context.Background())
	g, err = proc.Start(exec.Command("sleep", "60"))
	require.NoError(t, err)
	cancel()
	r = g.Wait(ctx, 0, time.Second)
	assert.True(t, r.Stopped)
	assert.Equal(t, syscall.SIGTERM.String(), r.Signal)
}

func TestLastLine(t *testing.T) {
	t.Parallel()
	assert.Equal(t, ": boom", proc.LastLine([]byte("first\nboom\n\n")))
	assert.Equal(t, "", proc.LastLine([]byte("  \n")))
	assert.Len(t, proc.LastLine([]byte(strings.Repeat("x", 500))), 2+200+len("…"))
}

// TestKillGroupWaitsUntilNothingRuns kills a group whose leader nobody
// reaps yet: KillGroup returns once every process of it has stopped
// running, the leader left a zombie.
func TestKillGroupWaitsUntilNothingRuns(t *testing.T) {
	t.Parallel()
	cmd := exec.Command("sh", "-c", "sleep 30 & sleep 30")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, cmd.Start())
	pgid := cmd.Process.Pid
	t.Cleanup(func() { _ = syscall.Kill(-pgid, syscall.SIGKILL); _ = cmd.Wait() })

	require.True(t, proc.KillGroup(pgid, 5*time.Second))
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pgid), "stat"))
	require.NoError(t, err, "the leader is not reaped yet")
	rest := string(stat[strings.LastIndexByte(string(stat), ')')+1:])
	assert.Equal(t, "Z", strings.Fields(rest)[0], "and it no longer runs")
	assert.True(t, proc.KillGroup(pgid, time.Second), "a group already gone is gone")
}
