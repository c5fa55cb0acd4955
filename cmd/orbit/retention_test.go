package main_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/engine"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
	"github.com/orbitrun/orbit/projector"
	"github.com/orbitrun/orbit/retention"
)

// TestRetentionArchivesRemovesAndStillAudits: with retention.runs
// keep_per_job: 1 in the project's configuration, orbit log collect lists
// the two older of three runs and removes nothing; with --apply it
// archives and removes them. orbit audit and orbit replay --verify pass
// on the log that is left, the archive verifies (audit --archive) and
// replays into views that show the removed runs (replay --from-archive),
// and orbit log export archives the run that was kept.
func TestRetentionArchivesRemovesAndStillAudits(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	var ids []string
	for range 3 {
		r := p.Orbit("job", "run", "hello", "--input", `{"name":"Ada"}`)
		require.Equal(t, 0, r.Code, r.String())
		ids = append(ids, strings.TrimSpace(r.Stdout))
	}
	p.WriteFile(".orbit/config.yaml", "retention:\n  runs:\n    keep_per_job: 1\n")

	collect := func(args ...string) retention.Report {
		t.Helper()
		return orbitJSON[retention.Report](t, p, append([]string{"log", "collect", "--json"}, args...)...)
	}
	dry := collect()
	assert.True(t, dry.DryRun)
	assert.ElementsMatch(t, ids[:2], dry.Runs)
	assert.Equal(t, 0, p.Orbit("run", "show", ids[0]).Code, "a dry run removes nothing")

	rep := collect("--apply")
	assert.False(t, rep.DryRun)
	assert.ElementsMatch(t, ids[:2], rep.Runs)
	require.NotEmpty(t, rep.Archive)
	assert.Equal(t, filepath.Join(p.Root, ".orbit", "archive"), filepath.Dir(rep.Archive))
	assert.NotEqual(t, 0, p.Orbit("run", "show", ids[0]).Code, "a removed run is gone from the views")
	assert.Equal(t, 0, p.Orbit("run", "show", ids[2]).Code)

	r := p.Orbit("audit")
	require.Equal(t, 0, r.Code, r.String())
	assert.Contains(t, r.Stdout, ": 0 problems")
	r = p.Orbit("replay", "--verify")
	require.Equal(t, 0, r.Code, r.String())
	assert.Contains(t, r.Stdout, " 0 differences")

	r = p.Orbit("audit", "--archive", rep.Archive)
	require.Equal(t, 0, r.Code, r.String())
	assert.Contains(t, r.Stdout, "signed from sequence")
	assert.Contains(t, r.Stdout, ": 0 problems")

	views := t.TempDir()
	r = p.Orbit("replay", "--from-archive", rep.Archive, "--views", views, "--json")
	require.Equal(t, 0, r.Code, r.String())
	var folded struct {
		Runs []projector.RunView `json:"runs"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.Stdout), &folded), r.Stdout)
	require.Len(t, folded.Runs, 2)
	for _, v := range folded.Runs {
		assert.Contains(t, ids[:2], v.ID)
		assert.Equal(t, events.StateSuccess, v.State)
		assert.Equal(t, "hello", v.Job)
		assert.NotEmpty(t, v.Steps)
	}

	out := filepath.Join(t.TempDir(), "kept.orbit-archive.gz")
	exp := orbitJSON[engine.ExportReply](t, p, "log", "export", "--before", "2099-01-01", "-o", out, "--json")
	assert.Equal(t, []string{ids[2]}, exp.Runs)
	assert.Positive(t, exp.Events)
	r = p.Orbit("log", "export", "--before", "2099-01-01", "-o", out)
	assert.Equal(t, 2, r.Code, "an archive is never written over: %s", r.String())
	r = p.Orbit("log", "export", "--before", "soon")
	assert.Equal(t, 2, r.Code, r.String())
	assert.Contains(t, r.Stderr, "--before")
	r = p.Orbit("audit", "--archive", out)
	require.Equal(t, 0, r.Code, r.String())
	assert.Equal(t, 0, p.Orbit("run", "show", ids[2]).Code, "an export removes nothing")
}

// TestOnlyTheEngineMayPurgeTheLog: the event stream allows a purge by
// subject, which retention uses, but the official nats CLI with the
// reader's or the client's credentials is refused both a purge of a
// run's subject and the removal of one message; the log still audits.
func TestOnlyTheEngineMayPurgeTheLog(t *testing.T) {
	t.Parallel()
	p, natsBin, env := natsCLIProject(t)
	serve(t, p)
	runID := runJob(t, p, "hello")
	require.Equal(t, 0, p.Orbit("nats-context", "--reader", "--name", "retain-reader").Code)
	require.Equal(t, 0, p.Orbit("nats-context", "--name", "retain-client").Code)

	for _, ctx := range []string{"retain-reader", "retain-client"} {
		out, code := runNATS(t, natsBin, env, "--context", ctx, "--timeout", "2s", "stream", "purge", events.EventsStream, "-f", "--subject", events.RunFilter(runID))
		assert.NotEqual(t, 0, code, out)
		assert.Contains(t, out, `Permissions Violation for Publish to "$JS.API.STREAM.PURGE.ORBIT_EVENTS"`, ctx)
		out, code = runNATS(t, natsBin, env, "--context", ctx, "--timeout", "2s", "stream", "rmm", events.EventsStream, "1", "-f")
		assert.NotEqual(t, 0, code, out)
		assert.Contains(t, out, `Permissions Violation for Publish to "$JS.API.STREAM.MSG.DELETE.ORBIT_EVENTS"`, ctx)
	}
	r := p.Orbit("audit")
	require.Equal(t, 0, r.Code, r.String())
	assert.Contains(t, r.Stdout, ": 0 problems")
	assert.Equal(t, 0, p.Orbit("run", "show", runID).Code)
}

// TestARetentionPassLeavesTheBlobsOfTheRunsItRemovedToCollection: of two
// runs whose failed step keeps its stdout as a blob, keep_per_job: 1 lets
// the older go. The archive holds its blob; the log names it no more, so
// the collection the pass ends with removes it once it is older than
// orbit gc's grace (an hour by default, the time a step may take between
// storing a blob and appending the event that names it; here orbit gc
// --grace 1s, as the pass would an hour on), while the kept run's blob
// stays and its output still reads.
func TestARetentionPassLeavesTheBlobsOfTheRunsItRemovedToCollection(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	p.WriteFile(".orbit/jobs/noisy.yaml", noisyJob)
	var ids []string
	for _, from := range []string{"1000", "5000"} {
		r := p.Orbit("job", "run", "noisy", "--input", `{"from":`+from+`}`)
		require.Equal(t, 1, r.Code, r.String())
		ids = append(ids, strings.TrimSpace(r.Stdout))
	}
	p.WriteFile(".orbit/config.yaml", "retention:\n  runs:\n    keep_per_job: 1\n")
	rep := orbitJSON[retention.Report](t, p, "log", "collect", "--apply", "--json")
	require.Equal(t, ids[:1], rep.Runs)

	a, err := events.ReadArchive(rep.Archive)
	require.NoError(t, err)
	var removed string
	for digest, data := range a.Blobs {
		if strings.HasPrefix(string(data), "1000\n") {
			removed = digest
		}
	}
	require.NotEmpty(t, removed, "the archive holds the removed run's stdout")

	time.Sleep(1100 * time.Millisecond)
	gc := orbitJSON[engine.CollectReport](t, p, "--json", "gc", "--blobs", "--grace", "1s", "--apply")
	var collected []string
	for _, b := range gc.Blobs {
		collected = append(collected, b.Digest)
		assert.Contains(t, a.Blobs, b.Digest, "a blob collected is one the removed run named, archived")
	}
	assert.Contains(t, collected, removed)
	r := p.Orbit("run", "logs", ids[1], "-s", "bad")
	require.Equal(t, 0, r.Code, r.String())
	assert.True(t, strings.HasPrefix(r.Stdout, "5000\n"), r.Stdout)
	r = p.Orbit("audit")
	assert.Equal(t, 0, r.Code, r.String())
}

// TestARetentionPassReapsTheWorktreeAndBranchOfAShippedRun: a task shipped
// locally leaves its run's worktree and branch (landed on main). The
// retention pass's collection keeps them within the default grace of an
// hour; a gc_grace the file spells wrong is refused with the file, line
// and key path (the engine keeps the file it loaded, and its grace); with
// gc_grace: 1s the engine's pass removes both, as git sees it.
func TestARetentionPassReapsTheWorktreeAndBranchOfAShippedRun(t *testing.T) {
	t.Parallel()
	p, _ := repoProject(t, map[string]string{"README.md": "# greeter\n", "greet.txt": "hello\n"})
	p.Env = append(p.Env, "ORBIT_REPLAY_FIXTURE="+filepath.Join(testkit.ModuleRoot(t), "examples", "ship", "fixtures"))
	const policy = "retention:\n  runs: {older_than: 30d}\n  every: 1m\n"
	p.WriteFile(".orbit/config.yaml", policy)
	r := p.Orbit("task", "add", "--title", "Greet in French", "--context-file", "greet.txt", "--status", "backlog")
	require.Equal(t, 0, r.Code, r.String())
	r = p.Orbit("run", "ship", "T-1", "--mode", "local")
	require.Equal(t, 0, r.Code, r.String())
	finished := time.Now()

	worktrees := func() []string {
		var out []string
		for _, line := range strings.Split(testkit.Git(t, p.Root, "worktree", "list", "--porcelain"), "\n") {
			if path, ok := strings.CutPrefix(line, "worktree "); ok && strings.Contains(path, filepath.Join(".orbit", "state", "worktrees")) {
				out = append(out, path)
			}
		}
		return out
	}
	branches := func() []string {
		var out []string
		for _, b := range strings.Fields(testkit.Git(t, p.Root, "branch", "--format=%(refname:short)")) {
			if strings.HasPrefix(b, "orbit/") {
				out = append(out, b)
			}
		}
		return out
	}
	shipped, branch := worktrees(), branches()
	require.Len(t, shipped, 1, "the run made a worktree")
	require.Len(t, branch, 1, "and a branch")
	assert.Contains(t, branch[0], "T-1")

	r = p.Orbit("log", "collect", "--apply")
	require.Equal(t, 0, r.Code, r.String())
	assert.Equal(t, shipped, worktrees(), "within the default gc_grace of 1h")
	assert.Equal(t, branch, branches())

	p.WriteFile(".orbit/config.yaml", policy+"  gc_grace: a second\n")
	r = p.Orbit("engine", "status")
	require.Equal(t, 0, r.Code, r.String())
	assert.Contains(t, r.Stdout, filepath.Join(p.Root, ".orbit", "config.yaml")+`:4: retention.gc_grace: "a second" is not a duration`)
	assert.Contains(t, r.Stdout, "keeps the configuration it loaded")
	r = p.Orbit("log", "collect", "--apply")
	require.Equal(t, 0, r.Code, r.String())
	assert.Equal(t, shipped, worktrees(), "the pass keeps the grace of the file it loaded")

	p.WriteFile(".orbit/config.yaml", policy+"  gc_grace: 1s\n")
	time.Sleep(time.Until(finished.Add(1100 * time.Millisecond)))
	r = p.Orbit("log", "collect", "--apply")
	require.Equal(t, 0, r.Code, r.String())
	assert.Empty(t, worktrees(), "the pass reaped the worktree")
	assert.NoDirExists(t, shipped[0])
	assert.Empty(t, branches(), "and the branch, landed on main")
}
