package projector_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
	"github.com/orbitrun/orbit/projector"
)

// The views must not depend on how events were cut into batches: a file
// built live with any batch size equals a rebuild, key by key and byte for
// byte.
func TestViewsDoNotDependOnBatchSize(t *testing.T) {
	t.Parallel()
	for _, size := range []int{1, 3, 256} {
		t.Run(fmt.Sprintf("batch size %d", size), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			e.history(runID(1), runID(2))
			last := e.history(runID(3), runID(4))
			p := e.open(projector.Config{BatchSize: size})
			e.runThrough(p, last)
			assert.Equal(t, e.rebuild(last), testkit.DumpBolt(t, e.path), "batch size %d", size)
		})
	}
}

func TestACrashBeforeCommitLosesTheBatchAndNothingElse(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	last := e.history(runID(1), runID(2))

	e.crashBeforeCommitPast(8)

	// The engine restarts: the lost batch is applied once, from the log.
	p := e.running(projector.Config{BatchSize: 4}, last)
	assert.Equal(t, last, p.Applied())
	require.NoError(t, p.Close())
	assert.Equal(t, e.rebuild(last), testkit.DumpBolt(t, e.path))
}

func TestRunAgainAfterAFailedCommitResumes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	last := e.history(runID(1), runID(2))
	p := e.open(projector.Config{BatchSize: 2})
	crash := errors.New("crash")
	projector.SetBeforeCommit(p, func(seq uint64) error {
		if seq >= 10 {
			return crash
		}
		return nil
	})
	require.ErrorIs(t, p.Run(e.ctx), crash)
	projector.SetBeforeCommit(p, nil)
	e.start(p)
	require.NoError(t, p.WaitFor(e.ctx, last))
	v, err := p.RunView(e.ctx, runID(1))
	require.NoError(t, err)
	assert.Equal(t, 1, v.Resumes)
	assert.Equal(t, []string{runID(2)}, v.Children)
	assert.Equal(t, 2, v.Steps[0].Attempts)
	assert.Equal(t, 2, v.Steps[0].Deliveries)
}

func TestARestartedProjectorAppliesNothingTwice(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id := runID(1)
	e.append(events.Event{Type: events.RunRequested, RunID: id}, events.RunRequestedData{JobName: "ci"})
	e.append(events.Event{Type: events.RunStarted, RunID: id}, events.RunStartedData{Engine: "a"})
	e.append(events.Event{Type: events.StepStarted, RunID: id, StepKey: "build"}, events.StepStartedData{Attempt: 1})
	e.append(events.Event{Type: events.RunRequested, RunID: runID(2)}, events.RunRequestedData{JobName: "sub", Parent: &events.RunLink{RunID: id, StepKey: "build"}})
	first := e.append(events.Event{Type: events.RunResumed, RunID: id}, events.RunResumedData{Engine: "b"})

	p := e.open(projector.Config{})
	e.runThrough(p, first)

	p = e.open(projector.Config{})
	e.start(p)
	e.append(events.Event{Type: events.StepFinished, RunID: id, StepKey: "build"}, events.StepFinishedData{Attempt: 1, State: events.StateFailed})
	e.append(events.Event{Type: events.StepStarted, RunID: id, StepKey: "build"}, events.StepStartedData{Attempt: 2})
	e.append(events.Event{Type: events.RunRequested, RunID: runID(3)}, events.RunRequestedData{JobName: "sub", Parent: &events.RunLink{RunID: id, StepKey: "build"}})
	last := e.append(events.Event{Type: events.RunResumed, RunID: id}, events.RunResumedData{Engine: "c"})
	require.NoError(t, p.WaitFor(e.ctx, last))

	v, err := p.RunView(e.ctx, id)
	require.NoError(t, err)
	assert.Equal(t, 2, v.Resumes)
	assert.Equal(t, "c", v.Engine)
	assert.Equal(t, []string{runID(2), runID(3)}, v.Children)
	require.Len(t, v.Steps, 1)
	assert.Equal(t, 2, v.Steps[0].Attempts)
	assert.Equal(t, last, v.LastSeq)
	require.NoError(t, p.Close())
	assert.Equal(t, e.rebuild(last), testkit.DumpBolt(t, e.path))
}
