package shipping_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/activity"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/runrig"
	"github.com/orbitrun/orbit/internal/testkit"
	"github.com/orbitrun/orbit/projector"
	"github.com/orbitrun/orbit/shipping"
)

// rig is a shipping Service on a real log and views, over a repository
// with a bare origin: what an engine gives it.
type rig struct {
	t      *testing.T
	ctx    context.Context
	log    *events.Log
	proj   *projector.Projector
	svc    *shipping.Service
	cfg    shipping.Config
	root   string // the project root: worktrees go under it
	repo   string // the repository the tasks change (main checked out)
	origin string
}

func newRig(t *testing.T) *rig {
	t.Helper()
	ctx := testkit.Context(t)
	log := testkit.StartLog(t, events.Config{})
	proj := runrig.Views(t, log, filepath.Join(t.TempDir(), "views.db"))
	repo, origin := testkit.NewGitRepoWithOrigin(t, map[string]string{"greet.txt": "hello\n", "README.md": "# greeter\n"})
	r := &rig{t: t, ctx: ctx, log: log, proj: proj, root: t.TempDir(), repo: repo, origin: origin}
	r.cfg = shipping.Config{Log: log, Root: r.root, GitEnv: testkit.GitEnv()}
	r.cfg.ReadViews(proj)
	r.svc = shipping.New(r.cfg)
	return r
}

// add creates a task in the rig's repository.
func (r *rig) add(t shipping.NewTask) string {
	r.t.Helper()
	if t.Workspace == "" {
		t.Workspace = r.repo
	}
	if t.Status == "" {
		t.Status = events.TaskBacklog
	}
	id, _, err := r.svc.Create(r.ctx, t)
	require.NoError(r.t, err)
	return id
}

// task reads a task as the log has it now.
func (r *rig) task(id string) *projector.TaskView {
	r.t.Helper()
	last, err := r.log.LastSeq(r.ctx)
	require.NoError(r.t, err)
	require.NoError(r.t, r.proj.WaitFor(r.ctx, last))
	v, err := r.proj.Task(r.ctx, id)
	require.NoError(r.t, err)
	return v
}

// call runs a shipping action as step key of run, with input.
func (r *rig) call(action, run, key string, input map[string]any) (map[string]any, error) {
	r.t.Helper()
	act, ok := r.svc.Actions()[action]
	require.True(r.t, ok, action)
	out, err := act.Run(r.ctx, &activity.ActionCall{RunID: run, Job: "test", StepKey: key, Attempt: 1, Input: input,
		Emit: func(ctx context.Context, typ string, payload any) error {
			_, err := r.log.Append(ctx, events.Event{Type: typ, RunID: run, StepKey: key}, payload)
			return err
		}})
	if err != nil {
		return nil, err
	}
	m, _ := out.(map[string]any)
	return m, nil
}

// must is call that must succeed.
func (r *rig) must(action, run, key string, input map[string]any) map[string]any {
	r.t.Helper()
	out, err := r.call(action, run, key, input)
	require.NoError(r.t, err, action)
	return out
}

func (r *rig) git(dir string, args ...string) string { return testkit.Git(r.t, dir, args...) }

// write writes a file.
func write(t *testing.T, dir, file, content string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, file)), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, file), []byte(content), 0o644))
}

func read(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(data)
}

// pushFromElsewhere commits a file on origin's main from another clone.
func (r *rig) pushFromElsewhere(file, content string) string {
	r.t.Helper()
	other := filepath.Join(r.t.TempDir(), "other")
	r.git(r.repo, "clone", "--quiet", r.origin, other)
	write(r.t, other, file, content)
	r.git(other, "add", file)
	r.git(other, "commit", "--quiet", "-m", "elsewhere: "+file)
	r.git(other, "push", "--quiet", "origin", "main")
	return r.git(other, "rev-parse", "HEAD")
}

// setup runs worktree_setup for tasks as run, from origin's main.
func (r *rig) setup(run string, tasks ...string) map[string]any {
	r.t.Helper()
	return r.must("worktree_setup", run, "worktree", map[string]any{"task_ids": toAny(tasks), "base": "main", "base_sync": "remote"})
}

func toAny(list []string) []any {
	out := make([]any, len(list))
	for i, s := range list {
		out[i] = s
	}
	return out
}
