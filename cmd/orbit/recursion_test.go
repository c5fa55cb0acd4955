package main_test

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
	"github.com/orbitrun/orbit/projector"
)

// TestAJobThatAlwaysInvokesItselfIsRefusedAndStopsNothingElse: the cycle is
// a load error of that job alone, naming the file, the step and the cycle;
// every other job still runs.
func TestAJobThatAlwaysInvokesItselfIsRefusedAndStopsNothingElse(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	file := p.WriteFile(".orbit/jobs/rec.yaml", `schemaVersion: 2
kind: Job
metadata: {name: rec}
spec:
  steps:
    - {id: again, spec: {type: deterministic, action: job.invoke, config: {job: rec, wait: true}}}
`)
	r := p.Orbit("job", "run", "rec")
	assert.Equal(t, 2, r.Code, r.String())
	assert.Contains(t, r.Stderr, file+`: spec.steps[0]: job.invoke of "rec" always runs and leads back to this job (rec → rec)`)
	assert.Empty(t, r.Stdout, "nothing was submitted")

	r = p.Orbit("job", "run", "hello")
	assert.Equal(t, 0, r.Code, r.String())
	assert.Contains(t, r.Stderr, "1 catalog file(s) could not be loaded")

	r = p.Orbit("job", "list")
	assert.Equal(t, 0, r.Code, r.String())
	assert.Contains(t, r.Stderr, "left out of the catalog: "+file)
	assert.NotContains(t, r.Stdout, "rec ")
	assert.Contains(t, r.Stdout, "hello")
}

// TestEndlessRecursionStopsAtTheDepthLimit: a recursion the loader cannot
// see as endless stops at engine.max_child_depth with an error that says
// so, and the engine takes the next job at once.
func TestEndlessRecursionStopsAtTheDepthLimit(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	p.WriteFile(".orbit/config.yaml", "engine:\n  max_child_depth: 3\n")
	p.WriteFile(".orbit/jobs/endless.yaml", testkit.EndlessJob)
	r := p.Orbit("job", "run", "endless")
	assert.Equal(t, 1, r.Code, r.String())
	assert.Contains(t, r.Stderr, `a run of "endless" here would be at depth 4, past engine.max_child_depth (3)`)
	runID := strings.TrimSpace(r.Stdout)
	v := runView(t, p, runID)
	assert.Equal(t, events.StateFailed, v.State)
	require.NotNil(t, v.Error)
	assert.Equal(t, events.KindLimit, v.Error.Kind)

	h := p.Orbit("run", "history", "--job", "endless", "--json")
	require.Equal(t, 0, h.Code, h.String())
	assert.Equal(t, 4, strings.Count(h.Stdout, `"job": "endless"`), "the root and three levels of children:\n%s", h.Stdout)

	r = p.Orbit("job", "run", "hello")
	assert.Equal(t, 0, r.Code, r.String())
}

// bombRuns lists the runs of job bomb, as run history --json has them.
func bombRuns(t *testing.T, p *testkit.Project) []projector.RunView {
	t.Helper()
	return orbitJSON[[]projector.RunView](t, p, "run", "history", "--job", "bomb", "--limit", "0", "--json")
}

// startBomb runs job bomb: two detached self-invocations behind a
// condition that always holds (the load check cannot see that it does),
// held to engine.max_descendants (8) live runs below their root, the
// refused job.invoke naming the setting. The root finishes at once; each
// child lingers two minutes. It returns the root and the live runs below
// it once the tree has settled (every live run has both its children).
func startBomb(t *testing.T, p *testkit.Project) (string, []string) {
	t.Helper()
	p.WriteFile(".orbit/config.yaml", "engine:\n  max_descendants: 8\n")
	p.WriteFile(".orbit/jobs/bomb.yaml", `schemaVersion: 2
kind: Job
metadata: {name: bomb}
spec:
  max_active_runs: 20
  default_input: {more: yes, child: no}
  steps:
    - {id: left, when: "{{ input.more }} == yes", spec: {type: deterministic, action: job.invoke, config: {job: bomb, wait: false, input: {child: yes}}}}
    - {id: right, when: "{{ input.more }} == yes", spec: {type: deterministic, action: job.invoke, config: {job: bomb, wait: false, input: {child: yes}}}}
    - {id: linger, when: "{{ input.child }} == yes", spec: {type: deterministic, action: sleep, config: {ms: 120000}}}
`)
	root := runJob(t, p, "bomb")

	refused := func(v projector.RunView) bool {
		return v.Error != nil && strings.Contains(v.Error.Message, "the 8 live runs below run "+root+" that engine.max_descendants allows")
	}
	// Runs refused a child fail, and free their places; the tree settles
	// when every live run has both its children.
	var live []string
	waitFor(t, "the tree to fill and settle", func() bool {
		runs := bombRuns(t, p)
		var now []string
		for _, v := range runs {
			if !events.Terminal(v.State) {
				now = append(now, v.ID)
			}
		}
		settled := slices.ContainsFunc(runs, refused) && slices.Equal(now, live)
		live = now
		if !settled {
			time.Sleep(500 * time.Millisecond)
		}
		return settled
	})
	assert.LessOrEqual(t, len(live), 8, "the root has finished; at most 8 runs below it live")
	return root, live
}

// TestChildRunsAreBoundedAndATreeIsCancelled: the bomb's tree is held to
// engine.max_descendants; orbit run cancel --tree stops every run below
// its root (which has finished) for good, each recording whose tree
// cancel it was part of and the one bulk id of that cancel.
func TestChildRunsAreBoundedAndATreeIsCancelled(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	root, live := startBomb(t, p)

	r := p.Orbit("run", "cancel", "--tree", "--dry-run", root)
	assert.Equal(t, 0, r.Code, r.String())
	assert.ElementsMatch(t, live, strings.Fields(r.Stdout), "the dry run lists the live runs")
	assert.Contains(t, r.Stderr, "dry run: "+strconv.Itoa(len(live))+" run(s) would be cancelled")
	for _, v := range bombRuns(t, p) {
		assert.False(t, v.CancelRequested, "a dry run cancels nothing: %s", v.ID)
	}

	r = p.Orbit("run", "cancel", "--tree", root)
	assert.Equal(t, 0, r.Code, r.String())
	asked := strings.Fields(r.Stdout)
	assert.ElementsMatch(t, live, asked)
	assert.Contains(t, r.Stderr, strconv.Itoa(len(live))+" runs cancelled")
	bulk := bulkID(t, r.Stderr, len(live), "asked to cancel")

	total := len(bombRuns(t, p))
	time.Sleep(time.Second)
	runs := bombRuns(t, p)
	assert.Len(t, runs, total, "no run started after the tree cancel")
	for _, v := range runs {
		assert.True(t, events.Terminal(v.State), "run %s is %s", v.ID, v.State)
	}
	for _, id := range asked {
		v := runView(t, p, id)
		assert.Equal(t, events.StateCancelled, v.State, id)
		require.NotNil(t, v.Error)
		assert.Contains(t, v.Error.Message, "as part of the tree cancel of "+root)
		require.NotNil(t, v.Cancel, id)
		assert.Equal(t, bulk, v.Cancel.Bulk, "each run records the tree cancel's bulk id: %s", id)
	}

	r = p.Orbit("run", "cancel", "--tree", root)
	assert.Equal(t, 2, r.Code, "nothing left to cancel: %s", r)
	assert.Contains(t, r.Stderr, "no run below it is live")
}

// TestATreeOfChildRunsIsPausedAndUnpaused: orbit run pause --tree --now
// pauses every live run below the bomb's root (which has finished) as one
// bulk operation, each run.paused recording its id and that it was paused
// now; no run starts while they are paused; unpause --tree lets them all
// go on, under a bulk id of its own.
func TestATreeOfChildRunsIsPausedAndUnpaused(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	root, live := startBomb(t, p)

	r := p.Orbit("run", "pause", "--tree", "--dry-run", root)
	assert.Equal(t, 0, r.Code, r.String())
	assert.ElementsMatch(t, live, strings.Fields(r.Stdout), "the dry run lists the live runs")
	for _, v := range bombRuns(t, p) {
		assert.False(t, v.Paused, "a dry run pauses nothing: %s", v.ID)
	}

	r = p.Orbit("run", "pause", "--tree", "--now", "--reason", "hold the tree", root)
	require.Equal(t, 0, r.Code, r.String())
	assert.ElementsMatch(t, live, strings.Fields(r.Stdout))
	bulk := bulkID(t, r.Stderr, len(live), "paused")
	total := len(bombRuns(t, p))
	for _, id := range live {
		assert.True(t, runView(t, p, id).Paused, id)
		d := lastOfType[events.RunPausedData](t, p, id, events.RunPaused)
		assert.Equal(t, bulk, d.Bulk, id)
		assert.True(t, d.Now, id)
		assert.Equal(t, "hold the tree", d.Reason)
	}
	r = p.Orbit("run", "pause", "--tree", root)
	assert.Equal(t, 2, r.Code, "nothing left to pause: %s", r)
	assert.Contains(t, r.Stderr, "nor any run below it is live and not paused")

	r = p.Orbit("run", "unpause", "--tree", root)
	require.Equal(t, 0, r.Code, r.String())
	assert.ElementsMatch(t, live, strings.Fields(r.Stdout))
	again := bulkID(t, r.Stderr, len(live), "unpaused")
	assert.NotEqual(t, bulk, again)
	for _, id := range live {
		v := runView(t, p, id)
		assert.False(t, v.Paused, id)
		assert.False(t, events.Terminal(v.State), "%s goes on: %s", id, v.State)
		assert.Equal(t, again, lastOfType[events.RunUnpausedData](t, p, id, events.RunUnpaused).Bulk, id)
	}
	assert.Len(t, bombRuns(t, p), total, "the tree started no run while paused, nor on unpause: it was full")

	r = p.Orbit("run", "pause", "--tree")
	assert.Equal(t, 2, r.Code, r.String())
	assert.Contains(t, r.Stderr, "--tree needs the run id")
}

// bulkID is the bulk operation's id in a pause's stderr, which says that n
// runs were verb.
func bulkID(t *testing.T, stderr string, n int, verb string) string {
	t.Helper()
	prefix := strconv.Itoa(n) + " run(s) " + verb + " as bulk operation "
	i := strings.Index(stderr, prefix)
	require.GreaterOrEqual(t, i, 0, stderr)
	return strings.Fields(stderr[i+len(prefix):])[0]
}

// lastOfType decodes the last event of type typ of run id.
func lastOfType[D any](t *testing.T, p *testkit.Project, id, typ string) D {
	t.Helper()
	evs := orbitJSON[[]events.Event](t, p, "run", "events", "--json", "--type", typ, id)
	require.NotEmpty(t, evs, "%s of %s", typ, id)
	var d D
	require.NoError(t, evs[len(evs)-1].Decode(&d))
	return d
}
