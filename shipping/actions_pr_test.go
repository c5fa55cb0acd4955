package shipping_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
	"github.com/orbitrun/orbit/shipping"
)

// withForge gives the rig's Service a forge of kind on a local server
// speaking its wire format, backed by the rig's bare origin.
func (r *rig) withForge(kind string) *testkit.ForgeServer {
	r.t.Helper()
	f := testkit.NewForgeServer(r.t, r.origin, "acme", "greeter")
	base := f.URL
	if kind == assets.ForgeGitea {
		base = f.URL + "/"
	}
	cfg := r.cfg
	cfg.Forge = func() shipping.ForgeSettings {
		return shipping.ForgeSettings{Config: assets.ForgeConfig{Kind: kind, BaseURL: base, Repository: "acme/greeter"}, Token: f.Token}
	}
	r.svc = shipping.New(cfg)
	return f
}

// prReady is a task whose run has committed a change, rebased and pushed
// its branch with the exact lease sync_base reported.
func (r *rig) prReady(run, line string) (id, worktree, branch string) {
	r.t.Helper()
	id, worktree, _ = r.shipped(run, line)
	sync := r.must("sync_base", run, "sync_base", map[string]any{"workspace_path": worktree, "base": "main"})
	assert.Equal(r.t, "", sync["remote_sha_before"], "origin has no such branch yet")
	branch = sync["head"].(string)
	push := r.must("git_push", run, "push", map[string]any{"workspace_path": worktree, "branch": branch,
		"expected_remote_sha": sync["remote_sha_before"]})
	assert.Equal(r.t, "pushed", push["decision"])
	return id, worktree, branch
}

func (r *rig) prOpen(run, worktree, branch string, extra map[string]any) (map[string]any, error) {
	in := map[string]any{"job_run_id": run, "workspace_path": worktree, "base": "main", "head": branch, "title": nil, "body": nil}
	for k, v := range extra {
		in[k] = v
	}
	return r.call("pr_open", run, "pr_open", in)
}

func TestPROpenRefusesAnUnsummarisedTaskOpensOnceAndFindsItAgain(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{assets.ForgeGitHub, assets.ForgeGitea} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			r := newRig(t)
			f := r.withForge(kind)
			id, worktree, branch := r.prReady("RUN1", "bonjour")
			assert.Equal(t, r.git(worktree, "rev-parse", "HEAD"), r.git(r.origin, "rev-parse", "refs/heads/"+branch), "pushed")

			_, err := r.prOpen("RUN1", worktree, branch, nil)
			require.Error(t, err)
			assert.ErrorContains(t, err, "task "+id+" has no execution summary")
			assert.Empty(t, f.Pulls(), "nothing was opened")

			_, err = r.svc.Update(r.ctx, shipping.TaskChange{TaskID: id, ExecutionSummary: ptr("Greets in French too; checked with cat.")})
			require.NoError(t, err)
			body := "Verbatim body.\n\n- kept   as given\n"
			out, err := r.prOpen("RUN1", worktree, branch, map[string]any{"body": body})
			require.NoError(t, err)
			assert.Equal(t, "performed", out["decision"])
			assert.Equal(t, true, out["pr_created"])
			assert.Equal(t, "1", out["pr_number"])
			pulls := f.Pulls()
			require.Len(t, pulls, 1)
			assert.Equal(t, branch, pulls[0].Head)
			assert.Equal(t, "main", pulls[0].Base)
			assert.Equal(t, body, pulls[0].Body, "a given body is sent verbatim")
			assert.Equal(t, id+": Greet with bonjour", pulls[0].Title)

			again, err := r.prOpen("RUN1", worktree, branch, map[string]any{"body": body})
			require.NoError(t, err)
			assert.Equal(t, "reused", again["decision"], "a resumed run finds the open pull request")
			assert.Equal(t, "1", again["pr_number"])
			assert.Len(t, f.Pulls(), 1, "and never opens two")

			promote := r.must("pr_promote", "RUN1", "promote_tasks", map[string]any{"job_run_id": "RUN1", "completed_task_ids": []any{id},
				"head": branch, "base": "main", "pr_number": out["pr_number"], "pr_url": out["pr_url"]})
			assert.Equal(t, []any{id}, promote["performed_task_ids"])
			task := r.task(id)
			assert.Equal(t, events.TaskReview, task.Status)
			require.NotNil(t, task.PullRequest)
			assert.Equal(t, events.TaskPullRequest{Number: 1, URL: out["pr_url"].(string), Head: branch, Base: "main"}, *task.PullRequest)
			history := len(task.History)
			promote = r.must("pr_promote", "RUN1", "promote_tasks", map[string]any{"job_run_id": "RUN1", "completed_task_ids": []any{id},
				"head": branch, "base": "main", "pr_number": out["pr_number"], "pr_url": out["pr_url"]})
			assert.Equal(t, []any{id}, promote["reused_task_ids"])
			assert.Len(t, r.task(id).History, history, "promoted once")
		})
	}
}

func TestPROpenBuildsItsBodyFromTheTasksAndRefusesAnUnpushedBranch(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	f := r.withForge(assets.ForgeGitHub)
	id, worktree, _ := r.shipped("RUN1", "hej")
	_, err := r.svc.Update(r.ctx, shipping.TaskChange{TaskID: id, ExecutionSummary: ptr("Greets in Swedish."),
		AcceptanceCriteria: &[]string{"greet.txt says hej"}})
	require.NoError(t, err)
	branch := r.git(worktree, "branch", "--show-current")
	_, err = r.prOpen("RUN1", worktree, branch, nil)
	require.Error(t, err)
	assert.ErrorContains(t, err, "push it first")

	r.must("git_push", "RUN1", "push", map[string]any{"workspace_path": worktree, "branch": branch, "expected_remote_sha": ""})
	_, err = r.prOpen("RUN1", worktree, branch, nil)
	require.NoError(t, err)
	body := f.Pulls()[0].Body
	assert.Contains(t, body, "## "+id+": Greet with hej")
	assert.Contains(t, body, "- greet.txt says hej")
	assert.Contains(t, body, "Greets in Swedish.")
	assert.Contains(t, body, "- `greet.txt`")
}

// A rebased branch is pushed over exactly the version origin had before
// the rebase; a branch someone else pushed to meanwhile is not overwritten.
func TestGitPushWithTheExactLeaseOfTheSync(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	_, worktree, branch := r.prReady("RUN1", "ciao")
	first := r.git(worktree, "rev-parse", "HEAD")
	r.pushFromElsewhere("news.txt", "origin moved\n")
	sync := r.must("sync_base", "RUN1", "sync_base", map[string]any{"workspace_path": worktree, "base": "main"})
	assert.Equal(t, "rebased", sync["decision"])
	assert.Equal(t, first, sync["remote_sha_before"], "origin has the branch as it was before the rebase")
	push := r.must("git_push", "RUN1", "push", map[string]any{"workspace_path": worktree, "branch": branch, "expected_remote_sha": sync["remote_sha_before"]})
	assert.Equal(t, "pushed", push["decision"])
	assert.Equal(t, sync["head_sha"], r.git(r.origin, "rev-parse", "refs/heads/"+branch))
	again := r.must("git_push", "RUN1", "push", map[string]any{"workspace_path": worktree, "branch": branch, "expected_remote_sha": sync["remote_sha_before"]})
	assert.Equal(t, "already_pushed", again["decision"], "a redelivered push pushes nothing")

	// Someone pushes to the branch; the lease the run holds is stale.
	other := r.t.TempDir()
	r.git(r.repo, "clone", "--quiet", "--branch", branch, r.origin, other)
	write(t, other, "theirs.txt", "theirs\n")
	r.git(other, "add", "theirs.txt")
	r.git(other, "commit", "--quiet", "-m", "theirs")
	r.git(other, "push", "--quiet", "origin", branch)
	theirs := r.git(other, "rev-parse", "HEAD")
	write(t, worktree, "greet.txt", "hello\nciao\nsalve\n")
	r.git(worktree, "commit", "--quiet", "-am", "more")
	_, err := r.call("git_push", "RUN1", "push", map[string]any{"workspace_path": worktree, "branch": branch, "expected_remote_sha": sync["head_sha"]})
	require.Error(t, err)
	assert.ErrorContains(t, err, "expected it at")
	assert.Equal(t, theirs, r.git(r.origin, "rev-parse", "refs/heads/"+branch), "their commit is not overwritten")
}

func TestPRFailureHandoffPushesTheWorkAndOpensABlockedPullRequestOnce(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{assets.ForgeGitHub, assets.ForgeGitea} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			r := newRig(t)
			f := r.withForge(kind)
			id := r.add(shipping.NewTask{Title: "Greet in Dutch"})
			worktree := r.setup("RUN1", id)["workspace_path"].(string)
			write(t, worktree, "greet.txt", "hello\nhallo\n")
			write(t, worktree, "dutch.txt", "half done\n")
			in := map[string]any{"run_id": "RUN1", "job": "task_pr_pipeline", "step_key": "implement_bundle/1/implement_one",
				"error": map[string]any{"kind": events.KindActivity, "message": "the agent ran out of turns", "retryable": false}}

			out := r.must("pr_failure_handoff", "RUN1", "failure_activity", in)
			assert.Equal(t, "blocked_failure_pr", out["decision"])
			assert.Equal(t, []any{"dutch.txt", "greet.txt"}, out["committed_files"], "the dirty work is committed")
			branch := out["branch"].(string)
			assert.Equal(t, out["head_sha"], r.git(r.origin, "rev-parse", "refs/heads/"+branch), "and pushed")
			assert.Empty(t, r.git(worktree, "status", "--porcelain"))
			pulls := f.Pulls()
			require.Len(t, pulls, 1)
			assert.Equal(t, "[BLOCKED] "+id+": Greet in Dutch", pulls[0].Title)
			assert.Equal(t, []string{"blocked"}, pulls[0].Labels)
			require.Len(t, pulls[0].Comments, 1)
			assert.Contains(t, pulls[0].Comments[0], "implement_bundle/1/implement_one")
			assert.Contains(t, pulls[0].Comments[0], "the agent ran out of turns")
			task := r.task(id)
			assert.Equal(t, events.TaskBlocked, task.Status)
			require.NotNil(t, task.PullRequest)
			assert.True(t, task.PullRequest.Blocked)
			assert.Equal(t, 1, task.PullRequest.Number)

			again := r.must("pr_failure_handoff", "RUN1", "failure_activity", in)
			assert.Equal(t, out["pr_number"], again["pr_number"])
			assert.Equal(t, false, again["pr_created"])
			assert.Equal(t, "already_pushed", again["push"])
			pulls = f.Pulls()
			assert.Len(t, pulls, 1, "a redelivered hand-off opens no second pull request")
			assert.Len(t, pulls[0].Comments, 1, "and does not comment again")
		})
	}
}

// A run that failed after pr_open reuses its pull request and marks it
// blocked; a run that failed before it took any task hands nothing over.
func TestPRFailureHandoffReusesTheOpenPullRequest(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	f := r.withForge(assets.ForgeGitHub)
	id, worktree, branch := r.prReady("RUN1", "hola")
	_, err := r.svc.Update(r.ctx, shipping.TaskChange{TaskID: id, ExecutionSummary: ptr("Greets in Spanish.")})
	require.NoError(t, err)
	_, err = r.prOpen("RUN1", worktree, branch, nil)
	require.NoError(t, err)
	out := r.must("pr_failure_handoff", "RUN1", "failure_activity", map[string]any{"run_id": "RUN1", "step_key": "promote_tasks",
		"error": map[string]any{"kind": events.KindActivity, "message": "boom"}})
	assert.Equal(t, "1", out["pr_number"])
	assert.Equal(t, false, out["pr_created"])
	pulls := f.Pulls()
	require.Len(t, pulls, 1)
	assert.Equal(t, []string{"blocked"}, pulls[0].Labels)
	assert.Equal(t, events.TaskBlocked, r.task(id).Status)

	none := r.must("pr_failure_handoff", "RUN9", "failure_activity", map[string]any{"run_id": "RUN9", "step_key": "worktree",
		"error": map[string]any{"kind": events.KindActivity, "message": "no worktree"}})
	assert.Equal(t, "no_candidate", none["decision"])
}

func TestPROpenWithoutAForgeSaysWhatIsMissing(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	cfg := r.cfg
	cfg.Forge = func() shipping.ForgeSettings {
		return shipping.ForgeSettings{Config: assets.ForgeConfig{Repository: "acme/greeter", TokenEnv: "ACME_GH_TOKEN"}}
	}
	r.svc = shipping.New(cfg)
	id, worktree, branch := r.prReady("RUN1", "salut")
	_, err := r.svc.Update(r.ctx, shipping.TaskChange{TaskID: id, ExecutionSummary: ptr("Greets.")})
	require.NoError(t, err)
	_, err = r.prOpen("RUN1", worktree, branch, nil)
	require.Error(t, err)
	assert.ErrorContains(t, err, "ACME_GH_TOKEN is not set")
}
