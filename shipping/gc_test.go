package shipping_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/shipping"
)

// runs records run.requested for each run, and run.finished (success)
// for those finished.
func (r *rig) runs(live []string, finished ...string) {
	r.t.Helper()
	for _, run := range append(append([]string{}, live...), finished...) {
		_, err := r.log.Append(r.ctx, events.Event{ID: events.DecisionID(events.RunRequested, run), Type: events.RunRequested, RunID: run, Job: "task_local_pipeline"},
			events.RunRequestedData{JobName: "task_local_pipeline", Job: json.RawMessage(`{}`)})
		require.NoError(r.t, err)
	}
	for _, run := range finished {
		_, err := r.log.Append(r.ctx, events.Event{Type: events.RunFinished, RunID: run, Job: "task_local_pipeline"}, events.RunFinishedData{State: events.StateSuccess})
		require.NoError(r.t, err)
	}
}

// outcomes maps each entry of list (by run for worktrees, by branch for
// branches) to "outcome: reason".
func outcomes(list []shipping.GCEntry) map[string]string {
	out := map[string]string{}
	for _, e := range list {
		key := e.RunID
		if e.Kind != shipping.GCWorktree {
			key = e.Branch
		}
		out[key] = e.Outcome + ": " + e.Reason
	}
	return out
}

func TestGCReapsOnlyTheCleanWorktreesOfFinishedRuns(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	ids := []string{r.add(shipping.NewTask{Title: "done"}), r.add(shipping.NewTask{Title: "dirty"}), r.add(shipping.NewTask{Title: "running"})}
	var paths []string
	for i, id := range ids {
		paths = append(paths, r.setup([]string{"RUNDONE", "RUNDIRTY", "RUNLIVE"}[i], id)["workspace_path"].(string))
	}
	r.runs([]string{"RUNLIVE"}, "RUNDONE", "RUNDIRTY")
	write(t, paths[1], "forgotten.txt", "nobody committed me\n")
	require.NoError(t, os.MkdirAll(filepath.Join(shipping.WorktreesDir(r.root), "stray"), 0o755))

	recent, err := r.svc.GC(r.ctx, shipping.GCOptions{Worktrees: true})
	require.NoError(t, err)
	assert.Contains(t, outcomes(recent.Worktrees)["RUNDONE"], "kept: its run finished", "within the default grace of an hour")
	assert.Contains(t, outcomes(recent.Worktrees)["RUNDONE"], "within the grace of 1h")
	assert.Empty(t, recent.Branches, "only the kind asked for")

	later := time.Now().Add(2 * time.Hour)
	dry, err := r.svc.GC(r.ctx, shipping.GCOptions{Worktrees: true, Now: later})
	require.NoError(t, err)
	assert.True(t, dry.DryRun)
	assert.Equal(t, map[string]string{
		"RUNDONE":  "would_remove: its run is success and it holds no change",
		"RUNDIRTY": "kept: it has changes nobody committed: forgotten.txt",
		"RUNLIVE":  "kept: its run is pending",
		"stray":    "kept: no run stray in the log: not made by Orbit",
	}, outcomes(dry.Worktrees))
	assert.DirExists(t, paths[0], "a dry run removes nothing")

	applied, err := r.svc.GC(r.ctx, shipping.GCOptions{Apply: true, Worktrees: true, Now: later})
	require.NoError(t, err)
	got := map[string]string{}
	for _, w := range applied.Worktrees {
		got[w.RunID] = w.Outcome
	}
	assert.Equal(t, map[string]string{"RUNDONE": shipping.GCRemoved, "RUNDIRTY": shipping.GCKept, "RUNLIVE": shipping.GCKept, "stray": shipping.GCKept}, got)
	assert.NoDirExists(t, paths[0])
	assert.DirExists(t, paths[1])
	assert.DirExists(t, paths[2])
	assert.NotEmpty(t, r.git(r.repo, "rev-parse", "--verify", "orbit/"+ids[0]+"-RUNDONE"), "a worktree's removal keeps its branch")
}

// TestGCRemovesOnlyOrbitsBranchesWhoseCommitsAreElsewhere: of the branches
// the log says Orbit made, a finished run's branch whose commits are all
// on another ref goes (with its worktree); one checked out in a worktree
// kept for its changes stays; one with a commit nothing else has stays
// until its task is archived and --force says so; a live run's stays. A
// Groundhog scratch branch goes once its task is done, unless it holds the
// work of a failed attempt. A user's branches, named like Orbit's, are
// never looked at.
func TestGCRemovesOnlyOrbitsBranchesWhoseCommitsAreElsewhere(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	merged, dirty, unmerged, live := r.add(shipping.NewTask{Title: "merged"}), r.add(shipping.NewTask{Title: "dirty"}),
		r.add(shipping.NewTask{Title: "unmerged"}), r.add(shipping.NewTask{Title: "live"})
	r.setup("RUNM", merged)
	dirtyPath := r.setup("RUND", dirty)["workspace_path"].(string)
	unmergedPath := r.setup("RUNU", unmerged)["workspace_path"].(string)
	r.setup("RUNL", live)
	write(t, dirtyPath, "forgotten.txt", "nobody committed me\n")
	write(t, unmergedPath, "work.txt", "committed, never pushed\n")
	r.git(unmergedPath, "add", "work.txt")
	r.git(unmergedPath, "commit", "--quiet", "-m", "work nobody else has")

	// A Groundhog task, done, whose runs left two scratch branches: one at
	// the task branch's commit, one with a failed attempt's work.
	gh := r.add(shipping.NewTask{Title: "groundhog"})
	r.git(r.repo, "branch", "groundhog/"+gh+"/day-1", "main")
	r.git(r.repo, "switch", "--quiet", "-c", "groundhog/"+gh+"/day-2")
	write(t, r.repo, "attempt.txt", "a failed attempt's work\n")
	r.git(r.repo, "add", "attempt.txt")
	r.git(r.repo, "commit", "--quiet", "-m", "capture")
	r.git(r.repo, "switch", "--quiet", "main")
	for day := 1; day <= 2; day++ {
		_, err := r.log.Append(r.ctx, events.Event{Type: events.GroundhogAttempt, TaskID: gh, RunID: "GHRUN"},
			events.GroundhogAttemptData{Attempt: events.Attempt{Checkpoint: "c1", Attempt: day, Day: day}, RunID: "GHRUN",
				TaskBranch: "main", ScratchBranch: "groundhog/" + gh + "/day-" + string(rune('0'+day)), SnapshotRef: r.git(r.repo, "rev-parse", "main")})
		require.NoError(t, err)
	}
	_, err := r.svc.Update(r.ctx, shipping.TaskChange{TaskID: gh, Status: events.TaskDone, By: "test"})
	require.NoError(t, err)

	// A user's branches, named like Orbit's, with commits of their own.
	r.git(r.repo, "switch", "--quiet", "-c", "orbit/feature")
	write(t, r.repo, "mine.txt", "a person's work\n")
	r.git(r.repo, "add", "mine.txt")
	r.git(r.repo, "commit", "--quiet", "-m", "mine")
	r.git(r.repo, "switch", "--quiet", "main")
	for _, b := range []string{"orbit/" + merged + "-RUNM-mine", "groundhog/" + gh + "/day-3"} {
		r.git(r.repo, "branch", b, "orbit/feature")
	}
	r.runs([]string{"RUNL"}, "RUNM", "RUND", "RUNU", "GHRUN")

	later := time.Now().Add(2 * time.Hour)
	dry, err := r.svc.GC(r.ctx, shipping.GCOptions{Now: later})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{
		"orbit/" + merged + "-RUNM":   "would_remove: every commit it holds is on another branch, a remote or a tag",
		"orbit/" + dirty + "-RUND":    "kept: it is checked out at " + canonical(t, dirtyPath),
		"orbit/" + unmerged + "-RUNU": "kept: it holds 1 commit(s) no other branch, remote or tag has (once its task is archived, --force removes it)",
		"orbit/" + live + "-RUNL":     "kept: its run is pending",
		"groundhog/" + gh + "/day-1":  "would_remove: every commit it holds is on another branch, a remote or a tag",
		"groundhog/" + gh + "/day-2":  "kept: it holds 1 commit(s) no other branch, remote or tag has (once its task is archived, --force removes it)",
	}, outcomes(dry.Branches))
	assert.Equal(t, "would_remove: its run is success and it holds no change", outcomes(dry.Worktrees)["RUNU"],
		"the unmerged branch's worktree goes: its commit stays on the branch")

	applied, err := r.svc.GC(r.ctx, shipping.GCOptions{Apply: true, Now: later})
	require.NoError(t, err)
	assert.Equal(t, shipping.GCRemoved, applied.Branches[indexOf(applied.Branches, "orbit/"+merged+"-RUNM")].Outcome)
	branches := r.git(r.repo, "branch", "--format=%(refname:short)")
	for _, gone := range []string{"orbit/" + merged + "-RUNM", "groundhog/" + gh + "/day-1"} {
		assert.NotContains(t, strings.Fields(branches), gone)
	}
	for _, kept := range []string{"orbit/" + dirty + "-RUND", "orbit/" + unmerged + "-RUNU", "orbit/" + live + "-RUNL",
		"groundhog/" + gh + "/day-2", "orbit/" + merged + "-RUNM-mine", "orbit/feature", "groundhog/" + gh + "/day-3", "main"} {
		assert.Contains(t, strings.Fields(branches), kept)
	}

	// Archived, the unmerged task's branch goes with --force only.
	_, err = r.svc.Archive(r.ctx, unmerged, "test", "abandoned")
	require.NoError(t, err)
	again, err := r.svc.GC(r.ctx, shipping.GCOptions{Apply: true, Branches: true, Now: later})
	require.NoError(t, err)
	assert.Equal(t, "kept: it holds 1 commit(s) no other branch, remote or tag has (its task is archived: --force removes it)",
		outcomes(again.Branches)["orbit/"+unmerged+"-RUNU"])
	forced, err := r.svc.GC(r.ctx, shipping.GCOptions{Apply: true, Branches: true, Force: true, Now: later})
	require.NoError(t, err)
	assert.Equal(t, "removed: it holds 1 commit(s) no other branch, remote or tag has, dropped by --force: its task is archived",
		outcomes(forced.Branches)["orbit/"+unmerged+"-RUNU"])
	assert.Contains(t, outcomes(forced.Branches)["groundhog/"+gh+"/day-2"], "kept: ", "a done task's failed attempt is not archived")

	final, err := r.svc.GC(r.ctx, shipping.GCOptions{Now: later})
	require.NoError(t, err)
	for _, e := range append(final.Worktrees, final.Branches...) {
		assert.Equal(t, shipping.GCKept, e.Outcome, "a second pass finds nothing more: %+v", e)
	}
}

func indexOf(list []shipping.GCEntry, branch string) int {
	for i, e := range list {
		if e.Branch == branch {
			return i
		}
	}
	return -1
}

// canonical is path with its symbolic links resolved, as git lists it.
func canonical(t *testing.T, path string) string {
	t.Helper()
	real, err := filepath.EvalSymlinks(path)
	require.NoError(t, err)
	return real
}

func TestGraceStringDropsZeroTails(t *testing.T) {
	t.Parallel()
	for d, want := range map[time.Duration]string{
		time.Hour: "1h", 30 * time.Minute: "30m", 90 * time.Minute: "1h30m", 90 * time.Second: "1m30s", 0: "0s", 2*time.Hour + 5*time.Second: "2h0m5s",
	} {
		assert.Equal(t, want, shipping.GraceString(d), "%v", d)
	}
}
