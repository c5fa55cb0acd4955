package gitops

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// holdingGitEnv names, in the process TestGitDiesWithTheEngine starts as
// its engine, the sleep the git it runs waits for.
const holdingGitEnv = "GITOPS_TEST_HOLDING_GIT"

// TestGitDiesWithTheEngine: a git the engine started is told to end
// (SIGTERM, so that it removes its lock files) when the engine dies, even
// by SIGKILL, instead of running on as an orphan beside the next engine's
// work on the same repository.
func TestGitDiesWithTheEngine(t *testing.T) {
	if sleep := os.Getenv(holdingGitEnv); sleep != "" {
		_, err := runGit(context.Background(), os.Getenv("GITOPS_TEST_DIR"), nil,
			call{args: []string{"-c", "alias.hold=!exec sleep " + sleep, "hold"}})
		fmt.Println(err)
		return
	}
	dir := t.TempDir()
	require.NoError(t, exec.Command("git", "init", "-q", dir).Run())
	sleep := fmt.Sprintf("300.%d", time.Now().UnixNano()%1e9)
	engine := exec.Command(os.Args[0], "-test.run=^TestGitDiesWithTheEngine$")
	engine.Env = append(os.Environ(), holdingGitEnv+"="+sleep, "GITOPS_TEST_DIR="+dir)
	require.NoError(t, engine.Start())

	var git, held int
	require.Eventually(t, func() bool {
		git, held = processOf([]byte("alias.hold=!exec sleep "+sleep)), processOf([]byte("sleep\x00"+sleep))
		return git != 0 && held != 0
	}, 30*time.Second, 20*time.Millisecond, "the engine's git and what it runs start")
	t.Cleanup(func() { _ = exec.Command("kill", "-9", fmt.Sprint(held)).Run() })

	require.NoError(t, engine.Process.Kill())
	_ = engine.Wait()
	require.Eventually(t, func() bool { return !alive(git) }, 10*time.Second, 20*time.Millisecond,
		"the killed engine's git ends")
}

// processOf is the pid of a process whose command line holds marker, or 0.
func processOf(marker []byte) int {
	cmdlines, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range cmdlines {
		b, err := os.ReadFile(f)
		if err == nil && bytes.Contains(b, marker) {
			var pid int
			if _, err := fmt.Sscanf(f, "/proc/%d/cmdline", &pid); err == nil && pid != os.Getpid() {
				return pid
			}
		}
	}
	return 0
}

// alive reports whether pid is a process that has not ended (a zombie
// has).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	_, rest, _ := bytes.Cut(b, []byte(") "))
	return len(rest) > 0 && rest[0] != 'Z'
}
