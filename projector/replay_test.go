package projector_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/projector"
)

// onlyViewsFile asserts that Replay left no file of its own behind.
func onlyViewsFile(t *testing.T, path string) {
	t.Helper()
	entries, err := os.ReadDir(filepath.Dir(path))
	require.NoError(t, err)
	var names []string
	for _, entry := range entries {
		names = append(names, entry.Name())
	}
	assert.Equal(t, []string{filepath.Base(path)}, names)
}

func TestReplayVerifyAgreesWithLiveViews(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.history(runID(1), runID(2))
	last := e.history(runID(3), runID(4))
	p := e.running(projector.Config{BatchSize: 3}, last)

	report, err := p.Replay(e.ctx, true)
	require.NoError(t, err)
	assert.Equal(t, &projector.ReplayReport{Applied: last, Events: int(last)}, report)
	onlyViewsFile(t, e.path)
}

func TestReplayVerifyReportsCorruptedViews(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	last := e.history(runID(1), runID(2))
	p := e.running(projector.Config{}, last)
	before, err := p.RunView(e.ctx, runID(2))
	require.NoError(t, err)

	require.NoError(t, projector.PutRaw(p, "runs", runID(2), `{"id":"wrong"}`))
	require.NoError(t, projector.PutRaw(p, "runs_active", "stray", `{}`))
	require.NoError(t, projector.PutRaw(p, "run_steps", runID(1)+"\x00deploy", ""))

	report, err := p.Replay(e.ctx, true)
	require.NoError(t, err)
	assert.False(t, report.Swapped)
	assert.Equal(t, 3, report.TotalDifferences)
	require.Len(t, report.Differences, 3)
	assert.Equal(t, projector.Difference{Bucket: "run_steps", Key: runID(1) + "\x00deploy", Live: "",
		Replayed: `{"key":"deploy","id":"deploy","state":"skipped","order":14}`}, report.Differences[0])
	assert.Equal(t, "runs", report.Differences[1].Bucket)
	assert.Equal(t, runID(2), report.Differences[1].Key)
	assert.Equal(t, `{"id":"wrong"}`, report.Differences[1].Live)
	assert.Contains(t, report.Differences[1].Replayed, `"job":"review"`)
	assert.Equal(t, projector.Difference{Bucket: "runs_active", Key: "stray", Live: "{}"}, report.Differences[2])
	onlyViewsFile(t, e.path)

	// Verify changes nothing.
	v, err := p.RunView(e.ctx, runID(2))
	require.NoError(t, err)
	assert.Equal(t, "wrong", v.ID)

	// Replay swaps the replayed views in and the projector goes on.
	report, err = p.Replay(e.ctx, false)
	require.NoError(t, err)
	assert.True(t, report.Swapped)
	assert.Equal(t, 3, report.TotalDifferences, "the report lists what the replay corrected")
	onlyViewsFile(t, e.path)
	v, err = p.RunView(e.ctx, runID(2))
	require.NoError(t, err)
	assert.Equal(t, before, v)

	next := e.append(events.Event{Type: events.RunStarted, RunID: runID(2)}, events.RunStartedData{Engine: "after-swap"})
	require.NoError(t, p.WaitFor(e.ctx, next))
	v, err = p.RunView(e.ctx, runID(2))
	require.NoError(t, err)
	assert.Equal(t, "after-swap", v.Engine)

	report, err = p.Replay(e.ctx, true)
	require.NoError(t, err)
	assert.Zero(t, report.TotalDifferences)
	assert.Equal(t, next, report.Applied)
}

func TestReplayCatchesUpWithEventsAppliedMeanwhile(t *testing.T) {
	t.Parallel()
	for _, verify := range []bool{true, false} {
		t.Run(map[bool]string{true: "verify", false: "swap"}[verify], func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			first := e.history(runID(1), runID(2))
			p := e.running(projector.Config{}, first)

			var last uint64
			projector.SetReplayBuilt(p, func() {
				// The fresh file is at first; the live views move on.
				last = e.history(runID(3), runID(4))
				require.NoError(t, p.WaitFor(e.ctx, last))
			})
			report, err := p.Replay(e.ctx, verify)
			require.NoError(t, err)
			assert.Equal(t, last, report.Applied)
			assert.Equal(t, int(last), report.Events)
			assert.Zero(t, report.TotalDifferences)
			assert.Equal(t, !verify, report.Swapped)
			onlyViewsFile(t, e.path)

			more := e.append(events.Event{Type: events.RunStarted, RunID: runID(4)}, events.RunStartedData{Engine: "x"})
			require.NoError(t, p.WaitFor(e.ctx, more))
		})
	}
}

func TestReplayWithoutRun(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.history(runID(1), runID(2))
	p := e.open(projector.Config{})
	report, err := p.Replay(e.ctx, false)
	require.NoError(t, err)
	assert.Equal(t, &projector.ReplayReport{Swapped: true}, report, "nothing applied, nothing replayed")
}

func TestRebuildRefusesAnExistingFile(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.history(runID(1), runID(2))
	path := newViewsPath(t)
	require.NoError(t, os.WriteFile(path, []byte("keep me"), 0o600))
	assert.ErrorIs(t, projector.Rebuild(e.ctx, e.log, path, 0), os.ErrExist)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "keep me", string(data))
}

func TestQueriesDuringASwapSeeOneFileOrTheOther(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	last := e.history(runID(1), runID(2))
	p := e.running(projector.Config{}, last)

	stop := make(chan struct{})
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			for {
				select {
				case <-stop:
					errs <- nil
					return
				default:
				}
				if _, err := p.RunView(e.ctx, runID(1)); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for range 3 {
		_, err := p.Replay(e.ctx, false)
		require.NoError(t, err)
	}
	close(stop)
	for range 4 {
		assert.NoError(t, <-errs)
	}
}

// shortLog is a log whose last events are gone: it ends at end.
type shortLog struct {
	*events.Log
	end uint64
}

func (s shortLog) LastSeq(context.Context) (uint64, error) { return s.end, nil }

func (s shortLog) Scan(ctx context.Context, from, upTo uint64, size int, fn func([]events.Event) error) error {
	return s.Log.Scan(ctx, from, min(upTo, s.end), size, fn)
}

// A verify that can read the log only up to a sequence before the one the
// live views applied fails saying so, rather than listing as differences
// what the events it could not read made of the views.
func TestReplayVerifyFailsOnALogShorterThanTheViews(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	last := e.history(runID(1), runID(2))
	p := e.running(projector.Config{}, last)

	p.SetSource(shortLog{Log: e.log, end: last - 1})
	_, err := p.Replay(e.ctx, true)
	require.Error(t, err)
	assert.Contains(t, err.Error(), fmt.Sprintf("the replay read the log through sequence %d", last-1))
	assert.Contains(t, err.Error(), fmt.Sprintf("short of %d", last))
	onlyViewsFile(t, e.path)
}
