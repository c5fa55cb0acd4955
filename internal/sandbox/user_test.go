package sandbox_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/internal/sandbox"
)

// needRoot skips a test of what an engine that runs as root gives its
// programs.
func needRoot(t *testing.T) {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("needs root: it tests a root engine's sandbox")
	}
	needSandbox(t)
}

// owner is the uid that owns path on disk.
func owner(t *testing.T, path string) int {
	t.Helper()
	fi, err := os.Stat(path)
	require.NoError(t, err)
	return int(fi.Sys().(*syscall.Stat_t).Uid)
}

// userScript is what an agent of a root engine tries: $1 is a work tree
// another user owns, $2 a file only root may read.
const userScript = `
echo "uid:$(id -u) gid:$(id -g)"
echo work > work.txt; echo " write-tree:$?"
echo theirs > "$1/theirs.txt"; echo " write-theirs:$?"
git status --porcelain >/dev/null; echo " git-status:$?"
cat "$2"; echo " read-secret:$?"
cat /etc/shadow >/dev/null; echo " read-shadow:$?"
v=$(cat /proc/sys/kernel/core_pattern); echo "$v" > /proc/sys/kernel/core_pattern; echo " write-sysctl:$?"
grep -E '^Cap(Eff|Prm)' /proc/self/status
`

// TestARootEnginesAgentRunsAsAUserOfItsOwn: confined by an engine that
// runs as root, a program runs as nobody with no capability; it writes
// its work trees, which hold what it made under their owners' uids on
// disk (root's, another user's), and git works there; it reads no file
// only root may, and cannot change the kernel's settings. Reached through
// directories only root may pass (t.TempDir's). Its record says nothing
// is left unenforced.
func TestARootEnginesAgentRunsAsAUserOfItsOwn(t *testing.T) {
	t.Parallel()
	needRoot(t)
	repo := t.TempDir()
	env := gitEnv(outsideTmp(t))
	git(t, "", env, "init", "--quiet", repo)
	git(t, "", env, "-C", repo, "commit", "--quiet", "--allow-empty", "-m", "first")
	theirs := filepath.Join(t.TempDir(), "theirs")
	require.NoError(t, os.Mkdir(theirs, 0o700))
	require.NoError(t, os.Chown(theirs, 1234, 1234))
	secret := filepath.Join(outsideTmp(t), "secret")
	require.NoError(t, os.Chmod(filepath.Dir(secret), 0o755))
	require.NoError(t, os.WriteFile(secret, []byte("ROOTONLY"), 0o600))

	p := sandbox.Policy{Confine: true, Work: []string{theirs}}.ForWorkspace(repo)
	got := runIn(t, p, repo, env, userScript, theirs, secret)
	assert.Contains(t, got, "uid:"+strconv.Itoa(sandbox.AgentUID)+" gid:"+strconv.Itoa(sandbox.AgentUID))
	for _, ok := range []string{"write-tree", "write-theirs", "git-status"} {
		assert.Contains(t, got, " "+ok+":0", "%s: %s", ok, got)
	}
	for _, refused := range []string{"read-secret", "read-shadow", "write-sysctl"} {
		assert.NotContains(t, got, " "+refused+":0", "%s: %s", refused, got)
	}
	assert.NotContains(t, got, "ROOTONLY")
	assert.Regexp(t, `CapEff:\s+0+\n`, got)
	assert.Regexp(t, `CapPrm:\s+0+\n`, got)
	assert.Equal(t, 0, owner(t, filepath.Join(repo, "work.txt")), "what it made in root's work tree is root's")
	assert.Equal(t, 1234, owner(t, filepath.Join(theirs, "theirs.txt")), "what it made in another's work tree is theirs")
	assert.Empty(t, sandbox.Unenforced(sandbox.ModeMountNamespace))
}

// TestARootProgramCannotChangeTheKernelsSettings: a program of a root
// engine that stays root (unconfined here; confined where the machine
// cannot map ids) holds no capability but still owns /proc/sys, where a
// core_pattern naming a program of its own would run that as the host's
// root: /proc/sys and the SysRq trigger are read-only to it.
func TestARootProgramCannotChangeTheKernelsSettings(t *testing.T) {
	t.Parallel()
	needRoot(t)
	script := `v=$(cat /proc/sys/kernel/core_pattern); echo "$v" > /proc/sys/kernel/core_pattern; echo " write-sysctl:$?"; echo > /proc/sysrq-trigger; echo " sysrq:$?"; id -u`
	out, mode := runWrapped(t, exec.Command("sh", "-c", script), sandbox.Policy{}, "", nil)
	assert.Equal(t, sandbox.ModeMountNamespace, mode)
	assert.Contains(t, out, "\n0\n", "unconfined, it stays root")
	assert.NotContains(t, out, " write-sysctl:0", out)
	assert.NotContains(t, out, " sysrq:0", out)
}

// TestARootEnginesAgentWorksInTheProjectRoot: an agent step's workspace
// is the project root (outside /tmp, open to all), which holds the
// engine's state: the state stays hidden but for the agent's seed, which
// the agent (nobody) reads though it and its directory are root's alone
// (0600 in 0700), and the agent writes the work tree around them; the
// project is in a directory open to all, then in one only root may pass.
func TestARootEnginesAgentWorksInTheProjectRoot(t *testing.T) {
	t.Parallel()
	needRoot(t)
	for name, mode := range map[string]os.FileMode{"open": 0o755, "root-only": 0o700} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			parent := outsideTmp(t)
			require.NoError(t, os.Chmod(parent, mode))
			workInProjectRoot(t, filepath.Join(parent, "project"))
		})
	}
}

// workInProjectRoot is TestARootEnginesAgentWorksInTheProjectRoot's
// project at root.
func workInProjectRoot(t *testing.T, root string) {
	t.Helper()
	git(t, "", gitEnv(outsideTmp(t)), "init", "--quiet", root)
	state, agentSeed, _ := secrets(t, filepath.Join(root, ".orbit"))
	require.NoError(t, os.Chmod(filepath.Dir(agentSeed), 0o700))
	require.NoError(t, os.Chmod(agentSeed, 0o600))

	p := sandbox.Policy{Confine: true, Hide: []string{state}, Keep: []string{agentSeed}, ReadOnly: []string{filepath.Dir(state)}}.ForWorkspace(root)
	script := `echo work > work.txt; echo " write-tree:$?"; cat "$1"; echo " agent:$?"; cat "$2"; echo " engine:$?"; id -u`
	got := runIn(t, p, root, nil, script, agentSeed, filepath.Join(state, "creds", "engine.nk"))
	assert.Contains(t, got, " write-tree:0", got)
	assert.Contains(t, got, "AGENTSEED agent:0", "the agent reads its seed: %s", got)
	assert.NotContains(t, got, "ENGINESEED", got)
	assert.Contains(t, got, "\n"+strconv.Itoa(sandbox.AgentUID)+"\n", got)
	assert.Equal(t, 0, owner(t, filepath.Join(root, "work.txt")))
}

// TestASandboxedProgramMakesNoSetuidFile: a file a sandboxed program
// makes in its work tree is on the host, where a setuid or setgid bit
// would run it as its owner for anyone (root's, for a root engine's
// agent): chmod, install -m and a creating open with either bit are
// refused, a plain chmod is not, and the file on disk has neither.
func TestASandboxedProgramMakesNoSetuidFile(t *testing.T) {
	t.Parallel()
	needSandbox(t)
	work := t.TempDir()
	script := `touch f; chmod 4755 f; echo " chmod-suid:$?"; chmod g+s f; echo " chmod-sgid:$?"
chmod 755 f; echo " chmod:$?"; install -m 4755 f g; echo " install-suid:$?"
echo x > h; echo " plain-write:$?"`
	got := runIn(t, sandbox.Policy{Confine: true}.ForWorkspace(work), work, nil, script)
	for _, refused := range []string{"chmod-suid", "chmod-sgid", "install-suid"} {
		assert.NotContains(t, got, " "+refused+":0", "%s: %s", refused, got)
	}
	assert.Contains(t, got, " chmod:0", got)
	assert.Contains(t, got, " plain-write:0", got)
	for _, name := range []string{"f", "g"} {
		fi, err := os.Stat(filepath.Join(work, name))
		if os.IsNotExist(err) {
			continue
		}
		require.NoError(t, err)
		assert.Zero(t, fi.Mode()&(os.ModeSetuid|os.ModeSetgid), "%s is %s", name, fi.Mode())
	}
}
