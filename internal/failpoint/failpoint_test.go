package failpoint_test

import (
	"os"
	"os/exec"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/internal/failpoint"
)

// TestHitKillsOnlyAtNamedPoints re-runs this test binary as a child that
// hits two points with one of them named: it must die by SIGKILL at it.
func TestHitKillsOnlyAtNamedPoints(t *testing.T) {
	if os.Getenv("FAILPOINT_CHILD") == "1" {
		failpoint.Hit("not-named")
		os.Stdout.WriteString("passed the first point\n")
		failpoint.Hit("named")
		os.Stdout.WriteString("passed the named point once\n")
		failpoint.Hit("named")
		os.Stdout.WriteString("passed the second point\n")
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHitKillsOnlyAtNamedPoints$")
	cmd.Env = append(os.Environ(), "FAILPOINT_CHILD=1", failpoint.Env+"=other, named@2")
	out, err := cmd.Output()
	var exitErr *exec.ExitError
	require.ErrorAs(t, err, &exitErr)
	status := exitErr.Sys().(syscall.WaitStatus)
	assert.True(t, status.Signaled())
	assert.Equal(t, syscall.SIGKILL, status.Signal())
	assert.Contains(t, string(out), "passed the first point")
	assert.Contains(t, string(out), "passed the named point once", "@2: not at the first hit")
	assert.NotContains(t, string(out), "passed the second point")
}

func TestHitWithoutTheVariableDoesNothing(t *testing.T) {
	t.Setenv(failpoint.Env, "")
	failpoint.Hit("anything")
}

// TestReachedIsTrueAtTheNamedHitOnly: a point that acts out a fault is
// reached at the hit ORBIT_FAILPOINT names, once, and never without it.
func TestReachedIsTrueAtTheNamedHitOnly(t *testing.T) {
	t.Setenv(failpoint.Env, "")
	assert.False(t, failpoint.Armed())
	assert.False(t, failpoint.Reached("reached-test"))
	t.Setenv(failpoint.Env, "other,reached-test@2")
	assert.True(t, failpoint.Armed())
	var got []bool
	for range 3 {
		got = append(got, failpoint.Reached("reached-test"))
	}
	assert.Equal(t, []bool{false, true, false}, got)
}
