package retention_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/runrig"
	"github.com/orbitrun/orbit/internal/testkit"
	"github.com/orbitrun/orbit/projector"
	"github.com/orbitrun/orbit/retention"
)

// rig is a signed log, live views folded from it, and a collector.
type rig struct {
	t       *testing.T
	ctx     context.Context
	log     *events.Log
	keyFile string
	views   *projector.Projector
	root    string
}

func newRig(t *testing.T) *rig {
	t.Helper()
	root := t.TempDir()
	key := filepath.Join(root, "creds", events.LogKeyFile)
	l := testkit.StartLog(t, events.Config{LogKeyFile: key, MakeLogKey: true})
	r := rigOn(t, l, root)
	r.keyFile = key
	return r
}

// rigOn is a rig on the log l, its views and archives under root.
func rigOn(t *testing.T, l *events.Log, root string) *rig {
	t.Helper()
	p := runrig.Views(t, l, filepath.Join(root, "views.db"))
	return &rig{t: t, ctx: testkit.Context(t), log: l, views: p, root: root}
}

// run appends a finished run of job: requested, started, a step, finished;
// with parent, a child run of it. It ends in state.
func (r *rig) run(id, job, parent, state string) {
	r.t.Helper()
	req := events.RunRequestedData{JobName: job}
	if parent != "" {
		req.Parent = &events.RunLink{RunID: parent, StepKey: "call"}
	}
	evs := []struct {
		ev      events.Event
		payload any
	}{
		{events.Event{Type: events.RunRequested, ID: events.DecisionID(events.RunRequested, id)}, req},
		{events.Event{Type: events.RunStarted}, events.RunStartedData{}},
		{events.Event{Type: events.StepStarted, StepKey: "s", ID: events.DecisionID(events.StepStarted, id, "s", "1")}, events.StepStartedData{Attempt: 1}},
		{events.Event{Type: events.StepFinished, StepKey: "s", ID: events.DecisionID(events.StepFinished, id, "s", "1")}, events.StepFinishedData{Attempt: 1, State: events.StateSuccess, Output: id}},
	}
	if state != events.StateRunning {
		evs = append(evs, struct {
			ev      events.Event
			payload any
		}{events.Event{Type: events.RunFinished, ID: events.RunFinishedID(id, 0)}, events.RunFinishedData{State: state}})
	}
	for _, e := range evs {
		e.ev.RunID, e.ev.Job = id, job
		_, err := r.log.Append(r.ctx, e.ev, e.payload)
		require.NoError(r.t, err)
	}
}

func (r *rig) collector(policy assets.RetentionConfig, after func(context.Context) error) *retention.Collector {
	return retention.New(retention.Config{Log: r.log, Views: r.views, Root: r.root,
		Policy:       func() assets.RetentionConfig { return policy },
		AfterCollect: after,
		Now:          func() time.Time { return time.Now().Add(48 * time.Hour) }})
}

// archivedViews folds the archive a pass wrote, verified against the
// log's key, into views of its own (orbit replay --from-archive), closed
// at the end of the test.
func (r *rig) archivedViews(archive string) *projector.Projector {
	r.t.Helper()
	a, err := events.ReadArchive(archive)
	require.NoError(r.t, err)
	src, err := events.NewArchiveSource(r.keyFile, a)
	require.NoError(r.t, err)
	path := filepath.Join(r.t.TempDir(), "archived.db")
	require.NoError(r.t, projector.Rebuild(r.ctx, src, path, 0))
	p, err := projector.Open(r.ctx, projector.Config{Path: path, Source: src})
	require.NoError(r.t, err)
	r.t.Cleanup(func() { p.Close() })
	return p
}

func (r *rig) has(id string) bool {
	_, err := r.views.RunView(r.ctx, id)
	return err == nil
}

// TestAPassArchivesRemovesAndRebuilds: runs of job a beyond the one kept
// per job and a whole finished tree older than the policy's age are
// archived and removed; a tree with a live child, and the newest run of
// each job, stay. After the pass the views hold only what the log
// retains (replay --verify finds no difference), audit passes, the
// archive replays to the removed runs' views, a snapshot was taken, and
// AfterCollect was called. A dry run before it removed nothing.
func TestAPassArchivesRemovesAndRebuilds(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.run("A1", "a", "", events.StateSuccess)
	r.run("A2", "a", "", events.StateFailed)
	r.run("A3", "a", "", events.StateSuccess)
	r.run("P", "b", "", events.StateSuccess)
	r.run("C", "child", "P", events.StateSuccess)
	r.run("Q", "b", "", events.StateSuccess)
	r.run("D", "child", "Q", events.StateRunning) // Q's tree is live
	r.run("Z", "b", "", events.StateSuccess)
	last, err := r.log.LastSeq(r.ctx)
	require.NoError(t, err)
	require.NoError(t, r.views.WaitFor(r.ctx, last))

	calls := 0
	policy := assets.RetentionConfig{Runs: assets.RunRetention{KeepPerJob: 1}}
	c := r.collector(policy, func(context.Context) error { calls++; return nil })
	dry, err := c.Collect(r.ctx, true)
	require.NoError(t, err)
	assert.Equal(t, []string{"A1", "A2", "C", "P"}, dry.Runs)
	assert.True(t, r.has("A1"))
	assert.Zero(t, calls, "a dry run calls nothing after it")

	rep, err := c.Collect(r.ctx, false)
	require.NoError(t, err)
	assert.Equal(t, []string{"A1", "A2", "C", "P"}, rep.Runs)
	assert.Equal(t, 20, rep.Events)
	assert.Len(t, rep.Records, 1)
	assert.Equal(t, 1, calls)
	for _, id := range []string{"A1", "A2", "C", "P"} {
		assert.False(t, r.has(id), id)
	}
	for _, id := range []string{"A3", "Q", "D", "Z"} {
		assert.True(t, r.has(id), id)
	}

	audit, err := r.log.Audit(r.ctx)
	require.NoError(t, err)
	assert.Empty(t, audit.Problems)
	assert.EqualValues(t, 20, audit.Removed)
	verify, err := r.views.Replay(r.ctx, true)
	require.NoError(t, err)
	assert.Empty(t, verify.Differences)
	// The snapshot holds what the log retains: views restored from it
	// pass the anchor check and show the kept runs alone.
	snap, err := os.ReadFile(projector.SnapshotPath(filepath.Join(r.root, "views.db")))
	require.NoError(t, err)
	restored := filepath.Join(t.TempDir(), "views.db")
	require.NoError(t, os.WriteFile(projector.SnapshotPath(restored), snap, 0o600))
	fromSnap, err := projector.Open(r.ctx, projector.Config{Path: restored, Source: r.log})
	require.NoError(t, err)
	require.NoError(t, fromSnap.CheckLog(r.ctx))
	_, err = fromSnap.RunView(r.ctx, "A3")
	assert.NoError(t, err)
	_, err = fromSnap.RunView(r.ctx, "A1")
	assert.Error(t, err)
	require.NoError(t, fromSnap.Close())

	archived := r.archivedViews(rep.Archive)
	p, err := archived.RunView(r.ctx, "P")
	require.NoError(t, err)
	assert.Equal(t, events.StateSuccess, p.State)
	assert.Equal(t, []string{"C"}, p.Children)
	require.Len(t, p.Steps, 1)
	assert.Equal(t, "P", p.Steps[0].Output)

	// Nothing more to remove: a second pass removes nothing and still
	// ends with AfterCollect.
	rep, err = c.Collect(r.ctx, false)
	require.NoError(t, err)
	assert.Empty(t, rep.Runs)
	assert.Equal(t, 2, calls)
}

// TestNoPolicyRemovesNothing: without a retention block a pass selects
// nothing.
func TestNoPolicyRemovesNothing(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.run("A1", "a", "", events.StateSuccess)
	rep, err := r.collector(assets.RetentionConfig{}, nil).Collect(r.ctx, false)
	require.NoError(t, err)
	assert.Empty(t, rep.Runs)
	assert.True(t, r.has("A1"))
}

// TestOlderThan: runs that ended longer ago than older_than go, whatever
// keep_per_job.
func TestOlderThan(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.run("A1", "a", "", events.StateSuccess)
	last, err := r.log.LastSeq(r.ctx)
	require.NoError(t, err)
	require.NoError(t, r.views.WaitFor(r.ctx, last))
	sel, err := retention.Select(r.ctx, r.views, assets.RetentionConfig{Runs: assets.RunRetention{OlderThan: 72 * time.Hour}}, time.Now().Add(48*time.Hour))
	require.NoError(t, err)
	assert.Empty(t, sel.Runs)
	sel, err = retention.Select(r.ctx, r.views, assets.RetentionConfig{Runs: assets.RunRetention{OlderThan: 24 * time.Hour}}, time.Now().Add(48*time.Hour))
	require.NoError(t, err)
	assert.Equal(t, []string{"A1"}, sel.Runs)
}

// TestTheEngineLoopAppliesThePolicyEveryInterval: Run makes a pass every
// retention.every (short here), removing what the policy lets go and
// calling AfterCollect each time.
func TestTheEngineLoopAppliesThePolicyEveryInterval(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.run("A1", "a", "", events.StateSuccess)
	r.run("A2", "a", "", events.StateSuccess)
	passes := make(chan struct{}, 16)
	c := r.collector(assets.RetentionConfig{Runs: assets.RunRetention{KeepPerJob: 1}, Every: 50 * time.Millisecond},
		func(context.Context) error { passes <- struct{}{}; return nil })
	ctx, cancel := context.WithCancel(r.ctx)
	done := make(chan struct{})
	go func() { defer close(done); c.Run(ctx) }()
	for range 2 {
		select {
		case <-passes:
		case <-r.ctx.Done():
			t.Fatal("no pass")
		}
	}
	cancel()
	<-done
	assert.False(t, r.has("A1"))
	assert.True(t, r.has("A2"))
}

// task appends a task created and moved to status.
func (r *rig) task(id, status string) {
	r.t.Helper()
	_, err := r.log.Append(r.ctx, events.Event{Type: events.TaskCreated, TaskID: id}, events.TaskCreatedData{Title: id, Workspace: "/w", Branch: "b"})
	require.NoError(r.t, err)
	_, err = r.log.Append(r.ctx, events.Event{Type: events.TaskStatusChanged, TaskID: id}, events.TaskStatusChangedData{Status: status})
	require.NoError(r.t, err)
}

// TestDoneAndArchivedTasksGo: tasks done or archived and older than
// tasks.older_than are archived and removed; one in progress stays; the
// archive replays them and audit passes.
func TestDoneAndArchivedTasksGo(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.task("T-1", events.TaskDone)
	r.task("T-2", events.TaskArchived)
	r.task("T-3", events.TaskInProgress)
	rep, err := r.collector(assets.RetentionConfig{Tasks: assets.TaskRetention{OlderThan: 24 * time.Hour}}, nil).Collect(r.ctx, false)
	require.NoError(t, err)
	assert.Equal(t, []string{"T-1", "T-2"}, rep.Tasks)
	assert.Empty(t, rep.Runs)
	for id, kept := range map[string]bool{"T-1": false, "T-2": false, "T-3": true} {
		_, err := r.views.Task(r.ctx, id)
		assert.Equal(t, kept, err == nil, id)
	}
	audit, err := r.log.Audit(r.ctx)
	require.NoError(t, err)
	assert.Empty(t, audit.Problems)
	archived := r.archivedViews(rep.Archive)
	tasks, err := archived.Tasks(r.ctx)
	require.NoError(t, err)
	require.Len(t, tasks, 2)
	assert.Equal(t, events.TaskDone, tasks[0].Status)
}

// TestARunMadeLiveAgainDuringAPassKeepsItsHistory: a child run made live
// again (a budget raised) after a pass selected its tree, before the
// pass's export and record, keeps its whole tree in the log: the record
// names only the other runs, the revived child's first events are still
// read, and audit passes. Without the check before the record its early
// history was purged while it went on.
func TestARunMadeLiveAgainDuringAPassKeepsItsHistory(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.run("A1", "a", "", events.StateSuccess)
	r.run("P", "b", "", events.StateSuccess)
	r.run("C", "child", "P", events.StateBudgetExhausted)
	c := r.collector(assets.RetentionConfig{Runs: assets.RunRetention{OlderThan: 24 * time.Hour}}, nil)
	c.SetAfterSelect(func() {
		_, err := r.log.Append(r.ctx, events.Event{Type: events.RunBudgetRaised, RunID: "C", Job: "child",
			ID: events.RunBudgetRaisedID("C", 1)}, events.RunBudgetRaisedData{Raise: 1, MaxTokens: 1000})
		require.NoError(t, err)
	})
	rep, err := c.Collect(r.ctx, false)
	require.NoError(t, err)
	assert.Equal(t, []string{"A1"}, rep.Runs)
	assert.Contains(t, rep.Kept, "made live again")
	evs, err := r.log.Read(r.ctx, events.FollowOptions{Filters: []string{events.RunFilter("C")}})
	require.NoError(t, err)
	require.NotEmpty(t, evs)
	assert.Equal(t, events.RunRequested, evs[0].Type, "the revived run's history is whole")
	evs, err = r.log.Read(r.ctx, events.FollowOptions{Filters: []string{events.RunFilter("P")}})
	require.NoError(t, err)
	assert.Len(t, evs, 5, "its parent stays with it")
	recs, err := r.log.Removals(r.ctx)
	require.NoError(t, err)
	require.Len(t, recs, 1)
	assert.Equal(t, []string{"A1"}, recs[0].Runs)
	audit, err := r.log.Audit(r.ctx)
	require.NoError(t, err)
	assert.Empty(t, audit.Problems)
}

// TestALogThatDeniesPurgesIsSaidOnce: on a log whose event stream denies
// purges (made before retention) a pass archives and removes nothing, and
// says why in its report every time, but in the engine's log once.
func TestALogThatDeniesPurgesIsSaidOnce(t *testing.T) {
	t.Parallel()
	ctx := testkit.Context(t)
	l := testkit.StartLog(t, events.Config{Listen: "127.0.0.1:0"})
	js, err := jetstream.New(testkit.DialEngine(t, l.ClientURL(), l.CredsDir()))
	require.NoError(t, err)
	testkit.RemakeDenyingPurges(ctx, t, js)
	// The views start on the remade stream: deleting a stream deletes
	// the consumers on it, the projector's among them.
	r := rigOn(t, l, t.TempDir())
	r.run("A1", "a", "", events.StateSuccess)
	r.run("A2", "a", "", events.StateSuccess)

	var said testkit.SyncBuffer
	c := retention.New(retention.Config{Log: l, Views: r.views, Root: r.root,
		Policy: func() assets.RetentionConfig { return assets.RetentionConfig{Runs: assets.RunRetention{KeepPerJob: 1}} },
		Now:    func() time.Time { return time.Now().Add(48 * time.Hour) }, Logger: slog.New(slog.NewTextHandler(&said, nil))})
	for range 3 {
		rep, err := c.Collect(r.ctx, false)
		require.NoError(t, err)
		assert.Contains(t, rep.Kept, "denies purges")
		assert.Empty(t, rep.Runs)
		assert.Empty(t, rep.Archive)
	}
	assert.Equal(t, 1, strings.Count(said.String(), "denies purges"), said.String())
	assert.True(t, r.has("A1"))
}
