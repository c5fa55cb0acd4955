package shipping_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/shipping"
)

func TestListBacklogOrdersAndLeavesOutWhatHeldFilesBlock(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	low := r.add(shipping.NewTask{Title: "low", Priority: "low", ContextFiles: []string{"low.txt"}})
	plain := r.add(shipping.NewTask{Title: "no priority", ContextFiles: []string{"plain.txt"}})
	urgent := r.add(shipping.NewTask{Title: "urgent", Priority: "critical", ContextFiles: []string{"src/**"}})
	blocked := r.add(shipping.NewTask{Title: "shares src", Priority: "high", ContextFiles: []string{"src/a.go"}})
	waiting := r.add(shipping.NewTask{Title: "waits for low", Dependencies: []string{low}})
	r.add(shipping.NewTask{Title: "only proposed", Status: events.TaskProposed})
	// A gate of another run holds urgent's files.
	res := r.must("reserve_locks", "GATE", "reserve", map[string]any{"task_ids": []any{urgent}})
	require.Equal(t, true, res["reserved"])

	out := r.must("list_backlog_tasks", "AUTO", "list", map[string]any{})
	assert.Equal(t, []any{plain, low}, out["task_ids"], "medium (unset) before low; held files and undone dependencies left out")
	assert.Equal(t, []any{[]any{plain}, []any{low}}, out["bundles"])
	assert.Equal(t, 2, out["task_count"])
	assert.Equal(t, []any{
		map[string]any{"id": urgent, "reason": "context_lock_conflict", "conflicts": []any{
			map[string]any{"requested_file": "src/**", "locking_task_id": urgent}}},
		map[string]any{"id": blocked, "reason": "context_lock_conflict", "conflicts": []any{
			map[string]any{"requested_file": "src/a.go", "locking_task_id": urgent}}},
	}, out["excluded"])

	capped := r.must("list_backlog_tasks", "AUTO", "list", map[string]any{"max_bundles": 1})
	assert.Equal(t, []any{plain}, capped["task_ids"])

	explicit := r.must("list_backlog_tasks", "AUTO", "list", map[string]any{"task_ids": []any{waiting, urgent}})
	assert.Equal(t, []any{waiting, urgent}, explicit["task_ids"], "explicit ids are taken as they are")
	assert.NotContains(t, explicit, "excluded")
}

func TestValidateBundlesNamesWhatIsWrong(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	ok := r.must("validate_bundles", "R", "v", map[string]any{"bundles": []any{[]any{"T-1"}, []any{"T-2", "T-3"}},
		"max_bundle_size": 2, "known_task_ids": []any{"T-1", "T-2", "T-3"}})
	assert.Equal(t, 2, ok["bundle_count"])
	_, err := r.call("validate_bundles", "R", "v", map[string]any{"bundles": []any{[]any{"T-1", "T-2"}, []any{"T-1"}, []any{}},
		"max_bundle_size": 1, "known_task_ids": []any{"T-1"}})
	require.Error(t, err)
	for _, want := range []string{"bundle 1 has 2 tasks, more than 1", "T-2 (bundle 1) is not a listed task", "T-1 is in bundles 1 and 2", "bundle 3 is empty"} {
		assert.ErrorContains(t, err, want)
	}
}

func TestReserveLocksIsAllOrNothingAndWaitsForDependencies(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	dep := r.add(shipping.NewTask{Title: "first"})
	a := r.add(shipping.NewTask{Title: "a", ContextFiles: []string{"greet.txt", "a.txt"}})
	b := r.add(shipping.NewTask{Title: "b", ContextFiles: []string{"b.txt", "greet.txt"}, Dependencies: []string{dep}})
	c := r.add(shipping.NewTask{Title: "c", ContextFiles: []string{"c.txt"}})

	got := r.must("reserve_locks", "GATE-A", "wait/1/reserve", map[string]any{"task_ids": []any{a}, "ttl_seconds": 60})
	assert.Equal(t, true, got["reserved"])
	assert.Equal(t, "GATE-A", got["reservation_id"])
	assert.Equal(t, []any{"greet.txt", "a.txt"}, got["reserved_files"])
	assert.NotEmpty(t, got["expires_at"])

	waiting := r.must("reserve_locks", "GATE-B", "wait/1/reserve", map[string]any{"task_ids": []any{b}})
	assert.Equal(t, false, waiting["reserved"])
	assert.Equal(t, []any{dep}, waiting["waiting_on_deps"])
	_, err := r.svc.Update(r.ctx, shipping.TaskChange{TaskID: dep, Status: events.TaskDone})
	require.NoError(t, err)

	held := r.must("reserve_locks", "GATE-B", "wait/2/reserve", map[string]any{"task_ids": []any{b}})
	assert.Equal(t, false, held["reserved"])
	assert.Equal(t, []any{map[string]any{"file": "greet.txt", "held_by": "reservation", "held_by_id": "GATE-A"}}, held["conflicts"])
	free := r.must("reserve_locks", "GATE-C", "reserve", map[string]any{"task_ids": []any{c}})
	assert.Equal(t, true, free["reserved"], "b reserved nothing: c's files are free")
	same := r.must("reserve_locks", "GATE-X", "reserve", map[string]any{"task_ids": []any{a}})
	assert.Equal(t, false, same["reserved"], "a task is held too, not only its files")

	_, err = r.call("release_locks", "GATE-B", "release", map[string]any{"reservation_id": "GATE-A"})
	assert.ErrorContains(t, err, "a run releases its own")
	rel := r.must("release_locks", "GATE-A", "release", map[string]any{"reservation_id": "GATE-A"})
	assert.Equal(t, true, rel["released"])
	assert.Equal(t, false, r.must("release_locks", "GATE-A", "release", map[string]any{"reservation_id": "GATE-A"})["released"])
	now := r.must("reserve_locks", "GATE-B", "wait/3/reserve", map[string]any{"task_ids": []any{b}})
	assert.Equal(t, true, now["reserved"])

	gone := r.add(shipping.NewTask{Title: "dropped"})
	_, err = r.svc.Archive(r.ctx, gone, "test", "not wanted")
	require.NoError(t, err)
	d := r.add(shipping.NewTask{Title: "needs the dropped one", Dependencies: []string{gone}})
	_, err = r.call("reserve_locks", "GATE-D", "reserve", map[string]any{"task_ids": []any{d}})
	require.Error(t, err, "a dependency that can never be done fails at once")
	assert.ErrorContains(t, err, d+" depends on "+gone+", which is archived")
}

func TestGateStarvationIsRecordedAndFailsTheRun(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	_, err := r.call("gate_starvation_fail", "GATE", "starvation_check", map[string]any{"task_ids": []any{"T-3"},
		"conflicts":        []any{map[string]any{"file": "greet.txt", "held_by": "reservation", "held_by_id": "GATE-1"}},
		"max_wait_seconds": 60})
	require.Error(t, err)
	assert.ErrorContains(t, err, "greet.txt held by reservation GATE-1")
	evs, rerr := r.log.Read(r.ctx, events.FollowOptions{Filters: []string{events.EventSubject(events.AggregateRun, "GATE", events.GateStarvation)}})
	require.NoError(t, rerr)
	require.Len(t, evs, 1)
	var d events.GateStarvationData
	require.NoError(t, evs[0].Decode(&d))
	assert.Equal(t, events.GateStarvationData{TaskIDs: []string{"T-3"}, MaxWaitSeconds: 60,
		Conflicts: []events.LockConflict{{File: "greet.txt", HeldBy: "reservation", HeldByID: "GATE-1"}}}, d)
}

func TestUpdateTaskMovesATaskOnce(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	id := r.add(shipping.NewTask{Title: "t"})
	r.setup("RUN", id)
	out := r.must("update_task", "RUN", "mark_review/1/mark_review_one", map[string]any{"task_id": id, "status": events.TaskReview})
	assert.Equal(t, true, out["changed"])
	again := r.must("update_task", "RUN", "mark_review/1/mark_review_one", map[string]any{"task_id": id, "status": events.TaskReview})
	assert.Equal(t, false, again["changed"])
	task := r.task(id)
	assert.Equal(t, events.TaskReview, task.Status)
	var moves []string
	for _, h := range task.History {
		moves = append(moves, h.From+">"+h.To+" by "+h.By)
	}
	assert.Equal(t, []string{">backlog by ", "backlog>in-progress by run:RUN", "in-progress>review by run:RUN"}, moves)

	_, err := r.svc.Update(r.ctx, shipping.TaskChange{TaskID: id, Status: events.TaskDone})
	require.NoError(t, err)
	_, err = r.call("update_task", "RUN2", "x", map[string]any{"task_id": id, "status": events.TaskBacklog})
	assert.ErrorContains(t, err, "done is final")
	_, err = r.call("update_task", "RUN2", "x", map[string]any{"task_id": id, "status": "finished"})
	assert.ErrorContains(t, err, `"finished" is not a status`)
}

func TestAdmissionSkipsTasksShippedMeanwhile(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	a := r.add(shipping.NewTask{Title: "a"})
	b := r.add(shipping.NewTask{Title: "b"})
	adm, err := r.svc.Admission(r.ctx, []string{a}, "worktree_setup")
	require.NoError(t, err)
	assert.Empty(t, adm.Skip)
	_, err = r.svc.Update(r.ctx, shipping.TaskChange{TaskID: a, Status: events.TaskReview})
	require.NoError(t, err)
	adm, err = r.svc.Admission(r.ctx, []string{a}, "worktree_setup")
	require.NoError(t, err)
	assert.Equal(t, a+" is review already: nothing for worktree_setup to do", adm.Skip)
	adm, err = r.svc.Admission(r.ctx, []string{a, b}, "worktree_setup")
	require.NoError(t, err)
	assert.Empty(t, adm.Skip, "a bundle with work left goes on")
	assert.Len(t, adm.Statuses, 2)
	adm, err = r.svc.Admission(r.ctx, []string{"T-404"}, "worktree_setup")
	require.NoError(t, err)
	assert.Empty(t, adm.Skip, "an unknown task goes on, to be refused by the child's admission, named")
}
