package executor_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/activity"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/executor"
	"github.com/orbitrun/orbit/internal/runrig"
	"github.com/orbitrun/orbit/internal/testkit"
)

// bomb passes the load check (its invocations have a condition) and starts
// two detached runs of itself, which live a little while their own start
// two more: a tree as broad as the depth limit lets it grow.
const bomb = `
schemaVersion: 2
kind: Job
metadata: {name: bomb}
spec:
  default_input: {more: yes}
  steps:
    - id: left
      when: "{{ input.more }} == yes"
      spec: {type: deterministic, action: job.invoke, config: {job: bomb, wait: false}}
    - id: right
      when: "{{ input.more }} == yes"
      spec: {type: deterministic, action: job.invoke, config: {job: bomb, wait: false}}
    - id: linger
      spec: {type: deterministic, action: sleep, config: {ms: 300}}
`

// waitTreeEnded follows the log until root and every run below it have
// finished, and returns their run.requested and run.finished events in log
// order. A run's children are requested before its steps end, so before its
// own run.finished: once every run seen has finished, no other can join.
func waitTreeEnded(t *testing.T, log *events.Log, root string) []events.Event {
	t.Helper()
	ctx := testkit.Context(t)
	feed, err := log.Follow(ctx, events.FollowOptions{Filters: []string{
		events.TypeFilter(events.AggregateRun, events.RunRequested),
		events.TypeFilter(events.AggregateRun, events.RunFinished),
	}})
	require.NoError(t, err)
	defer feed.Stop()
	in := map[string]bool{root: true}
	open := map[string]bool{}
	rootDone := false
	var out []events.Event
	for {
		select {
		case ev, ok := <-feed.Events():
			require.True(t, ok, "the feed ended: %v", feed.Err())
			if ev.Type == events.RunRequested {
				var d events.RunRequestedData
				require.NoError(t, ev.Decode(&d))
				if d.Root == root {
					in[ev.RunID] = true
				}
			}
			if !in[ev.RunID] {
				continue
			}
			out = append(out, ev)
			if ev.Type == events.RunRequested {
				open[ev.RunID] = true
				continue
			}
			delete(open, ev.RunID)
			rootDone = rootDone || ev.RunID == root
			if rootDone && len(open) == 0 {
				return out
			}
		case <-ctx.Done():
			t.Fatalf("the tree of %s did not end: %d runs still live", root, len(open))
		}
	}
}

// TestDescendantsOfOneRootAreBounded: a job that keeps starting detached
// runs of itself never has more than engine.max_descendants runs live below
// its root at once; the job.invoke that would start one more fails, kind
// limit, not retried, naming the setting and the way to stop the tree.
func TestDescendantsOfOneRootAreBounded(t *testing.T) {
	t.Parallel()
	log := testkit.StartLog(t, events.Config{})
	job := runrig.ParseJob(t, bomb)
	startWithConfig(t, executor.Config{Log: log, Settings: func() activity.Settings { return activity.Settings{MaxChildDepth: 5, MaxDescendants: 6} }}, job)

	root, fin := runrig.RunJob(t, log, job, nil)
	require.Equal(t, events.StateSuccess, fin.State, "%+v", fin.Error)
	evs := waitTreeEnded(t, log, root)

	live, most, refused := 0, 0, 0
	for _, ev := range evs {
		if ev.RunID == root {
			continue
		}
		switch ev.Type {
		case events.RunRequested:
			live++
			most = max(most, live)
		case events.RunFinished:
			live--
			var d events.RunFinishedData
			require.NoError(t, ev.Decode(&d))
			if d.State == events.StateFailed && strings.Contains(d.Error.Message, "engine.max_descendants") {
				assert.Equal(t, events.KindLimit, d.Error.Kind)
				assert.False(t, d.Error.Retryable)
				assert.Contains(t, d.Error.Message, "the 6 live runs below run "+root)
				assert.Contains(t, d.Error.Message, "orbit run cancel --tree "+root)
				refused++
			}
		}
	}
	assert.Equal(t, 6, most, "live runs below the root at once")
	assert.Positive(t, refused, "runs refused a child")
	assert.Less(t, len(evs)/2, 63, "fewer runs than the depth limit alone lets grow")
}

// TestCancelTreeReachesTheLiveRunsBelowAFinishedRun: the root and two runs
// below it, one in the other, have finished, having started detached runs
// that sleep. A tree cancel of the outer one cancels the runs below the
// inner one (their parent, ended, is found through the log) and no other;
// one of the root cancels the rest; each records whose tree cancel it was
// part of.
func TestCancelTreeReachesTheLiveRunsBelowAFinishedRun(t *testing.T) {
	t.Parallel()
	ctx := testkit.Context(t)
	log := testkit.StartLog(t, events.Config{})
	nap := napJob(t, 10)
	middle := jobSpec(t, "middle", `
  steps:
    - id: one
      spec: {type: deterministic, action: job.invoke, config: {job: nap, wait: false}}
    - id: two
      spec: {type: deterministic, action: job.invoke, config: {job: nap, wait: false}}
`)
	outer := jobSpec(t, "outer", `
  steps:
    - id: middle
      spec: {type: deterministic, action: job.invoke, config: {job: middle}}
`)
	top := jobSpec(t, "top", `
  steps:
    - id: outer
      spec: {type: deterministic, action: job.invoke, config: {job: outer}}
    - id: nap
      spec: {type: deterministic, action: job.invoke, config: {job: nap, wait: false}}
`)
	startWithConfig(t, executor.Config{Log: log}, nap, middle, outer, top)
	root, fin := runrig.RunJob(t, log, top, nil)
	require.Equal(t, events.StateSuccess, fin.State, "%+v", fin.Error)
	inner := runsOf(t, log, "middle")[0].RunID
	mid := runsOf(t, log, "outer")[0].RunID
	runrig.WaitFor(t, "three naps running", func() bool {
		naps := runsOf(t, log, "nap")
		return len(naps) == 3 && !slices.ContainsFunc(naps, func(ev events.Event) bool { return !runrig.Has(t, log, ev.RunID, events.StepStarted, "sleep") })
	})
	var underMid, underRoot []string
	for _, ev := range runsOf(t, log, "nap") {
		var d events.RunRequestedData
		require.NoError(t, ev.Decode(&d))
		assert.Equal(t, root, d.Root)
		if d.Parent.RunID == inner {
			underMid = append(underMid, ev.RunID)
		} else {
			underRoot = append(underRoot, ev.RunID)
		}
	}
	require.Len(t, underMid, 2)

	asked, err := executor.CancelTree(ctx, log, mid, "test", "", "")
	require.NoError(t, err)
	assert.ElementsMatch(t, underMid, asked, "the outer run has finished: the runs below it")
	for _, id := range underMid {
		fin := runrig.WaitFinished(t, log, id)
		assert.Equal(t, events.StateCancelled, fin.State)
		assert.Equal(t, "cancelled by test, as part of the tree cancel of "+mid, fin.Error.Message)
		d := assertTreeCancel(t, log, id, mid)
		assert.Equal(t, "test", d.Requester)
	}
	assert.False(t, runrig.Has(t, log, underRoot[0], events.RunFinished, ""), "a run beside the outer one goes on")

	asked, err = executor.CancelTree(ctx, log, root, "test", "enough", "")
	require.NoError(t, err)
	assert.Equal(t, underRoot, asked, "the runs that ended are not asked again")
	assert.Equal(t, events.StateCancelled, runrig.WaitFinished(t, log, underRoot[0]).State)
	assertTreeCancel(t, log, underRoot[0], root)

	asked, err = executor.CancelTree(ctx, log, root, "test", "", "")
	require.NoError(t, err)
	assert.Empty(t, asked, "nothing is live below the root any more")
}

// assertTreeCancel checks that run's cancel says it was part of the tree
// cancel of tree, and returns it.
func assertTreeCancel(t *testing.T, log *events.Log, run, tree string) events.RunCancelRequestedData {
	t.Helper()
	evs := runrig.OfType(runrig.History(t, log, run), events.RunCancelRequested)
	require.Len(t, evs, 1)
	var d events.RunCancelRequestedData
	require.NoError(t, evs[0].Decode(&d))
	assert.Equal(t, tree, d.Tree, "run %s", run)
	return d
}

// topJob starts a nap it does not wait for, then one it waits for.
const topJob = `
schemaVersion: 2
kind: Job
metadata: {name: top}
spec:
  steps:
    - id: detached
      spec: {type: deterministic, action: job.invoke, config: {job: nap, wait: false}}
    - id: waited
      spec: {type: deterministic, action: job.invoke, config: {job: nap}}
`

// startTop starts top, and returns its run once both its naps run.
func startTop(t *testing.T, log *events.Log) string {
	t.Helper()
	nap := napJob(t, 10)
	top := runrig.ParseJob(t, topJob)
	startWithConfig(t, executor.Config{Log: log}, nap, top)
	root := runrig.Submit(t, log, top, nil)
	runrig.WaitFor(t, "two naps running", func() bool {
		naps := runsOf(t, log, "nap")
		return len(naps) == 2 && !slices.ContainsFunc(naps, func(ev events.Event) bool { return !runrig.Has(t, log, ev.RunID, events.StepStarted, "sleep") })
	})
	return root
}

// TestCancelTreeOfALiveRoot: a live root is cancelled with the runs below
// it, itself first; a run it waits for and a detached one both record the
// tree cancel and its bulk id, however the cancel reached them.
func TestCancelTreeOfALiveRoot(t *testing.T) {
	t.Parallel()
	ctx := testkit.Context(t)
	log := testkit.StartLog(t, events.Config{})
	root := startTop(t, log)
	asked, err := executor.CancelTree(ctx, log, root, "test", "", "B-tree")
	require.NoError(t, err)
	require.Len(t, asked, 3)
	assert.Equal(t, root, asked[0])
	for _, id := range asked {
		done := make(chan events.RunFinishedData, 1)
		go func() { done <- runrig.WaitFinished(t, log, id) }()
		select {
		case fin := <-done:
			assert.Equal(t, events.StateCancelled, fin.State, "run %s", id)
		case <-time.After(20 * time.Second):
			t.Fatalf("run %s was not cancelled", id)
		}
		assert.Equal(t, "B-tree", assertTreeCancel(t, log, id, root).Bulk, "run %s", id)
	}
}

// TestACancelPassesItsBulkIdToTheChildRuns: a run cancelled as part of a
// bulk operation passes the operation's id on to the runs it started, the
// one it waits for (through its interpreter) and the detached one
// (through the orchestrator), with no tree cancel.
func TestACancelPassesItsBulkIdToTheChildRuns(t *testing.T) {
	t.Parallel()
	ctx := testkit.Context(t)
	log := testkit.StartLog(t, events.Config{})
	root := startTop(t, log)
	require.NoError(t, executor.RequestCancelOf(ctx, log, root, events.RunCancelRequestedData{Requester: "test", Bulk: "B-sel"}))
	naps := runsOf(t, log, "nap")
	require.Len(t, naps, 2)
	for _, ev := range naps {
		fin := runrig.WaitFinished(t, log, ev.RunID)
		assert.Equal(t, events.StateCancelled, fin.State, "run %s", ev.RunID)
		d := assertTreeCancel(t, log, ev.RunID, "")
		assert.Equal(t, "B-sel", d.Bulk, "run %s", ev.RunID)
		assert.Equal(t, "run:"+root, d.Requester)
	}
}
