package sandbox_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/internal/sandbox"
)

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

// runIn runs sh -c script with args in dir under p (runWrapped), checks
// that it ran in the sandbox, and returns its output.
func runIn(t *testing.T, p sandbox.Policy, dir string, env []string, script string, args ...string) string {
	t.Helper()
	out, mode := runWrapped(t, exec.Command("sh", append([]string{"-c", script, "probe"}, args...)...), p, dir, env)
	require.Equal(t, sandbox.ModeMountNamespace, mode)
	return out
}

// outsideTmp is a directory of the test's outside /tmp, which a confined
// program sees as its own: /var/tmp is on the file system the program
// sees read-only.
func outsideTmp(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("/var/tmp", "orbit-sandbox-test-")
	if err != nil {
		t.Skipf("no directory outside /tmp to write to: %v", err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// confinedScript is what an agent tries in its workspace, a main
// repository: its work and scratch, then everything the engine's git or
// user would run later. $1 is a directory outside its workspace, $2 the
// engine's home.
const confinedScript = `
echo work > work.txt; echo " write-tree:$?"
echo scratch > /tmp/orbit-scratch-probe; echo " write-tmp:$?"
echo home > "$HOME/note"; echo " write-home:$?"
echo "home-is:$HOME"
git config --global user.name agent; echo " agent-gitconfig:$?"
echo shm > /dev/shm/orbit-shm-probe; echo " write-shm:$?"
echo x > "$1/outside.txt"; echo " write-outside:$?"
printf '[filter "x"]\n\tclean = touch /tmp/pwned\n' > "$2/.gitconfig"; echo " engine-gitconfig:$?"
echo /tmp > .git/commondir; echo " write-commondir:$?"
echo '[core]' >> .git/config; echo " write-config:$?"
git config core.fsmonitor /tmp/evil; echo " git-config:$?"
echo 'exit 0' > .git/hooks/pre-commit; echo " write-hook:$?"
echo '* filter=x' > .git/info/attributes; echo " write-attributes:$?"
mv .git .git-moved; echo " move-git:$?"
git add work.txt; echo " git-add:$?"
cat .orbit/state/engine.nk; echo " read-state:$?"
`

// TestAConfinedProgramWritesOnlyItsWorkTreeAndScratch: confined to a
// work tree that is a main repository, a program writes its work tree, a
// private /tmp, its home there and /dev/shm, and nothing else: not a
// directory outside its work tree, not the engine's ~/.gitconfig, not
// .git (no commondir made, config, hooks and info/attributes unchanged,
// .git not moved away), and git add fails (the engine commits); the
// engine's state directory in the work tree stays hidden. What it wrote in
// /tmp is gone afterwards.
func TestAConfinedProgramWritesOnlyItsWorkTreeAndScratch(t *testing.T) {
	t.Parallel()
	needSandbox(t)
	repo := t.TempDir()
	outside, engineHome := outsideTmp(t), outsideTmp(t)
	env := gitEnv(engineHome)
	git(t, "", env, "init", "--quiet", repo)
	git(t, "", env, "-C", repo, "commit", "--quiet", "--allow-empty", "-m", "first")
	config, err := os.ReadFile(filepath.Join(repo, ".git", "config"))
	require.NoError(t, err)
	state := filepath.Join(repo, ".orbit", "state")
	require.NoError(t, os.MkdirAll(state, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(state, "engine.nk"), []byte("ENGINESEED"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(repo, ".git", "info", "exclude"), []byte(".orbit/\n"), 0o644))

	p := sandbox.Policy{Confine: true, Hide: []string{state}}.ForWorkspace(repo)
	got := runIn(t, p, repo, env, confinedScript, outside, engineHome)
	for _, ok := range []string{"write-tree", "write-tmp", "write-home", "agent-gitconfig", "write-shm"} {
		assert.Contains(t, got, " "+ok+":0", "%s: %s", ok, got)
	}
	for _, refused := range []string{"write-outside", "engine-gitconfig", "write-commondir", "write-config", "git-config", "write-hook", "write-attributes", "move-git", "git-add", "read-state"} {
		assert.NotContains(t, got, " "+refused+":0", "%s: %s", refused, got)
	}
	assert.NotContains(t, got, "home-is:"+engineHome, "the program has a home of its own")
	assert.NotContains(t, got, "ENGINESEED", "the state directory in the work tree stays hidden")

	data, err := os.ReadFile(filepath.Join(repo, "work.txt"))
	require.NoError(t, err)
	assert.Equal(t, "work\n", string(data))
	for _, gone := range []string{filepath.Join(outside, "outside.txt"), filepath.Join(engineHome, ".gitconfig"),
		filepath.Join(repo, ".git", "commondir"), filepath.Join(repo, ".git", "hooks", "pre-commit"),
		filepath.Join(repo, ".git", "info", "attributes"), filepath.Join(repo, ".git-moved"),
		"/tmp/orbit-scratch-probe", "/dev/shm/orbit-shm-probe"} {
		_, err := os.Lstat(gone)
		assert.True(t, os.IsNotExist(err), "%s is there", gone)
	}
	after, err := os.ReadFile(filepath.Join(repo, ".git", "config"))
	require.NoError(t, err)
	assert.Equal(t, string(config), string(after), ".git/config is unchanged")
	assert.Equal(t, "?? work.txt\n", git(t, "", env, "-C", repo, "status", "--porcelain"), "the engine finds the work, uncommitted")
}

// TestALinkedWorkTreesGitDirectoryIsReadOnly: in a linked work tree the
// .git file, the work tree's git directory (no commondir rewritten) and
// the main repository's are read-only; the work tree is writable, with or
// without Confine.
func TestALinkedWorkTreesGitDirectoryIsReadOnly(t *testing.T) {
	t.Parallel()
	needSandbox(t)
	for _, confine := range []bool{false, true} {
		base := t.TempDir()
		repo, wt := filepath.Join(base, "repo"), filepath.Join(base, "wt")
		env := gitEnv(base)
		git(t, "", env, "init", "--quiet", repo)
		git(t, "", env, "-C", repo, "commit", "--quiet", "--allow-empty", "-m", "first")
		git(t, "", env, "-C", repo, "worktree", "add", "--quiet", wt)
		config, err := os.ReadFile(filepath.Join(repo, ".git", "config"))
		require.NoError(t, err)
		dotGit, err := os.ReadFile(filepath.Join(wt, ".git"))
		require.NoError(t, err)

		got := runIn(t, sandbox.Policy{Confine: confine}.ForWorkspace(wt), wt, env, `
echo work > work.txt; echo " write-tree:$?"
echo /tmp > "$(git rev-parse --git-dir)/commondir"; echo " write-commondir:$?"
echo "gitdir: $PWD/evil" > .git; echo " write-dotgit:$?"
git config core.fsmonitor /tmp/evil; echo " git-config:$?"
echo x > "$(git rev-parse --git-common-dir)/info/attributes"; echo " write-attributes:$?"
`)
		assert.Contains(t, got, " write-tree:0", "confine %v: %s", confine, got)
		for _, refused := range []string{"write-commondir", "write-dotgit", "git-config", "write-attributes"} {
			assert.NotContains(t, got, " "+refused+":0", "confine %v: %s: %s", confine, refused, got)
		}
		after, err := os.ReadFile(filepath.Join(repo, ".git", "config"))
		require.NoError(t, err)
		assert.Equal(t, string(config), string(after), "the main repository's config is unchanged")
		afterDotGit, err := os.ReadFile(filepath.Join(wt, ".git"))
		require.NoError(t, err)
		assert.Equal(t, string(dotGit), string(afterDotGit), "the .git file is unchanged")
		commondir, err := os.ReadFile(filepath.Join(repo, ".git", "worktrees", "wt", "commondir"))
		require.NoError(t, err)
		assert.Equal(t, "../..\n", string(commondir))
	}
}

// TestAWorkTreeUnderAHiddenDirectoryStaysWorkable: a shipping run's
// worktree lives under the engine's state directory, which an agent's
// sandbox hides and whose parent it makes read-only; ForWorkspace binds
// the work tree back, writable, and the program writes there, while the
// rest of the hidden directory stays covered.
func TestAWorkTreeUnderAHiddenDirectoryStaysWorkable(t *testing.T) {
	t.Parallel()
	needSandbox(t)
	root := t.TempDir()
	repo := filepath.Join(root, "repo")
	state := filepath.Join(root, ".orbit", "state")
	wt := filepath.Join(state, "worktrees", "RUN1")
	require.NoError(t, os.MkdirAll(filepath.Join(state, "creds"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(state, "creds", "client.nk"), []byte("SEED"), 0o600))
	env := gitEnv(root)
	git(t, "", env, "init", "--quiet", repo)
	git(t, "", env, "-C", repo, "commit", "--quiet", "--allow-empty", "-m", "first")
	git(t, "", env, "-C", repo, "worktree", "add", "--quiet", "-b", "orbit/T-1", wt)
	for _, confine := range []bool{false, true} {
		p := sandbox.Policy{Hide: []string{state}, ReadOnly: []string{filepath.Dir(state)}, Confine: confine}.ForWorkspace(wt)
		got := runIn(t, p, wt, env, `
echo work > work.txt; echo " write-tree:$?"
git status --porcelain; echo " status:$?"
cat ../../creds/client.nk; echo " read-seed:$?"
ls ../..; echo " listed"
`)
		assert.Contains(t, got, " write-tree:0", "confine %v: the work tree is workable: %s", confine, got)
		assert.Contains(t, got, "?? work.txt\n status:0", "confine %v: git reads the repository: %s", confine, got)
		assert.NotContains(t, got, "SEED", "the rest of the state directory stays hidden")
		assert.Contains(t, got, "\nworktrees\n listed", "the state directory's cover holds the work tree's mount point alone")
	}
	assert.Equal(t, "?? work.txt\n", git(t, "", env, "-C", wt, "status", "--porcelain"))
	assert.True(t, strings.HasPrefix(git(t, "", env, "-C", repo, "log", "--format=%s", "orbit/T-1"), "first"))
}
