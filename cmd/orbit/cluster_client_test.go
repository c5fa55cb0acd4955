package main_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/engine"
	"github.com/orbitrun/orbit/internal/testkit"
)

// TestClusterClientSignsInAsTheRootsClientWithoutItsEngine: on a cluster,
// a command with --nats-url (here ORBIT_NATS_URL) on a root whose own
// engine has stopped signs in with the root's client key, the owner's, and
// is served by the cluster's other engine; a directory with no client key
// of its own still signs in with nothing and is refused.
func TestClusterClientSignsInAsTheRootsClientWithoutItsEngine(t *testing.T) {
	t.Parallel()
	c, ps, es := twoEngines(t)
	r := ps[0].Orbit("job", "run", "hello")
	require.Equal(t, 0, r.Code, r.String())
	id := strings.TrimSpace(r.Stdout)

	es[0].Stop()
	_, err := engine.ReadInfo(ps[0].Root)
	require.ErrorIs(t, err, os.ErrNotExist, "the root's engine has stopped")

	r = ps[0].Orbit("run", "show", "--json", id)
	assert.Equal(t, 0, r.Code, r.String())
	r = ps[0].Orbit("job", "run", "hello")
	assert.Equal(t, 0, r.Code, r.String())

	cmd := exec.Command(testkit.Binary(t), "--root", t.TempDir(), "--nats-url", c.URLs(), "run", "show", id)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	var exit *exec.ExitError
	require.True(t, errors.As(err, &exit), "%v: %s", err, stderr.String())
	assert.Equal(t, 3, exit.ExitCode(), stderr.String())
	assert.Contains(t, stderr.String(), "refused")
}
