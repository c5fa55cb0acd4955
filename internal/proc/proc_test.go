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

// starts are the two ways a program is started and its leftovers found:
// in a cgroup of its own where this machine gives one, and by its mark.
var starts = map[string]func(context.Context, *exec.Cmd) (*proc.Group, error){
	"cgroup":      proc.Start,
	"marked only": proc.StartMarkedOnly,
}

func childPID(t *testing.T, dir string) int {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "child.pid"))
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	require.NoError(t, err)
	return pid
}

// startScript starts sh -c script through start, in a temp directory of
// its own (where the script may write child.pid), and returns the group
// and the directory.
func startScript(t *testing.T, start func(context.Context, *exec.Cmd) (*proc.Group, error), script string) (*proc.Group, string) {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = dir
	g, err := start(context.Background(), cmd)
	require.NoError(t, err)
	return g, dir
}

// daemonLeft waits for g, a script that starts a daemon, writes its pid to
// child.pid in dir and exits 0, and returns the daemon's pid. A daemon
// still running at the end of the test is killed then.
func daemonLeft(t *testing.T, g *proc.Group, dir string) int {
	t.Helper()
	r := g.Wait(context.Background(), 0, time.Second)
	assert.Equal(t, 0, r.ExitCode)
	pid := childPID(t, dir)
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
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
		g, err := proc.Start(context.Background(), exec.Command("sh", "-c", script))
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
	for name, start := range starts {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			g, dir := startScript(t, start, "trap '' TERM; sleep 60 & echo $! > child.pid; sleep 60")
			began := time.Now()
			r := g.Wait(context.Background(), 300*time.Millisecond, 300*time.Millisecond)
			assert.True(t, r.TimedOut)
			assert.Equal(t, "killed", r.Signal)
			assert.Less(t, time.Since(began), 3*time.Second)
			assert.True(t, testkit.WaitGone(childPID(t, dir), 3*time.Second))
		})
	}
}

func TestCancelAndLeftoversAreKilled(t *testing.T) {
	t.Parallel()
	for name, start := range starts {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			g, dir := startScript(t, start, "sleep 60 > /dev/null 2>&1 & echo $! > child.pid")
			assert.True(t, testkit.WaitGone(daemonLeft(t, g, dir), 3*time.Second), "a finished program's leftovers are killed")

			ctx, cancel := context.WithCancel(context.Background())
			sleeper, err := start(ctx, exec.Command("sleep", "60"))
			require.NoError(t, err)
			cancel()
			r := sleeper.Wait(ctx, 0, time.Second)
			assert.True(t, r.Stopped)
			assert.Equal(t, syscall.SIGTERM.String(), r.Signal)
		})
	}
}

func TestLastLine(t *testing.T) {
	t.Parallel()
	assert.Equal(t, ": boom", proc.LastLine([]byte("first\nboom\n\n")))
	assert.Equal(t, "", proc.LastLine([]byte("  \n")))
	assert.Len(t, proc.LastLine([]byte(strings.Repeat("x", 500))), 2+200+len("…"))
}

// TestLeftoversThatLeaveTheGroupAreKilled: a child that made itself a
// session of its own (as daemons do) is out of reach of the group kill,
// but it still carries its program's mark.
func TestLeftoversThatLeaveTheGroupAreKilled(t *testing.T) {
	t.Parallel()
	for name, start := range starts {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			g, dir := startScript(t, start, "setsid sleep 60 > /dev/null 2>&1 & echo $! > child.pid")
			pid := daemonLeft(t, g, dir)
			assert.True(t, testkit.WaitDead(pid, 3*time.Second), "the daemon is killed with its program")
		})
	}
}

// TestACgroupHoldsWhatClearsItsMark: a daemon that leaves the group and
// clears its environment carries no mark, but stays in its program's
// cgroup, which is emptied once it is killed.
func TestACgroupHoldsWhatClearsItsMark(t *testing.T) {
	t.Parallel()
	if proc.Cgroups() == "" {
		t.Skip("this machine gives the test no cgroup v2 to create cgroups in")
	}
	g, dir := startScript(t, proc.Start, "setsid env -i /bin/sleep 60 > /dev/null 2>&1 & echo $! > child.pid")
	cgroup := g.CgroupDir()
	require.DirExists(t, cgroup)
	pid := daemonLeft(t, g, dir)
	assert.True(t, testkit.WaitDead(pid, 3*time.Second), "the daemon is killed with its program")
	assert.Empty(t, cgroupProcs(t, cgroup), "the cgroup is removed or left empty for the next program")
}

// cgroupProcs is the process list of a cgroup, "" when it is empty or
// gone.
func cgroupProcs(t *testing.T, dir string) string {
	t.Helper()
	procs, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if os.IsNotExist(err) {
		return ""
	}
	require.NoError(t, err)
	return strings.TrimSpace(string(procs))
}

// TestProgramsReuseTheCgroupsOfEndedOnes: a program that ended and left
// nothing behind leaves its cgroup empty for the next, and a process keeps
// no more than MaxSpares of them however many programs ran at once. (Not
// parallel: the package's other tests hold cgroups of their own.)
func TestProgramsReuseTheCgroupsOfEndedOnes(t *testing.T) {
	if proc.Cgroups() == "" {
		t.Skip("this machine gives the test no cgroup v2 to create cgroups in")
	}
	ctx := context.Background()
	groups := make([]*proc.Group, 2*proc.MaxSpares)
	for i := range groups {
		g, err := proc.Start(ctx, exec.Command("sleep", "0.2"))
		require.NoError(t, err)
		groups[i] = g
	}
	used := map[string]bool{}
	for _, g := range groups {
		used[g.CgroupDir()] = true
		require.Zero(t, g.Wait(ctx, 0, time.Second).ExitCode)
	}
	require.Len(t, used, len(groups), "programs running at once have cgroups of their own")
	left, err := os.ReadDir(proc.Cgroups())
	require.NoError(t, err)
	kept := map[string]bool{}
	for _, e := range left {
		if dir := filepath.Join(proc.Cgroups(), e.Name()); e.IsDir() && used[dir] {
			kept[dir] = true
			assert.Empty(t, cgroupProcs(t, dir))
		}
	}
	assert.Len(t, kept, proc.MaxSpares, "the spares kept, the rest removed")

	g, err := proc.Start(ctx, exec.Command("true"))
	require.NoError(t, err)
	assert.True(t, kept[g.CgroupDir()], "the next program takes a spare: %s", g.CgroupDir())
	assert.Zero(t, g.Wait(ctx, 0, time.Second).ExitCode)
}

// TestAProcessThatDropsItsMarkOutlivesItsProgram: a daemon that keeps its
// environment but drops the mark left the program on purpose, as an
// engine that orbit starts for another root does, and is spared, in the
// cgroup or not; the daemon with no environment at all beside it is not.
func TestAProcessThatDropsItsMarkOutlivesItsProgram(t *testing.T) {
	t.Parallel()
	// The program ends once the daemon runs without the mark (its comm is
	// sleep's): before its exec it is a fork of sh, marked.
	g, dir := startScript(t, proc.Start, "setsid env -u "+proc.TagVar+" /bin/sleep 60 > /dev/null 2>&1 & echo $! > child.pid; "+
		"until grep -qx sleep /proc/$!/comm; do :; done")
	pid := daemonLeft(t, g, dir)
	assert.False(t, testkit.WaitDead(pid, 500*time.Millisecond), "the daemon that dropped its mark runs on")
}

// TestKillScopeKillsWhatRunsWithinIt starts, within one scope, a program
// with a background child and a daemon that left its group, and a program
// outside it. KillScope kills the first three and waits until none of them
// runs, though the leader stays a zombie (its parent, this test, does not
// reap it yet), and spares the fourth.
func TestKillScopeKillsWhatRunsWithinIt(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	scoped := proc.WithScope(proc.WithScope(context.Background(), proc.NewScope()), proc.NewScope())
	g, err := proc.Start(scoped, exec.Command("sleep", "60"))
	require.NoError(t, err)
	t.Cleanup(g.Kill)
	tag := tagOf(t, g.PID())
	outer := strings.Split(tag, "/")[0]

	// Marked as Start marks, but not reaped behind the test's back.
	// child.pid is written once every process of the shell's is forked.
	cmd := exec.Command("sh", "-c", "setsid sleep 60 > /dev/null 2>&1 & d=$!; sleep 60 & sleep 60 & echo $d > child.pid; wait")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), proc.TagVar+"="+tag)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, cmd.Start())
	leader := cmd.Process.Pid
	t.Cleanup(func() { _ = syscall.Kill(-leader, syscall.SIGKILL); _ = cmd.Wait() })
	other, err := proc.Start(context.Background(), exec.Command("sleep", "60"))
	require.NoError(t, err)
	t.Cleanup(other.Kill)
	// The shell creates the file before it writes the pid into it.
	require.Eventually(t, func() bool {
		data, err := os.ReadFile(filepath.Join(dir, "child.pid"))
		return err == nil && strings.HasSuffix(string(data), "\n")
	}, 5*time.Second, 5*time.Millisecond)
	daemon := childPID(t, dir)

	killed, gone := proc.KillScope(outer, 5*time.Second)
	assert.True(t, gone)
	assert.Equal(t, 5, killed, "the scoped sleep; sh, its two sleeps and the daemon")
	assert.False(t, testkit.Runs(daemon))
	assert.False(t, testkit.Runs(leader))
	assert.True(t, testkit.Runs(other.PID()), "a program outside the scope runs on")

	killed, gone = proc.KillScope(outer, time.Second)
	assert.True(t, gone, "what is gone is gone")
	assert.Zero(t, killed)
	killed, _ = proc.KillScope("", time.Second)
	assert.Zero(t, killed, "no scope is not every scope")
	assert.True(t, testkit.Runs(other.PID()))
}

// tagOf returns the mark of a program started within two scopes.
func tagOf(t *testing.T, pid int) string {
	t.Helper()
	// Until the child has exec'd, /proc shows the environment it forked
	// with: look again for a while.
	deadline := time.Now().Add(5 * time.Second)
	for {
		env, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "environ"))
		require.NoError(t, err)
		for _, kv := range strings.Split(string(env), "\x00") {
			if tag, ok := strings.CutPrefix(kv, proc.TagVar+"="); ok {
				require.Len(t, strings.Split(tag, "/"), 3, "outer scope, inner scope, program: %s", tag)
				return tag
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d carries no %s", pid, proc.TagVar)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
