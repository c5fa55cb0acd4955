package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/executor"
	"github.com/orbitrun/orbit/internal/testkit"
	"github.com/orbitrun/orbit/projector"
)

// TestARunTheLogCannotRecordIsRefusedOrShown: on a server that takes 1 MiB
// messages, a run whose run.requested is over that once its large values
// are blobs (a job name of 1.5 MB: the one thing no blob can hold) is
// refused by runs.submit as an invalid request naming the event's size and
// the limit, and nothing is written. A request that reaches the
// orchestrator all the same (as a child run's does) is recorded as a
// small failed run: the views show it, with the reason, and list it.
func TestARunTheLogCannotRecordIsRefusedOrShown(t *testing.T) {
	t.Parallel()
	ctx := testkit.Context(t)
	e := runningEngine(ctx, t, Config{Root: t.TempDir(), Listen: "127.0.0.1:0", MaxPayload: 1 << 20})

	job, err := assets.ParseJob("j.yaml", []byte("schemaVersion: 2\nkind: Job\nmetadata: {name: j}\nspec:\n  steps:\n    - {id: a, spec: {type: deterministic, action: echo}}\n"), nil)
	require.NoError(t, err)
	job.Name = strings.Repeat("j", 3<<19)
	req, err := executor.NewRunRequest(job, nil, "test")
	require.NoError(t, err)
	raw, err := json.Marshal(req)
	require.NoError(t, err)

	_, err = e.apiSubmit(ctx, raw)
	require.Error(t, err)
	assert.True(t, errors.Is(err, events.ErrInvalidRequest), "%v", err)
	assert.True(t, errors.Is(err, events.ErrTooLarge), "%v", err)
	assert.Contains(t, err.Error(), "run.requested of ")
	assert.Contains(t, err.Error(), fmt.Sprintf("over the server's max_payload of %d bytes", 1<<20))
	assert.Less(t, len(err.Error()), 1000)
	last, err := e.log.LastMatching(ctx, []string{events.RunFilter(req.RunID)})
	require.NoError(t, err)
	assert.Zero(t, last, "a refused submission wrote to the log")

	require.NoError(t, executor.Submit(ctx, e.log, req))
	var v *projector.RunView
	require.Eventually(t, func() bool {
		v, err = e.proj.RunView(ctx, req.RunID)
		return err == nil && events.Terminal(v.State)
	}, time.Minute, 20*time.Millisecond, "the refused run in the views")
	assert.Equal(t, events.StateFailed, v.State)
	require.NotNil(t, v.Error)
	assert.Equal(t, events.KindLimit, v.Error.Kind)
	assert.Contains(t, v.Error.Message, "max_payload")
	assert.Equal(t, "test", v.Requester)
	runs, err := e.proj.Runs(ctx, projector.RunFilter{})
	require.NoError(t, err)
	var listed bool
	for _, r := range runs {
		listed = listed || r.ID == req.RunID
	}
	assert.True(t, listed, "the refused run is not listed")
}
