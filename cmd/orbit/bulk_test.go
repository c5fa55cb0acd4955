package main_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/engine"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

// TestBulkSelectorsDryRunThenAct: selectors pick runs by job, state, age
// and requester; --dry-run lists them and records nothing; the operation
// (pause, cancel, retry) records its bulk id in every run it touched, and
// leaves the other runs alone.
func TestBulkSelectorsDryRunThenAct(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	p.WriteFile(".orbit/jobs/slow.yaml", `
schemaVersion: 2
kind: Job
metadata: {name: slow}
spec:
  max_active_runs: 5
  steps:
    - {id: nap, spec: {type: deterministic, action: sleep, config: {ms: 120000}}}
`)
	p.WriteFile(".orbit/jobs/other.yaml", `
schemaVersion: 2
kind: Job
metadata: {name: other}
spec:
  steps:
    - {id: nap, spec: {type: deterministic, action: sleep, config: {ms: 120000}}}
`)
	// A routine that never fires by itself: run-now starts a run of
	// other whose requester is the routine.
	p.WriteFile(".orbit/routines/yearly.yaml", `schemaVersion: 2
kind: Routine
metadata: {name: yearly}
spec:
  trigger: {cron: "@yearly"}
  target: job:other
`)
	serve(t, p)
	var slow []string
	for range 3 {
		r := p.Orbit("job", "run", "slow", "--detach")
		require.Equal(t, 0, r.Code, r.String())
		slow = append(slow, strings.TrimSpace(r.Stdout))
	}
	other := runJob(t, p, "other", "--detach")
	for _, id := range append(slices.Clone(slow), other) {
		waitFor(t, "the run to start", func() bool { return runView(t, p, id).State == events.StateRunning })
	}
	listed := func(r testkit.Result) []string {
		ids := strings.Fields(r.Stdout)
		slices.Sort(ids)
		return ids
	}
	slices.Sort(slow)

	r := p.Orbit("routine", "run-now", "yearly")
	require.Equal(t, 0, r.Code, r.String())
	byRoutine := strings.TrimSpace(r.Stdout)
	r = p.Orbit("run", "cancel", "--requester", "routine:yearly", "--dry-run")
	require.Equal(t, 0, r.Code, r.String())
	assert.Equal(t, []string{byRoutine}, listed(r), "the requester picks the routine's run only")
	r = p.Orbit("run", "cancel", "--requester", "routine:yearly", "--job", "slow", "--dry-run")
	require.Equal(t, 0, r.Code, r.String())
	assert.Empty(t, listed(r), "every selector given must hold")
	r = p.Orbit("run", "cancel", "--requester", "routine:yearly")
	require.Equal(t, 0, r.Code, r.String())
	assert.Equal(t, []string{byRoutine}, listed(r))
	byRequester := strings.TrimSpace(r.Stderr[strings.LastIndex(r.Stderr, " ")+1:])
	waitFor(t, "the routine's run to end", func() bool { return events.Terminal(runView(t, p, byRoutine).State) })
	v := runView(t, p, byRoutine)
	assert.Equal(t, events.StateCancelled, v.State)
	require.NotNil(t, v.Cancel)
	assert.Equal(t, byRequester, v.Cancel.Bulk)
	for _, id := range append(slices.Clone(slow), other) {
		assert.Equal(t, events.StateRunning, runView(t, p, id).State, "the CLI's runs are left alone: %s", id)
	}

	r = p.Orbit("run", "pause", "--job", "slow", "--state", "running", "--since", "1h", "--dry-run")
	require.Equal(t, 0, r.Code, r.String())
	assert.Equal(t, slow, listed(r))
	assert.Contains(t, r.Stderr, "dry run: 3 run(s) would be paused")
	for _, id := range slow {
		assert.False(t, runView(t, p, id).Paused, "a dry run pauses nothing")
	}

	b := orbitJSON[engine.Bulk](t, p, "run", "pause", "--job", "slow", "--json")
	require.NotEmpty(t, b.ID)
	assert.ElementsMatch(t, slow, b.Runs)
	for _, id := range slow {
		evs := runEvents(t, p, id, "--type", events.RunPaused)
		require.Len(t, evs, 1)
		var d events.RunPausedData
		require.NoError(t, evs[0].Decode(&d))
		assert.Equal(t, b.ID, d.Bulk)
	}
	assert.False(t, runView(t, p, other).Paused)

	r = p.Orbit("run", "cancel", "--state", "paused", "--dry-run")
	require.Equal(t, 0, r.Code, r.String())
	assert.Equal(t, slow, listed(r))
	assert.Equal(t, events.StateRunning, runView(t, p, slow[0]).State, "a dry run cancels nothing")

	r = p.Orbit("run", "cancel", "--job", "slow", "--since", "1h", "--reason", "bulk")
	require.Equal(t, 0, r.Code, r.String())
	assert.Equal(t, slow, listed(r))
	bulk := strings.TrimSpace(r.Stderr[strings.LastIndex(r.Stderr, " ")+1:])
	for _, id := range slow {
		waitFor(t, "the run to end", func() bool { return events.Terminal(runView(t, p, id).State) })
		v := runView(t, p, id)
		assert.Equal(t, events.StateCancelled, v.State)
		require.NotNil(t, v.Cancel)
		assert.Equal(t, bulk, v.Cancel.Bulk)
	}
	assert.Equal(t, events.StateRunning, runView(t, p, other).State)

	r = p.Orbit("run", "retry", "--job", "slow", "--state", "cancelled", "--dry-run")
	require.Equal(t, 0, r.Code, r.String())
	assert.Equal(t, slow, listed(r))
	for _, id := range slow {
		assert.Empty(t, runView(t, p, id).Retries, "a dry run retries nothing: %s", id)
	}

	retried := orbitJSON[engine.BulkRetried](t, p, "run", "retry", "--job", "slow", "--state", "cancelled", "--json")
	require.NotEmpty(t, retried.Bulk.ID)
	assert.NotEqual(t, bulk, retried.Bulk.ID)
	assert.ElementsMatch(t, slow, retried.Bulk.Runs)
	require.Len(t, retried.Retries, len(slow))
	for i, id := range retried.Retries {
		evs := runEvents(t, p, id, "--type", events.RunRequested)
		require.Len(t, evs, 1)
		var d events.RunRequestedData
		require.NoError(t, evs[0].Decode(&d))
		assert.Equal(t, retried.Bulk.ID, d.Bulk, "the retry %s records the bulk id", id)
		assert.Equal(t, retried.Bulk.Runs[i], runView(t, p, id).RetryOf)
	}
	r = p.Orbit("run", "cancel", "--job", "slow", "--state", "running,pending")
	require.Equal(t, 0, r.Code, r.String())
	assert.ElementsMatch(t, retried.Retries, strings.Fields(r.Stdout))

	r = p.Orbit("run", "cancel", "--job", "nothing-such")
	assert.Equal(t, 0, r.Code, r.String())
	assert.Empty(t, r.Stdout)
	r = p.Orbit("run", "cancel", other, "--job", "other")
	assert.Equal(t, 2, r.Code, "a run id or selectors: %s", r)
}
