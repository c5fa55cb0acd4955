package shipping_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/projector"
	"github.com/orbitrun/orbit/shipping"
)

// The remote base is origin's main freshly fetched: not what the local main
// holds, and the repository's checkout is not touched.
func TestWorktreeSetupStartsFromTheRemoteBaseAndLeavesTheCheckoutAlone(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	id := r.add(shipping.NewTask{Title: "Greet in French", ContextFiles: []string{"greet.txt"}})
	write(t, r.repo, "local.txt", "an unpushed commit\n")
	r.git(r.repo, "add", "local.txt")
	r.git(r.repo, "commit", "--quiet", "-m", "local only")
	localMain := r.git(r.repo, "rev-parse", "main")
	write(t, r.repo, "greet.txt", "a person's uncommitted change\n")
	published := r.pushFromElsewhere("news.txt", "from origin\n")

	out := r.setup("RUN1", id)
	path := filepath.Join(shipping.WorktreesDir(r.root), "RUN1")
	assert.Equal(t, path, out["workspace_path"])
	assert.Equal(t, published, out["base_sha"], "origin's main, fetched")
	assert.Equal(t, "origin/main", out["base_ref"])
	assert.Equal(t, "orbit/"+id+"-RUN1", out["head_ref"])
	assert.Equal(t, published, r.git(path, "rev-parse", "HEAD"))
	assert.NoFileExists(t, filepath.Join(path, "local.txt"))

	assert.Equal(t, localMain, r.git(r.repo, "rev-parse", "main"), "the local base is not moved")
	assert.Equal(t, "main", r.git(r.repo, "branch", "--show-current"))
	assert.Equal(t, "a person's uncommitted change\n", read(t, filepath.Join(r.repo, "greet.txt")))

	task := r.task(id)
	assert.Equal(t, events.TaskInProgress, task.Status)
	assert.Equal(t, path, task.Worktree)
	assert.Equal(t, "orbit/"+id+"-RUN1", task.Branch)
	assert.Equal(t, published, task.BaseSHA)
	assert.Equal(t, []projector.TaskRun{{RunID: "RUN1", Kind: projector.TaskRunShip, At: task.Runs[0].At}}, task.Runs)
	last := task.History[len(task.History)-1]
	assert.Equal(t, projector.TaskTransition{From: events.TaskBacklog, To: events.TaskInProgress, By: "run:RUN1",
		Reason: "workflow admission: test", RunID: "RUN1", At: last.At}, last)

	r.pushFromElsewhere("later.txt", "origin moved on\n")
	again := r.setup("RUN1", id)
	assert.Equal(t, out, again, "a redelivered setup finds what the first made, and the base it recorded")
	assert.Len(t, r.task(id).History, len(task.History), "and records nothing again")

	id2 := r.add(shipping.NewTask{Title: "Local base"})
	local := r.must("worktree_setup", "RUN2", "worktree", map[string]any{"task_id": id2, "base_sync": "local"})
	assert.Equal(t, localMain, local["base_sha"], "base_sync local starts from the local base")
	assert.Equal(t, "main", local["base_ref"])
}

func TestWorktreeSetupCutShortIsFinishedByTheNextCall(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	id := r.add(shipping.NewTask{Title: "Greet"})
	base := r.git(r.repo, "rev-parse", "main")
	// The engine died after git made the branch, before the worktree.
	r.git(r.repo, "branch", "orbit/"+id+"-RUN1", base)
	r.pushFromElsewhere("news.txt", "origin moved meanwhile\n")

	out := r.setup("RUN1", id)
	assert.Equal(t, base, out["base_sha"], "the branch the first call made is the base")
	assert.Equal(t, base, r.git(out["workspace_path"].(string), "rev-parse", "HEAD"))
}

func TestWorktreeSetupAdmitsOnlyWhatAWorkflowMayTake(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	for _, status := range []string{events.TaskProposed, events.TaskBacklog, events.TaskFriction} {
		id := r.add(shipping.NewTask{Title: "admitted from " + status, Status: status})
		r.setup("RUN-"+status, id)
		assert.Equal(t, events.TaskInProgress, r.task(id).Status, status)
	}
	rejected := r.add(shipping.NewTask{Title: "rejected, then shipped"})
	_, err := r.svc.Update(r.ctx, shipping.TaskChange{TaskID: rejected, Status: events.TaskRejected})
	require.NoError(t, err)
	r.setup("RUN-rejected", rejected)
	assert.Equal(t, events.TaskInProgress, r.task(rejected).Status)
	r.setup("RUN-rejected", rejected)

	for _, status := range []string{events.TaskReview, events.TaskDone, events.TaskBlocked, events.TaskSomeday} {
		id := r.add(shipping.NewTask{Title: "refused from " + status})
		_, err := r.svc.Update(r.ctx, shipping.TaskChange{TaskID: id, Status: status, ExecutionSummary: ptr("it was done elsewhere")})
		require.NoError(t, err, status)
		_, err = r.call("worktree_setup", "RUN-x"+status, "worktree", map[string]any{"task_id": id})
		require.Error(t, err, status)
		assert.ErrorContains(t, err, id+" is "+status)
		assert.NoDirExists(t, filepath.Join(shipping.WorktreesDir(r.root), "RUN-x"+status), "a refusal leaves nothing behind")
	}
}

func ptr[T any](v T) *T { return &v }

// shipped is a task whose run has made its worktree, changed greet.txt and
// committed.
func (r *rig) shipped(run, line string) (id, worktree, head string) {
	r.t.Helper()
	id = r.add(shipping.NewTask{Title: "Greet with " + line, ContextFiles: []string{"greet.txt"}})
	out := r.setup(run, id)
	worktree = out["workspace_path"].(string)
	write(r.t, worktree, "greet.txt", "hello\n"+line+"\n")
	c := r.must("git_commit", run, "commit", map[string]any{"task_ids": []any{id}, "workspace_path": worktree, "base_sha": out["base_sha"]})
	return id, worktree, c["commit_sha"].(string)
}

func TestGitCommitNamesTheTaskAndFindsItsCommitAgain(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	id, worktree, head := r.shipped("RUN1", "bonjour")
	assert.Equal(t, id+": Greet with bonjour", r.git(worktree, "log", "-1", "--format=%s"))
	trailers := r.git(worktree, "log", "-1", "--format=%(trailers:key=Orbit-Task,valueonly)%(trailers:key=Orbit-Run,valueonly)")
	assert.Equal(t, id+"\nRUN1", trailers)

	base := r.task(id).BaseSHA
	again := r.must("git_commit", "RUN1", "commit", map[string]any{"task_ids": []any{id}, "workspace_path": worktree, "base_sha": base})
	assert.Equal(t, head, again["commit_sha"], "nothing to commit: the first commit is found")
	assert.Equal(t, "nothing_to_commit", again["decision"])
	assert.Equal(t, true, again["committed"])
	assert.Equal(t, []any{"greet.txt"}, again["committed_files"])

	byRun := r.must("git_commit", "RUN1", "commit", map[string]any{"job_run_id": "RUN1", "workspace_path": worktree, "base_sha": base})
	assert.Equal(t, []string{id}, byRun["committed_task_ids"], "without task_ids, the tasks the run took")

	empty := r.add(shipping.NewTask{Title: "changes nothing"})
	out := r.setup("RUN2", empty)
	nothing := r.must("git_commit", "RUN2", "commit", map[string]any{"task_ids": []any{empty}, "workspace_path": out["workspace_path"], "base_sha": out["base_sha"]})
	assert.Equal(t, true, nothing["skipped_no_diff_expected"])
	assert.Equal(t, false, nothing["committed"])
}

func TestSyncBaseRebasesOntoOriginAndNamesAConflict(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	_, worktree, head := r.shipped("RUN1", "bonjour")
	moved := r.pushFromElsewhere("news.txt", "from origin\n")
	out := r.must("sync_base", "RUN1", "sync_base", map[string]any{"workspace_path": worktree, "base": "main"})
	assert.Equal(t, "rebased", out["decision"])
	assert.Equal(t, moved, out["base_sha"])
	assert.Equal(t, head, out["head_sha_before"])
	assert.Equal(t, moved, r.git(worktree, "rev-parse", "HEAD^"))
	again := r.must("sync_base", "RUN1", "sync_base", map[string]any{"workspace_path": worktree, "base": "main"})
	assert.Equal(t, "up_to_date", again["decision"], "a second call changes nothing")
	assert.Equal(t, out["head_sha"], again["head_sha"])

	r.pushFromElsewhere("greet.txt", "hello\nhallo\n")
	_, err := r.call("sync_base", "RUN1", "sync_base", map[string]any{"workspace_path": worktree, "base": "main"})
	require.Error(t, err)
	assert.ErrorContains(t, err, "greet.txt")
	assert.ErrorContains(t, err, "conflict")
	assert.Equal(t, out["head_sha"], r.git(worktree, "rev-parse", "HEAD"), "the branch is where it was")
	assert.Empty(t, r.git(worktree, "status", "--porcelain"), "the worktree is clean")
}

func TestGitMergeFastForwardsOnceAndRebasesOntoAMovedBase(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	a := r.add(shipping.NewTask{Title: "French", ContextFiles: []string{"french.txt"}})
	b := r.add(shipping.NewTask{Title: "Spanish", ContextFiles: []string{"spanish.txt"}})
	wa := r.setup("RUNA", a)["workspace_path"].(string)
	wb := r.setup("RUNB", b)["workspace_path"].(string)
	write(t, wa, "french.txt", "bonjour\n")
	write(t, wb, "spanish.txt", "hola\n")
	ha := r.must("git_commit", "RUNA", "commit", map[string]any{"task_ids": []any{a}, "workspace_path": wa})["commit_sha"]
	r.must("git_commit", "RUNB", "commit", map[string]any{"task_ids": []any{b}, "workspace_path": wb})
	before := r.git(r.repo, "rev-parse", "main")
	write(t, r.repo, "notes.txt", "a person's untracked notes\n")

	ma := r.must("git_merge", "RUNA", "merge", map[string]any{"workspace_path": wa, "base": "main", "base_sync": "local"})
	assert.Equal(t, ha, r.git(r.repo, "rev-parse", "main"))
	assert.Equal(t, before, ma["base_sha_before"])
	assert.Equal(t, false, ma["already_merged"])
	assert.Equal(t, "bonjour\n", read(t, filepath.Join(r.repo, "french.txt")), "the checkout of main moved with it")

	again := r.must("git_merge", "RUNA", "merge", map[string]any{"workspace_path": wa, "base": "main", "base_sync": "local"})
	assert.Equal(t, true, again["already_merged"], "a resumed run never merges twice")
	assert.Equal(t, ha, r.git(r.repo, "rev-parse", "main"))

	mb := r.must("git_merge", "RUNB", "merge", map[string]any{"workspace_path": wb, "base": "main", "base_sync": "local"})
	assert.Equal(t, ha, r.git(r.repo, "rev-parse", "main^"), "B was rebased onto A's merge")
	assert.Equal(t, mb["base_sha"], r.git(r.repo, "rev-parse", "main"))
	assert.Equal(t, b+": Spanish\n"+a+": French\ninitial", r.git(r.repo, "log", "--format=%s", "main"))
	assert.Equal(t, "a person's untracked notes\n", read(t, filepath.Join(r.repo, "notes.txt")))
}

func TestGitMergeRefusesADirtyCheckoutNamingItAndNeverTouchesIt(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	_, worktree, _ := r.shipped("RUN1", "bonjour")
	before := r.git(r.repo, "rev-parse", "main")
	write(t, r.repo, "README.md", "a person's uncommitted edit\n")

	_, err := r.call("git_merge", "RUN1", "merge", map[string]any{"workspace_path": worktree, "base": "main", "base_sync": "local"})
	require.Error(t, err)
	assert.ErrorContains(t, err, r.git(r.repo, "rev-parse", "--show-toplevel"))
	assert.ErrorContains(t, err, "README.md")
	assert.Equal(t, before, r.git(r.repo, "rev-parse", "main"))
	assert.Equal(t, "a person's uncommitted edit\n", read(t, filepath.Join(r.repo, "README.md")))
}

func TestGitMergeWithTheRemoteBaseRefusesALocalBaseOriginLacks(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	_, worktree, _ := r.shipped("RUN1", "bonjour")
	write(t, r.repo, "local.txt", "never pushed\n")
	r.git(r.repo, "add", "local.txt")
	r.git(r.repo, "commit", "--quiet", "-m", "local only")
	local := r.git(r.repo, "rev-parse", "main")
	remote := r.git(r.repo, "rev-parse", "origin/main")

	_, err := r.call("git_merge", "RUN1", "merge", map[string]any{"workspace_path": worktree, "base": "main", "base_sync": "remote"})
	require.Error(t, err)
	assert.ErrorContains(t, err, local[:12])
	assert.ErrorContains(t, err, remote[:12])
	assert.Equal(t, local, r.git(r.repo, "rev-parse", "main"))
}

func TestGitPushLeasesOnceAndRefusesADivergedOrigin(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	_, worktree, head := r.shipped("RUN1", "bonjour")
	r.must("git_merge", "RUN1", "merge", map[string]any{"workspace_path": worktree, "base": "main", "base_sync": "local"})
	before := r.git(r.origin, "rev-parse", "main")

	out := r.must("git_push", "RUN1", "push", map[string]any{"workspace_path": worktree, "branch": "main"})
	assert.Equal(t, "pushed", out["decision"])
	assert.Equal(t, before, out["remote_sha_before"])
	assert.Equal(t, head, r.git(r.origin, "rev-parse", "main"))
	again := r.must("git_push", "RUN1", "push", map[string]any{"workspace_path": worktree, "branch": "main"})
	assert.Equal(t, "already_pushed", again["decision"], "a resumed run never pushes twice")

	_, w2, _ := r.shipped("RUN2", "hola")
	r.must("git_merge", "RUN2", "merge", map[string]any{"workspace_path": w2, "base": "main", "base_sync": "local"})
	theirs := r.pushFromElsewhere("theirs.txt", "pushed by someone else\n")
	_, err := r.call("git_push", "RUN2", "push", map[string]any{"workspace_path": w2, "branch": "main"})
	require.Error(t, err)
	assert.ErrorContains(t, err, theirs[:12])
	assert.Equal(t, theirs, r.git(r.origin, "rev-parse", "main"), "nothing of theirs is overwritten")

	_, err = r.call("git_push", "RUN2", "push", map[string]any{"workspace_path": w2, "branch": "main", "expected_remote_sha": head})
	require.Error(t, err, "an exact lease on where origin was")
	assert.ErrorContains(t, err, "moved")
	assert.Equal(t, theirs, r.git(r.origin, "rev-parse", "main"))
}

func TestTaskImplementerRoutesByCheckpointPlan(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	plain := r.add(shipping.NewTask{Title: "plain"})
	planned := r.add(shipping.NewTask{Title: "planned", Branch: "main", Plan: "checkpoints:\n  - id: one\n    spec: Do it.\n    success_criteria: [{kind: file_exists, path: a.txt}]\n"})
	assert.Equal(t, "agent", r.must("task_implementer", "R", "route", map[string]any{"task_id": plain})["implementer"])
	assert.Equal(t, "groundhog", r.must("task_implementer", "R", "route", map[string]any{"task_id": planned})["implementer"])
	_, err := r.call("task_implementer", "R", "route", map[string]any{"task_id": "T-404"})
	assert.ErrorContains(t, err, "no task T-404")
}
