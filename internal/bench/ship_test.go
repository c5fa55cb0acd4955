package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/orbitrun/orbit/activity"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/runrig"
	"github.com/orbitrun/orbit/internal/testkit"
	"github.com/orbitrun/orbit/shipping"
)

// BenchmarkShipOverhead measures a task's shipping overhead — the git work
// of the actions worktree_setup, git_commit and git_merge (base_sync
// local), on a real log and views — against the raw git commands that do
// the same, on a small repository (20 files) and a large one (20,000
// files in 200 directories), main checked out in the repository. Each
// cycle edits one tracked file and creates one in the task's worktree.
// The raw cycle, on a copy of the repository, is:
//
//	git worktree add -b B <dir> main; git add -A; git commit;
//	git merge --ff-only B  (in the repository; 4 processes)
//
// which checks nothing: not the task's admission, not a dirty checkout of
// the base, not a base that moved, and records nothing. The task's record
// is made before the timer (it is the backlog's, not the shipment's); the
// worktrees are removed after it.
func BenchmarkShipOverhead(b *testing.B) {
	for _, size := range []struct {
		name  string
		files int
	}{{"small", 20}, {"large", 20000}} {
		b.Run(size.name, func(b *testing.B) {
			// No deadline: the large repository takes minutes on a busy machine.
			ctx := context.Background()
			svc := benchShipping(b)
			orbitDir := benchRepo(b, size.files)
			rawDir := benchRepo(b, size.files)
			rawTrees := b.TempDir()
			action := func(name, run, key string, input map[string]any) map[string]any {
				out, err := svc.Actions()[name].Run(ctx, &activity.ActionCall{RunID: run, Job: "bench", StepKey: key, Attempt: 1, Input: input,
					Emit: func(context.Context, string, any) error { return nil }})
				if err != nil {
					b.Fatalf("%s: %v", name, err)
				}
				m, _ := out.(map[string]any)
				return m
			}
			var orbitTime, rawTime time.Duration
			b.ResetTimer()
			for i := range b.N {
				id, _, err := svc.Create(ctx, shipping.NewTask{Title: "Bench " + strconv.Itoa(i), Workspace: orbitDir, Status: events.TaskBacklog})
				if err != nil {
					b.Fatal(err)
				}
				run := fmt.Sprintf("RUN%06d", i)
				start := time.Now()
				setup := action("worktree_setup", run, "worktree", map[string]any{"task_ids": []any{id}, "base": "main", "base_sync": "local"})
				worktree := setup["workspace_path"].(string)
				benchEdit(b, worktree, i, size.files)
				action("git_commit", run, "commit", map[string]any{"task_ids": []any{id}, "workspace_path": worktree, "base_sha": setup["base_sha"]})
				action("git_merge", run, "merge", map[string]any{"workspace_path": worktree, "base": "main", "base_sync": "local"})
				orbitTime += time.Since(start)

				branch := "task-" + strconv.Itoa(i)
				tree := filepath.Join(rawTrees, branch)
				start = time.Now()
				benchGit(b, rawDir, "worktree", "add", "-q", "-b", branch, tree, "main")
				benchEdit(b, tree, i, size.files)
				benchGit(b, tree, "add", "-A")
				benchGit(b, tree, "commit", "-q", "-m", "task "+strconv.Itoa(i))
				benchGit(b, rawDir, "merge", "-q", "--ff-only", branch)
				rawTime += time.Since(start)

				benchGit(b, orbitDir, "worktree", "remove", "--force", worktree)
				benchGit(b, rawDir, "worktree", "remove", "--force", tree)
			}
			b.StopTimer()
			b.ReportMetric(orbitTime.Seconds()*1000/float64(b.N), "ship-ms")
			b.ReportMetric(rawTime.Seconds()*1000/float64(b.N), "raw-ms")
			b.ReportMetric(orbitTime.Seconds()/rawTime.Seconds(), "ratio")
		})
	}
}

// benchShipping is a shipping Service on a real log and views, its
// worktrees under a temp dir.
func benchShipping(b *testing.B) *shipping.Service {
	b.Helper()
	log := testkit.StartLog(b, events.Config{})
	proj := runrig.Views(b, log, filepath.Join(b.TempDir(), "views.db"))
	cfg := shipping.Config{Log: log, Root: b.TempDir(), GitEnv: gitBenchEnv}
	cfg.ReadViews(proj)
	return shipping.New(cfg)
}
