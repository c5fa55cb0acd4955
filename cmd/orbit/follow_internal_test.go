package main

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/executor"
	"github.com/orbitrun/orbit/internal/testkit"
)

// TestAFollowerEndsARunWhoseEndItLeftOut: a client that verifies with
// another key than the engine's (as with an engine that does not say which
// key it signs with) leaves out every event of the run it follows, its
// run.finished too. It says so for each, and when the engine's view of the
// run says it ended, it ends with that, instead of waiting for ever.
func TestAFollowerEndsARunWhoseEndItLeftOut(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	r := p.Orbit("run", "history") // starts the root's engine
	require.Equal(t, 0, r.Code, r.String())
	ctx := testkit.Context(t)

	key := make([]byte, 32)
	_, err := rand.Read(key)
	require.NoError(t, err)
	other := filepath.Join(t.TempDir(), "other.key")
	require.NoError(t, os.WriteFile(other, []byte(`{"key":"`+hex.EncodeToString(key)+`","events_from":1,"commands_from":1}`), 0o600))

	var stdout, stderr testkit.SyncBuffer
	a := &app{stdout: &stdout, stderr: &stderr, rootFlag: p.Root, logKey: other}
	l, err := a.connectLog(ctx) // as it was: no followKey
	require.NoError(t, err)
	defer l.Close()
	require.True(t, l.Signing())

	cat, err := a.catalog(p.Root)
	require.NoError(t, err)
	job, err := loadJob(cat, "example")
	require.NoError(t, err)
	req, err := executor.NewRunRequest(job, nil, "test")
	require.NoError(t, err)
	require.NoError(t, a.submit(ctx, l, req, false))
	assert.Contains(t, stderr.String(), "orbit.events.run."+req.RunID+".run.finished): bad MAC")
	assert.Contains(t, stderr.String(), "run "+req.RunID+" ended "+events.StateSuccess+", as the engine's view of it says")
	assert.True(t, strings.HasPrefix(stdout.String(), req.RunID+"\n"), stdout.String())
}
