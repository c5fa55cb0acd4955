package sandbox_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/internal/proc"
	"github.com/orbitrun/orbit/internal/sandbox"
	"github.com/orbitrun/orbit/internal/testkit"
)

// TestMain lets the test binary be the sandbox's re-executed step.
func TestMain(m *testing.M) {
	sandbox.Init()
	os.Exit(m.Run())
}

// secrets is a project's state as the tests hide it: the engine's seed
// and log key under state/creds, the agent's seed beside them, a key file
// elsewhere. Everything is readable by anyone, so that only the sandbox
// stands between a program and them.
func secrets(t *testing.T, dir string) (state, agentSeed, key string) {
	t.Helper()
	state = filepath.Join(dir, "state")
	require.NoError(t, os.MkdirAll(filepath.Join(state, "creds"), 0o755))
	for name, text := range map[string]string{"creds/engine.nk": "ENGINESEED", "creds/log.key": "LOGKEY", "creds/agent.nk": "AGENTSEED", "views.db": "VIEWS"} {
		require.NoError(t, os.WriteFile(filepath.Join(state, name), []byte(text), 0o644))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "config.yaml"), []byte("CONFIG"), 0o644))
	key = filepath.Join(dir, "external.key")
	require.NoError(t, os.WriteFile(key, []byte("EXTERNALKEY"), 0o644))
	return state, filepath.Join(state, "creds", "agent.nk"), key
}

// probeScript is what a curious agent's shell does: read the secrets,
// write beside the kept seed, look for other processes and capabilities.
const probeScript = `
cd "$1"
cat state/creds/engine.nk; echo " engine:$?"
cat state/creds/log.key; echo " logkey:$?"
cat state/views.db; echo " views:$?"
cat state/creds/agent.nk; echo " agent:$?"
cat external.key; echo " external:$?"
echo x > state/creds/agent.nk; echo " write-agent:$?"
echo x > config.yaml; echo " write-config:$?"
cat config.yaml; echo " config:$?"
touch state/new; echo " write-state:$?"
echo "pids:$(ls /proc | grep -c '^[0-9]')"
grep -E '^Cap(Eff|Prm|Bnd|Amb)' /proc/self/status
`

// runProbe runs probeScript in the sandbox of a policy that hides state
// (keeping the agent's seed) and the key file, through internal/proc as
// the engine starts an agent, and returns its output and the mode.
func runProbe(t *testing.T, dir string) (string, string) {
	t.Helper()
	state, agentSeed, key := secrets(t, dir)
	cmd := exec.Command("sh", "-c", probeScript, "probe", dir)
	return runWrapped(t, cmd, sandbox.Policy{Hide: []string{state, key}, Keep: []string{agentSeed}, ReadOnly: []string{dir}}, "", nil)
}

// runWrapped starts cmd under policy p in dir with env (empty: the
// test's), through internal/proc as the engine starts an agent, waits for
// it to exit 0 and returns what it printed and the sandbox's mode.
func runWrapped(t *testing.T, cmd *exec.Cmd, p sandbox.Policy, dir string, env []string) (string, string) {
	t.Helper()
	mode, err := sandbox.Wrap(cmd, p)
	require.NoError(t, err)
	var out bytes.Buffer
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = dir, env, &out, &out
	g, err := proc.Start(testkit.Context(t), cmd)
	require.NoError(t, err)
	res := g.Wait(testkit.Context(t), 0, 0)
	require.Equal(t, 0, res.ExitCode, "%v: %s", res.Err, out.String())
	return out.String(), mode
}

// checkProbe asserts that the probe saw what the sandbox leaves.
func checkProbe(t *testing.T, out string) {
	t.Helper()
	for _, secret := range []string{"ENGINESEED", "LOGKEY", "VIEWS", "EXTERNALKEY"} {
		assert.NotContains(t, out, secret)
	}
	assert.Contains(t, out, "No such file")
	assert.Contains(t, out, "AGENTSEED agent:0", "the agent's seed stays readable")
	assert.Contains(t, out, " external:0", "a hidden file reads empty")
	assert.NotContains(t, out, "write-agent:0", "the kept seed is read-only")
	assert.NotContains(t, out, "write-state:0", "the cover is read-only")
	assert.NotContains(t, out, "write-config:0", "a read-only path cannot be written")
	assert.Contains(t, out, "CONFIG config:0", "a read-only path can be read")
	assert.Regexp(t, `pids:[1-5]\n`, out, "only the sandbox's processes are in its /proc")
	// Root keeps CAP_SETFCAP (bit 31) alone, for Codex's bubblewrap.
	left := `0+`
	if os.Getuid() == 0 {
		left = `0+(80000000)?`
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "Cap") {
			assert.Regexp(t, `:\s+`+left+`$`, line, "no capability is left")
		}
	}
}

// TestASandboxedProgramSeesNoneOfTheHiddenPaths: a program Wrap starts
// reads no hidden file (a directory's are gone, a file is empty), keeps
// the one kept file, read-only, may write to none of them nor to the
// read-only directory they are in, sees only its
// own processes and holds no capability; the engine's view is unchanged.
func TestASandboxedProgramSeesNoneOfTheHiddenPaths(t *testing.T) {
	t.Parallel()
	needSandbox(t)
	dir := t.TempDir()
	out, mode := runProbe(t, dir)
	assert.Equal(t, sandbox.ModeMountNamespace, mode)
	checkProbe(t, out)
	seed, err := os.ReadFile(filepath.Join(dir, "state", "creds", "engine.nk"))
	require.NoError(t, err)
	assert.Equal(t, "ENGINESEED", string(seed), "the mounts stay in the sandbox")
	_, err = os.Stat(filepath.Join(dir, "state", "new"))
	assert.True(t, os.IsNotExist(err))
}

// needSandbox skips a test where the machine has no sandbox, but in the
// copy TestTheSandboxWorksForAUserOtherThanRoot runs, where it must.
func needSandbox(t *testing.T) {
	t.Helper()
	ok, why := sandbox.Available()
	switch {
	case !ok && os.Getenv(asOtherUser) != "":
		t.Fatalf("no sandbox as uid %d: %s", os.Getuid(), why)
	case !ok:
		t.Skipf("no sandbox on this machine: %s", why)
	}
}

// asOtherUser is set in the environment of the test binary's copy that
// TestTheSandboxWorksForAUserOtherThanRoot runs as nobody.
const asOtherUser = "ORBIT_SANDBOX_TEST_AS_NOBODY"

// TestTheSandboxWorksForAUserOtherThanRoot runs the tests of what a
// sandboxed program sees and may write as nobody (setpriv), where the
// sandbox needs a user namespace: an engine run by an ordinary user. The
// test binary, copied where nobody may run it, is the sandbox's step
// there too.
func TestTheSandboxWorksForAUserOtherThanRoot(t *testing.T) {
	t.Parallel()
	setpriv, err := exec.LookPath("setpriv")
	if os.Getuid() != 0 || err != nil {
		t.Skip("needs root and setpriv to become nobody")
	}
	needSandbox(t)
	base := t.TempDir()
	self, err := os.Executable()
	require.NoError(t, err)
	// cp writes the copy, not this process: a file this process had open
	// for writing would be inherited by a parallel test's fork until its
	// exec, and running the copy then fails with "text file busy".
	bin := filepath.Join(base, "sandbox.test")
	out, err := exec.Command("cp", self, bin).CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.NoError(t, os.Chmod(bin, 0o755))
	work := filepath.Join(base, "work")
	require.NoError(t, os.Mkdir(work, 0o700))
	// t.TempDir's two levels are its owner's alone; nothing above them
	// is touched.
	require.NoError(t, os.Chmod(filepath.Dir(base), 0o711))
	require.NoError(t, os.Chmod(base, 0o755))
	require.NoError(t, os.Chmod(work, 0o777))
	tests := []string{"TestASandboxedProgramSeesNoneOfTheHiddenPaths", "TestAConfinedProgramWritesOnlyItsWorkTreeAndScratch",
		"TestALinkedWorkTreesGitDirectoryIsReadOnly", "TestAWorkTreeUnderAHiddenDirectoryStaysWorkable"}
	cmd := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", bin,
		"-test.run=^("+strings.Join(tests, "|")+")$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), asOtherUser+"=1", "TMPDIR="+work, "HOME="+work)
	cmd.Dir = work
	out, err = cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	for _, name := range tests {
		assert.Contains(t, string(out), "--- PASS: "+name, "%s", out)
	}
	assert.NotContains(t, string(out), "SKIP")
}

// BenchmarkStart measures what the sandbox adds to starting a program:
// the re-executed step, its namespaces and mounts, against a plain start;
// confined, also the read-only file system, the private /tmp and a work
// tree bound back.
func BenchmarkStart(b *testing.B) {
	if ok, why := sandbox.Available(); !ok {
		b.Skipf("no sandbox on this machine: %s", why)
	}
	dir := b.TempDir()
	state := filepath.Join(dir, "state", "creds")
	if err := os.MkdirAll(state, 0o700); err != nil {
		b.Fatal(err)
	}
	hide := []string{filepath.Dir(state)}
	policies := map[string]*sandbox.Policy{"plain": nil, "sandboxed": {Hide: hide},
		"confined": {Hide: hide, Confine: true, Work: []string{dir}}}
	for name, p := range policies {
		b.Run(name, func(b *testing.B) {
			for range b.N {
				cmd := exec.Command("true")
				if p != nil {
					if _, err := sandbox.Wrap(cmd, *p); err != nil {
						b.Fatal(err)
					}
				}
				if err := cmd.Run(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestASandboxedProgramCannotSignalTheEngine: the program's PID namespace
// holds its own processes only: the engine's pid (this test process's,
// and its parent's) names no process it can signal.
func TestASandboxedProgramCannotSignalTheEngine(t *testing.T) {
	t.Parallel()
	needSandbox(t)
	script := `kill -0 "$1"; echo " engine:$?"; kill -0 "$2"; echo " parent:$?"`
	cmd := exec.Command("sh", "-c", script, "probe", strconv.Itoa(os.Getpid()), strconv.Itoa(os.Getppid()))
	out, mode := runWrapped(t, cmd, sandbox.Policy{}, "", nil)
	assert.Equal(t, sandbox.ModeMountNamespace, mode)
	assert.NotContains(t, out, " engine:0", "the engine was reachable by its pid: %s", out)
	assert.NotContains(t, out, " parent:0", "the engine's parent was reachable by its pid: %s", out)

	// Outside the sandbox the same script reaches both.
	plain, err := exec.Command("sh", "-c", script, "probe", strconv.Itoa(os.Getpid()), strconv.Itoa(os.Getppid())).CombinedOutput()
	require.NoError(t, err)
	assert.Contains(t, string(plain), " engine:0")
}

// TestUnenforcedSaysWhatTheSandboxLeaves: a program's record says what
// its mode did not keep it from: everything without a sandbox, nothing
// more in the sandbox where a root engine's program runs as a user of its
// own (TestARootEnginesAgentRunsAsAUserOfItsOwn) or the engine is not
// root.
func TestUnenforcedSaysWhatTheSandboxLeaves(t *testing.T) {
	t.Parallel()
	assert.Contains(t, sandbox.Unenforced(sandbox.ModeNone), "no sandbox")
	assert.Contains(t, sandbox.Unenforced(sandbox.ModeNone), "the engine's keys")
	assert.Empty(t, sandbox.Unenforced(sandbox.ModeMountNamespace))
}
