package main_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

// TestAFullDiskPausesTheEngineUntilSpaceIsFreed puts the engine's state on
// a small tmpfs and fills it: submitting a run fails with a clear message,
// nothing already stored is lost, and once the space is freed the engine
// goes on — without a restart. (Where mounting is not allowed, the same
// guard is tested in package events with a simulated disk.)
func TestAFullDiskPausesTheEngineUntilSpaceIsFreed(t *testing.T) {
	t.Parallel()
	p := serveOnASmallDisk(t)
	require.Equal(t, 0, p.Orbit("job", "run", "hello").Code)

	junk := fillTheSmallDisk(p)
	time.Sleep(500 * time.Millisecond) // while there is room, the engine looks at the disk every 250 ms
	r := p.Orbit("job", "run", "hello")
	assert.Equal(t, 3, r.Code, r.String())
	assert.Contains(t, r.Stderr, "event store is full")
	assert.Contains(t, r.Stderr, "free some space")

	require.NoError(t, os.Remove(junk))
	r = p.Orbit("job", "run", "hello")
	require.Equal(t, 0, r.Code, r.String())
	r = p.Orbit("run", "history", "--json")
	require.Equal(t, 0, r.Code, r.String())
	assert.Equal(t, 2, strings.Count(r.Stdout, `"state": "`+events.StateSuccess+`"`), "both good runs are there")
	assert.Equal(t, 0, p.Orbit("replay", "--verify").Code)
}

// serveOnASmallDisk serves a fresh project whose .orbit/state is a
// 128 MiB tmpfs; the test is skipped where mounting is not allowed.
func serveOnASmallDisk(t *testing.T) *testkit.Project {
	t.Helper()
	p := testkit.NewProject(t)
	state := filepath.Join(p.Root, ".orbit", "state")
	require.NoError(t, os.MkdirAll(state, 0o755))
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=128m", "tmpfs", state).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here (%v: %s)", err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", state).Run() })
	t.Cleanup(p.StopEngine)
	serve(t, p)
	return p
}

// fillTheSmallDisk writes 100 MB to the state of a project of
// serveOnASmallDisk, which leaves less than the engine's 64 MiB reserve
// free, and returns the file that frees it when removed.
func fillTheSmallDisk(p *testkit.Project) string {
	junk := filepath.Join(p.Root, ".orbit", "state", "junk")
	_ = exec.Command("dd", "if=/dev/zero", "of="+junk, "bs=1M", "count=100").Run()
	return junk
}
