package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/agent"
)

func shellContext(t *testing.T, programs ...string) *agent.ToolContext {
	t.Helper()
	return &agent.ToolContext{Workspace: t.TempDir(), Profile: agent.DefaultProfile, AllowedPrograms: programs}
}

func TestShellExecArgvIsNotResplit(t *testing.T) {
	t.Parallel()
	tc := shellContext(t, "printf")
	out, err := callBuiltin(t, tc, "shell.exec", map[string]any{
		"program": "printf",
		"args":    []string{"[%s]\n", "a b; touch pwned", "$HOME", "*"},
	})
	require.NoError(t, err)
	assert.Equal(t, "exit code 0\n--- stdout ---\n[a b; touch pwned]\n[$HOME]\n[*]\n--- stderr ---\n", out)
	assert.NoFileExists(t, filepath.Join(tc.Workspace, "pwned"))
}

func TestShellExecRunsInWorkspace(t *testing.T) {
	t.Parallel()
	tc := shellContext(t, "pwd", "env")
	out, err := callBuiltin(t, tc, "shell.exec", map[string]any{"program": "pwd"})
	require.NoError(t, err)
	ws, err := filepath.EvalSymlinks(tc.Workspace)
	require.NoError(t, err)
	assert.Equal(t, "exit code 0\n--- stdout ---\n"+ws+"\n--- stderr ---\n", out)

	tc.Env = []string{"ORBIT_TOOL_TEST=1"}
	out, err = callBuiltin(t, tc, "shell.exec", map[string]any{"program": "env"})
	require.NoError(t, err)
	assert.Regexp(t, `^exit code 0\n--- stdout ---\nORBIT_TOOL_TEST=1\nORBIT_PROCESS_TAG=[0-9a-f]+\n--- stderr ---\n$`, out,
		"the environment given, and the mark every program gets")
}

func TestShellExecNonZeroExitIsAResult(t *testing.T) {
	t.Parallel()
	tc := shellContext(t, "sh")
	out, err := callBuiltin(t, tc, "shell.exec", map[string]any{
		"program": "sh",
		"args":    []string{"-c", "echo out; printf err >&2; exit 3"},
	})
	require.NoError(t, err)
	assert.Equal(t, "exit code 3\n--- stdout ---\nout\n--- stderr ---\nerr\n", out)

	out, err = callBuiltin(t, tc, "shell.exec", map[string]any{"program": "sh", "args": []string{"-c", "kill -9 $$"}})
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(out, "killed by signal: killed\n"), out)
}

func TestShellExecDeniesProgramsOutsideAllowlist(t *testing.T) {
	t.Parallel()
	tc := shellContext(t, "go", "git")
	for _, program := range []string{"touch", "/usr/bin/touch", "git ", "sh"} {
		out, err := callBuiltin(t, tc, "shell.exec", map[string]any{"program": program, "args": []string{"created"}})
		var denied *agent.DeniedError
		if assert.ErrorAs(t, err, &denied, program) {
			assert.ErrorIs(t, err, agent.ErrDenied)
			assert.Equal(t, "shell.exec", denied.Tool)
			assert.Equal(t, fmt.Sprintf("program %q is not in the allowlist [go, git]", program), denied.Reason)
		}
		assert.Empty(t, out)
	}
	assert.NoFileExists(t, filepath.Join(tc.Workspace, "created"))

	_, err := callBuiltin(t, &agent.ToolContext{Workspace: tc.Workspace}, "shell.exec", map[string]any{"program": "true"})
	assert.ErrorIs(t, err, agent.ErrDenied)
}

func TestShellExecTimeoutKillsProcessGroup(t *testing.T) {
	t.Parallel()
	tc := shellContext(t, "sh")
	start := time.Now()
	out, err := callBuiltin(t, tc, "shell.exec", map[string]any{
		"program":         "sh",
		"args":            []string{"-c", "sleep 300 & echo $! > child.pid; echo started; wait"},
		"timeout_seconds": 1,
	})
	require.Error(t, err)
	assert.NotErrorIs(t, err, agent.ErrDenied)
	assert.Empty(t, out)
	assert.Contains(t, err.Error(), "sh timed out after 1s; its process group was killed")
	assert.Contains(t, err.Error(), "started")
	assert.Less(t, time.Since(start), 10*time.Second)
	assertProcessGone(t, readPID(t, filepath.Join(tc.Workspace, "child.pid")))
}

func TestShellExecKillsLeftoverChildren(t *testing.T) {
	t.Parallel()
	tc := shellContext(t, "sh")
	out, err := callBuiltin(t, tc, "shell.exec", map[string]any{
		"program": "sh",
		"args":    []string{"-c", "sleep 300 & echo $! > child.pid"},
	})
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(out, "exit code 0\n"), out)
	assertProcessGone(t, readPID(t, filepath.Join(tc.Workspace, "child.pid")))
}

func TestShellExecStopsWithContext(t *testing.T) {
	t.Parallel()
	tc := shellContext(t, "sleep")
	tool, _ := agent.Builtin("shell.exec")
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := tool.Call(ctx, tc, json.RawMessage(`{"program":"sleep","args":["300"]}`))
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Less(t, time.Since(start), 10*time.Second)
}

func TestShellExecTimeoutBounds(t *testing.T) {
	t.Parallel()
	tc := shellContext(t, "true")
	for _, secs := range []int{-1, 601} {
		_, err := callBuiltin(t, tc, "shell.exec", map[string]any{"program": "true", "timeout_seconds": secs})
		assert.ErrorContains(t, err, "timeout_seconds must be between 1 and 600")
		assert.NotErrorIs(t, err, agent.ErrDenied)
	}
	_, err := callBuiltin(t, tc, "shell.exec", map[string]any{"program": "true", "timeout_seconds": 600})
	assert.NoError(t, err)
}

func TestShellExecOutputIsCapped(t *testing.T) {
	t.Parallel()
	tc := shellContext(t, "sh")
	out, err := callBuiltin(t, tc, "shell.exec", map[string]any{
		"program": "sh",
		"args":    []string{"-c", `echo first; head -c 200000 /dev/zero | tr '\0' a; echo; echo last; echo done >&2`},
	})
	require.NoError(t, err)
	assert.LessOrEqual(t, len(out), 64<<10)
	assert.Contains(t, out, "[truncated, 200012 bytes total;")
	assert.True(t, strings.HasPrefix(out, "exit code 0\n--- stdout ---\nfirst\naaaa"), out[:40])
	assert.True(t, strings.HasSuffix(out, "aaaa\nlast\n--- stderr ---\ndone\n"), out[len(out)-60:])
}

func TestShellExecStartFailureIsAToolError(t *testing.T) {
	t.Parallel()
	tc := shellContext(t, "orbit-no-such-program")
	_, err := callBuiltin(t, tc, "shell.exec", map[string]any{"program": "orbit-no-such-program"})
	require.Error(t, err)
	assert.NotErrorIs(t, err, agent.ErrDenied)
	assert.Contains(t, err.Error(), "starting orbit-no-such-program")
}

func readPID(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	return pid
}

// assertProcessGone waits a little for pid to be dead: gone, or a zombie
// that nobody has reaped yet.
func assertProcessGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			return
		}
		if stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
			// pid (comm) state …: comm may hold spaces, the state follows
			// the last ')'.
			if i := strings.LastIndexByte(string(stat), ')'); i >= 0 && strings.HasPrefix(string(stat[i+1:]), " Z") {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d is still running", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
