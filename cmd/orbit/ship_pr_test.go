package main_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

// TestShipInPRModeThroughTheBinary: orbit run ship without --mode ships in
// pr mode (task_pr_pipeline) against a local forge speaking GitHub
// Enterprise's wire format over the project's real bare origin. T-1's
// agent records its summary: its branch is pushed with the exact lease and
// one pull request is opened, and the task is in review with it recorded.
// T-2's agent changes a file but records no summary: pr_open refuses it by
// name, the run fails, and the failure hand-off pushes its work and opens
// a pull request marked blocked; the task is blocked. The token never
// reaches the log.
func TestShipInPRModeThroughTheBinary(t *testing.T) {
	t.Parallel()
	p, origin := repoProject(t, map[string]string{"README.md": "# greeter\n", "greet.txt": "hello\n"})
	forge := testkit.NewForgeServer(t, origin, "acme", "greeter")
	cfg := filepath.Join(p.Root, ".orbit", "config.yaml")
	data, err := os.ReadFile(cfg)
	require.NoError(t, err)
	data = append(data, []byte("\nforge:\n  kind: github\n  base_url: "+forge.URL+"\n  repository: acme/greeter\n  token_env: ACME_FORGE_TOKEN\n")...)
	require.NoError(t, os.WriteFile(cfg, data, 0o644))
	fixtures := t.TempDir()
	write := func(name, turns string) {
		require.NoError(t, os.WriteFile(filepath.Join(fixtures, name), []byte(turns), 0o644))
	}
	write("T-1.json", `{"turns": [
  {"content": [
     {"kind": "tool_use", "id": "w", "name": "fs.write", "input": {"path": "greet.txt", "content": "hello\nbonjour\n"}},
     {"kind": "tool_use", "id": "s", "name": "orbit.task.summary", "input": {"summary": "greet.txt says bonjour too; nothing else changed."}}],
   "stop_reason": "tool_use"},
  {"content": [{"kind": "text", "text": "Done."}], "stop_reason": "end_turn"}]}`)
	write("T-2.json", `{"turns": [
  {"content": [{"kind": "tool_use", "id": "w", "name": "fs.write", "input": {"path": "farewell.txt", "content": "goodbye\n"}}],
   "stop_reason": "tool_use"},
  {"content": [{"kind": "text", "text": "Wrote it."}], "stop_reason": "end_turn"}]}`)
	p.Env = append(p.Env, "ORBIT_REPLAY_FIXTURE="+fixtures, "ACME_FORGE_TOKEN="+forge.Token)
	for _, title := range []string{"Greet in French", "Add a farewell"} {
		r := p.Orbit("task", "add", "--title", title, "--status", "backlog")
		require.Equal(t, 0, r.Code, r.String())
	}

	r := p.Orbit("run", "ship", "T-1", "--poll-seconds", "1")
	require.Equal(t, 0, r.Code, r.String())
	assert.Contains(t, r.Stdout, "workflow_status: completed")
	pulls := forge.Pulls()
	require.Len(t, pulls, 1)
	v := taskView(t, p, "T-1")
	assert.Equal(t, events.TaskReview, v.Status)
	require.NotNil(t, v.PullRequest)
	assert.Equal(t, 1, v.PullRequest.Number)
	assert.Equal(t, v.Branch, pulls[0].Head)
	assert.Equal(t, testkit.Git(t, origin, "rev-parse", "refs/heads/"+v.Branch), pulls[0].HeadSHA, "the pull request is of the pushed branch")
	assert.Contains(t, testkit.Git(t, origin, "show", pulls[0].HeadSHA+":greet.txt"), "bonjour")
	assert.Contains(t, pulls[0].Body, "greet.txt says bonjour too")
	assert.Equal(t, "hello", testkit.Git(t, origin, "show", "main:greet.txt"), "pr mode does not merge")

	r = p.Orbit("run", "ship", "T-2", "--poll-seconds", "1")
	assert.Equal(t, 1, r.Code, r.String())
	assert.Contains(t, r.Stdout, "workflow_status: gate_failed")
	v2 := taskView(t, p, "T-2")
	assert.Equal(t, events.TaskBlocked, v2.Status)
	assert.Contains(t, v2.StatusReason, "task T-2 has no execution summary")
	require.NotNil(t, v2.PullRequest)
	assert.True(t, v2.PullRequest.Blocked)
	pulls = forge.Pulls()
	require.Len(t, pulls, 2)
	assert.Equal(t, []string{"blocked"}, pulls[1].Labels)
	assert.Equal(t, v2.Branch, pulls[1].Head)
	assert.Equal(t, "goodbye", testkit.Git(t, origin, "show", pulls[1].HeadSHA+":farewell.txt"), "the work is on the pushed branch")

	r = p.Orbit("replay", "--verify")
	assert.Equal(t, 0, r.Code, r.String())
	r = p.Orbit("--json", "run", "history")
	require.Equal(t, 0, r.Code, r.String())
	var runs []struct {
		ID string `json:"id"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.Stdout), &runs))
	require.NotEmpty(t, runs)
	for _, run := range runs {
		r = p.Orbit("run", "events", run.ID)
		require.Equal(t, 0, r.Code, r.String())
		assert.False(t, strings.Contains(r.Stdout, forge.Token), "the token is never in the log")
	}
}
