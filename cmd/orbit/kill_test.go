package main_test

import (
	"os/exec"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// killEngine kills an engine that serve started with SIGKILL, as a crash
// would, and reaps it.
func killEngine(t *testing.T, engine *exec.Cmd) {
	t.Helper()
	require.NoError(t, engine.Process.Signal(syscall.SIGKILL))
	_ = engine.Wait()
}
