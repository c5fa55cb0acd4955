package engine

import (
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/internal/sandbox"
	"github.com/orbitrun/orbit/internal/testkit"
)

// TestAnEngineThatCannotSandboxSaysSoAtStart: on a machine where the
// sandbox is not available (this test binary does not call sandbox.Init,
// so the probe fails as on a kernel without user namespaces) the engine
// warns when it opens that its CLI agents run without a sandbox, with the
// probe's reason, and its status says the same to orbit doctor.
func TestAnEngineThatCannotSandboxSaysSoAtStart(t *testing.T) {
	t.Parallel()
	ok, why := sandbox.Available()
	require.False(t, ok, "the test binary cannot sandbox")
	var logged testkit.SyncBuffer
	e, err := Open(testkit.Context(t), Config{Root: t.TempDir(), Listen: "127.0.0.1:0",
		Logger: slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })

	out := logged.String()
	assert.Contains(t, out, "level=WARN")
	assert.Contains(t, out, "CLI agents run without a sandbox")
	assert.Contains(t, out, why, "the warning gives the probe's reason")
	st := sandboxStatus()
	require.NotNil(t, st)
	assert.Equal(t, sandbox.ModeNone, st.Mode)
	assert.Contains(t, st.Unenforced, "no sandbox")
}
