package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

// TestAnEngineFailureIsExitOne: an error the engine answers with that is
// of no known kind (a "500") is the engine failing at a request, exit 1;
// not a usage error (2), and not the engine being unavailable (3).
func TestAnEngineFailureIsExitOne(t *testing.T) {
	t.Parallel()
	ctx := testkit.Context(t)
	l := testkit.StartLog(t, events.Config{})
	stop, err := l.Serve("", "test", "0.0.1", 10*time.Second, map[string]events.Handler{
		"engine.fail": func(context.Context, json.RawMessage) (any, error) { return nil, errors.New("the disk caught fire") },
	})
	require.NoError(t, err)
	defer stop.Stop()

	err = l.Request(ctx, "engine.fail", nil, nil)
	require.ErrorIs(t, err, events.ErrEngineFailed)
	assert.EqualError(t, err, "the disk caught fire", "the engine's message is kept")

	var stderr bytes.Buffer
	a := &app{stderr: &stderr}
	assert.Equal(t, exitUnsuccess, a.exit(err))
	assert.Equal(t, "orbit: the disk caught fire\n", stderr.String())
}

// TestNoSeededJobLooksLikeARunSubcommand: every job Orbit seeds runs with
// the short form 'orbit run <job>'.
func TestNoSeededJobLooksLikeARunSubcommand(t *testing.T) {
	t.Parallel()
	run := (&app{}).runCommand()
	files, err := filepath.Glob("../../assets/seeded/jobs/*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".yaml")
		assert.NoError(t, notASubcommand(run, name), name)
	}
	for _, typo := range []string{"histroy", "shwo", "evnets", "log", "tial", "sign"} {
		assert.Error(t, notASubcommand(run, typo), typo)
	}
}
