package sandbox_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/internal/sandbox"
)

// gitScript is what an agent does in its workspace: its work, committed,
// then an attempt at what the engine's git would run later.
// gitEnv is the environment of the tests' git: an author and a committer
// of their own, and no configuration but what home holds.
func gitEnv(home string) []string {
	return append(os.Environ(), "GIT_AUTHOR_NAME=A", "GIT_AUTHOR_EMAIL=a@example.invalid",
		"GIT_COMMITTER_NAME=C", "GIT_COMMITTER_EMAIL=c@example.invalid", "GIT_CONFIG_NOSYSTEM=1", "HOME="+home)
}

// git runs git with args in dir and env, outside any sandbox, and returns
// its output; it must succeed.
func git(t *testing.T, dir string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "git %v: %s", args, out)
	return string(out)
}

const gitScript = `
echo work > work.txt; echo " write-tree:$?"
git add work.txt && git commit --quiet -m work; echo " commit:$?"
echo '[core]
	fsmonitor = /tmp/evil' >> .git/config; echo " write-config:$?"
git config core.fsmonitor /tmp/evil; echo " git-config:$?"
mkdir -p .git/hooks; echo 'exit 0' > .git/hooks/pre-commit; echo " write-hook:$?"
`

// TestAWorkspacesGitConfigAndHooksAreReadOnly: a program started with
// the policy ForWorkspace gives may write and commit in its work tree (run
// from a directory below its top) but may change neither .git/config nor
// .git/hooks, which Orbit's own git reads outside the sandbox.
func TestAWorkspacesGitConfigAndHooksAreReadOnly(t *testing.T) {
	t.Parallel()
	if ok, why := sandbox.Available(); !ok {
		t.Skipf("no sandbox on this machine: %s", why)
	}
	repo := t.TempDir()
	env := gitEnv(repo)
	git(t, "", env, "init", "--quiet", repo)
	require.NoError(t, os.RemoveAll(filepath.Join(repo, ".git", "hooks")), "a missing hooks directory is made")
	config, err := os.ReadFile(filepath.Join(repo, ".git", "config"))
	require.NoError(t, err)
	sub := filepath.Join(repo, "sub")
	require.NoError(t, os.Mkdir(sub, 0o755))

	base := sandbox.Policy{Hide: []string{filepath.Join(repo, "nothing")}}
	p := base.ForWorkspace(sub)
	assert.Empty(t, base.ReadOnly, "the policy given is not changed")
	got, mode := runWrapped(t, exec.Command("sh", "-c", "cd .. && "+gitScript), p, sub, env)
	require.Equal(t, sandbox.ModeMountNamespace, mode)
	assert.Contains(t, got, " write-tree:0", "the work tree is writable")
	assert.Contains(t, got, " commit:0", "the agent may commit")
	assert.NotContains(t, got, " write-config:0")
	assert.NotContains(t, got, " git-config:0")
	assert.NotContains(t, got, " write-hook:0")

	after, err := os.ReadFile(filepath.Join(repo, ".git", "config"))
	require.NoError(t, err)
	assert.Equal(t, string(config), string(after), ".git/config is unchanged")
	hooks, err := os.ReadDir(filepath.Join(repo, ".git", "hooks"))
	require.NoError(t, err)
	assert.Empty(t, hooks, "no hook was planted")
	assert.Equal(t, "work\n", git(t, repo, env, "log", "--format=%s"))
}

// TestALinkedWorkTreesGitConfigIsReadOnly: in a linked work tree, the
// main repository's config and the work tree's commondir (which names the
// directory whose config and hooks git reads) are read-only; the program
// still commits.
func TestALinkedWorkTreesGitConfigIsReadOnly(t *testing.T) {
	t.Parallel()
	if ok, why := sandbox.Available(); !ok {
		t.Skipf("no sandbox on this machine: %s", why)
	}
	base := t.TempDir()
	repo, wt := filepath.Join(base, "repo"), filepath.Join(base, "wt")
	env := gitEnv(base)
	for _, args := range [][]string{{"init", "--quiet", repo}, {"-C", repo, "commit", "--quiet", "--allow-empty", "-m", "first"}, {"-C", repo, "worktree", "add", "--quiet", wt}} {
		git(t, "", env, args...)
	}
	config, err := os.ReadFile(filepath.Join(repo, ".git", "config"))
	require.NoError(t, err)

	cmd := exec.Command("sh", "-c", `
echo work > work.txt && git add work.txt && git commit --quiet -m work; echo " commit:$?"
echo /tmp > "$(git rev-parse --git-dir)/commondir"; echo " write-commondir:$?"
git config core.fsmonitor /tmp/evil; echo " git-config:$?"
`)
	got, mode := runWrapped(t, cmd, sandbox.Policy{}.ForWorkspace(wt), wt, env)
	require.Equal(t, sandbox.ModeMountNamespace, mode)
	assert.Contains(t, got, " commit:0", "the agent may commit")
	assert.NotContains(t, got, " write-commondir:0")
	assert.NotContains(t, got, " git-config:0")
	after, err := os.ReadFile(filepath.Join(repo, ".git", "config"))
	require.NoError(t, err)
	assert.Equal(t, string(config), string(after), "the main repository's config is unchanged")
}

// TestAWorkTreeUnderAHiddenDirectoryStaysWorkable: a shipping run's
// worktree lives under the engine's state directory, which an agent's
// sandbox hides and whose parent it makes read-only; ForWorkspace binds
// the work tree back, writable, and the program commits there, while the
// rest of the hidden directory stays covered.
func TestAWorkTreeUnderAHiddenDirectoryStaysWorkable(t *testing.T) {
	t.Parallel()
	if ok, why := sandbox.Available(); !ok {
		t.Skipf("no sandbox on this machine: %s", why)
	}
	root := t.TempDir()
	repo := filepath.Join(root, "repo")
	state := filepath.Join(root, ".orbit", "state")
	wt := filepath.Join(state, "worktrees", "RUN1")
	require.NoError(t, os.MkdirAll(filepath.Join(state, "creds"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(state, "creds", "client.nk"), []byte("SEED"), 0o600))
	env := gitEnv(root)
	for _, args := range [][]string{{"init", "--quiet", repo}, {"-C", repo, "commit", "--quiet", "--allow-empty", "-m", "first"},
		{"-C", repo, "worktree", "add", "--quiet", "-b", "orbit/T-1", wt}} {
		git(t, "", env, args...)
	}
	p := sandbox.Policy{Hide: []string{state}, ReadOnly: []string{filepath.Dir(state)}}.ForWorkspace(wt)
	cmd := exec.Command("sh", "-c", `
echo work > work.txt && git add work.txt && git commit --quiet -m work; echo " commit:$?"
cat ../../creds/client.nk; echo " read-seed:$?"
ls ../..; echo " listed"
`)
	got, mode := runWrapped(t, cmd, p, wt, env)
	require.Equal(t, sandbox.ModeMountNamespace, mode)
	assert.Contains(t, got, " commit:0", "the work tree is workable")
	assert.NotContains(t, got, "SEED", "the rest of the state directory stays hidden")
	assert.Contains(t, got, "\nworktrees\n listed", "the state directory's cover holds the work tree's mount point alone")
	assert.Equal(t, "work\nfirst\n", git(t, repo, env, "log", "--format=%s", "orbit/T-1"))
}
