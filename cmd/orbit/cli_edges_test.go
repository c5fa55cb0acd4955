package main_test

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/internal/testkit"
)

// TestEmptyListsAreJSONArrays: a read command with nothing to list prints
// `[]` with --json, not `null`, so that a script can iterate over it.
func TestEmptyListsAreJSONArrays(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	defer p.StopEngine()
	for _, args := range [][]string{{"run", "history"}, {"task", "list"}} {
		r := p.Orbit(append([]string{"--json"}, args...)...)
		assert.Equal(t, 0, r.Code, r.String())
		assert.Equal(t, "[]", strings.TrimSpace(r.Stdout), "%v", args)
	}
}

// TestTaskPlanWithoutFileNamesItsFlag: `task plan` takes its plan with
// --file, and says so when it is missing (not `task create`'s --plan).
func TestTaskPlanWithoutFileNamesItsFlag(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	defer p.StopEngine()
	r := p.Orbit("task", "plan", "T-1")
	assert.Equal(t, 2, r.Code, r.String())
	assert.Contains(t, r.Stderr, "--file FILE is required")
	assert.NotContains(t, r.Stderr, "--plan")
}

// TestNkeyHelpExampleRunsNoJob: the example in `orbit nkey new --help`
// must not be a command that runs a job (`orbit run list` runs a job
// named list).
func TestNkeyHelpExampleRunsNoJob(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	r := p.Orbit("nkey", "new", "--help")
	assert.Equal(t, 0, r.Code, r.String())
	assert.NotContains(t, r.Stdout, "orbit run list")
	assert.Contains(t, r.Stdout, "orbit run history")
}

// TestCLIEdgesAreUsageErrors: what a user mistypes is exit 2 with a
// message that says what is wrong, at once: an unknown subcommand, a run or
// task that does not exist (never an empty table, a wait for ever, or an
// internal prefix), a missing --nkey file.
func TestCLIEdgesAreUsageErrors(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"job", "bogus"}, `unknown command "bogus" for "orbit job"`},
		{[]string{"task", "bogus"}, `unknown command "bogus" for "orbit task"`},
		{[]string{"run", "events", "NOPE"}, "no run NOPE"},
		{[]string{"run", "tail", "NOPE"}, "no run NOPE"},
		{[]string{"run", "show", "NOPE"}, "orbit: no run NOPE\n"},
		{[]string{"run", "cancel", "NOPE"}, "orbit: no run NOPE\n"},
		{[]string{"task", "show", "T-9"}, "orbit: no task T-9\n"},
		{[]string{"--nkey", "/nonexistent/seed", "run", "history"}, "--nkey: stat /nonexistent/seed"},
	} {
		r := p.Orbit(tc.args...)
		assert.Equal(t, 2, r.Code, "%v: %s", tc.args, r)
		assert.Contains(t, r.Stderr, tc.want, "%v", tc.args)
		assert.NotContains(t, r.Stderr, "projector:", "%v", tc.args)
	}
	r := p.Orbit("job")
	assert.Equal(t, 0, r.Code, r.String())
	assert.Contains(t, r.Stdout, "Available Commands")
}

// TestAHugeIDIsClippedAndHarmsNoEngine: a 100 KB run or task id is
// refused (exit 2) with a message that quotes it clipped, never whole; the
// engine, which read the log for it, still serves afterwards (the read
// once passed the server's control line, and the server closed the
// engine's connection, which stopped it).
func TestAHugeIDIsClippedAndHarmsNoEngine(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	require.Equal(t, 0, p.Orbit("job", "run", "hello").Code)
	pid := p.EnginePID()
	id := strings.Repeat("A", 100_000)
	for _, args := range [][]string{
		{"run", "show", id}, {"run", "events", id}, {"run", "tail", id}, {"run", "logs", id},
		{"run", "trace", id}, {"run", "cancel", id}, {"run", "retry", id}, {"run", "signal", id, "go"},
		{"task", "show", id}, {"groundhog", "show", id}, {"groundhog", "approve", id}, {"blob", "get", id},
	} {
		r := p.Orbit(args...)
		assert.Equal(t, 2, r.Code, "%v: %.300s", args[:2], r.Stderr)
		assert.Less(t, len(r.Stderr), 1200, "%v: %.300s", args[:2], r.Stderr)
	}
	assert.Equal(t, pid, p.EnginePID(), "the same engine serves")
	assert.Equal(t, 0, p.Orbit("run", "show").Code)
}

// TestRunHistorySaysWhatItLeavesOut: a list cut at -n says on stderr how
// many runs there are; a negative -n is refused, not taken for all.
func TestRunHistorySaysWhatItLeavesOut(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	for range 3 {
		require.Equal(t, 0, p.Orbit("job", "run", "hello", "--detach").Code)
	}
	r := p.Orbit("run", "history", "-n", "2")
	require.Equal(t, 0, r.Code, r.String())
	assert.Len(t, strings.Split(strings.TrimSpace(r.Stdout), "\n"), 3, "a header and two runs")
	assert.Equal(t, "the 2 newest of 3 runs; orbit run history -n 0 lists them all\n", r.Stderr)
	r = p.Orbit("run", "history", "-n", "3", "-j", "hello")
	require.Equal(t, 0, r.Code, r.String())
	assert.Empty(t, r.Stderr, "nothing left out")
	r = p.Orbit("run", "history", "--limit", "-5")
	assert.Equal(t, 2, r.Code, r.String())
	assert.Contains(t, r.Stderr, "--limit: want how many runs to list (0 for all), not -5")
	assert.Empty(t, r.Stdout)
}

// TestServeOnABusyPortSaysSoAtOnce: the embedded server would retry the
// port for as long as it is let; orbit serve says the port is taken.
func TestServeOnABusyPortSaysSoAtOnce(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	p := testkit.NewProject(t)
	r := p.Orbit("serve", "--listen", ln.Addr().String())
	assert.Equal(t, 2, r.Code, r.String())
	assert.Contains(t, r.Stderr, "cannot listen: "+ln.Addr().String())
	assert.Contains(t, r.Stderr, "address already in use")
}

// TestARunSeesTheEnvironmentOfWhoRequestedIt: {{ env.NAME }} reads the
// value the requesting command had, pinned in run.requested, whether or not
// that command started the engine.
func TestARunSeesTheEnvironmentOfWhoRequestedIt(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	p.WriteFile(".orbit/jobs/greet.yaml", `schemaVersion: 2
kind: Job
metadata: {name: greet}
spec:
  steps:
    - id: say
      spec: {type: deterministic, action: echo, config: {greeting: "{{ env.GREETING }}"}}
`)
	serve(t, p)
	for _, greeting := range []string{"hello", "bonjour"} {
		cmd := p.Command("job", "run", "greet", "--json")
		cmd.Env = append(cmd.Env, "GREETING="+greeting)
		out, err := cmd.Output()
		require.NoError(t, err)
		assert.Contains(t, string(out), `"greeting": "`+greeting+`"`)
	}
	r := p.Orbit("run", "events", "--json", "--type", "run.requested")
	require.Equal(t, 0, r.Code, r.String())
	assert.Contains(t, r.Stdout, `"GREETING": "bonjour"`)

	r = p.Orbit("job", "run", "greet")
	assert.Equal(t, 1, r.Code, r.String())
	assert.Contains(t, r.Stderr, "environment variable GREETING is not set (neither where the run was requested nor in the engine's environment)")
}

// TestInitRefusesAMissingRootAndWarnsWhenNesting: init makes .orbit/ in an
// existing directory only, and says so when that directory is inside
// another project.
func TestInitRefusesAMissingRootAndWarnsWhenNesting(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	missing := filepath.Join(t.TempDir(), "no", "such", "dir")
	r := p.Orbit("--root", missing, "init")
	assert.Equal(t, 2, r.Code, r.String())
	assert.Contains(t, r.Stderr, missing+" is not a directory")
	_, err := os.Stat(missing)
	assert.True(t, os.IsNotExist(err), "nothing was created")

	sub := filepath.Join(p.Root, "sub")
	require.NoError(t, os.Mkdir(sub, 0o755))
	r = p.Orbit("--root", sub, "init")
	assert.Equal(t, 0, r.Code, r.String())
	assert.Contains(t, r.Stderr, "is inside the Orbit project "+p.Root)
}

// TestAnEngineWhoseStateIsRemovedStops: rm -rf of the project's state
// (make demo run twice) must not leave an engine running beside the next.
func TestAnEngineWhoseStateIsRemovedStops(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	pid := startedEngine(t, p)
	// The engine writes into the directory while it is removed: remove
	// again what it wrote meanwhile, as rm -rf run twice would.
	state := filepath.Join(p.Root, ".orbit", "state")
	require.Eventually(t, func() bool { return os.RemoveAll(state) == nil }, 5*time.Second, 10*time.Millisecond)
	assert.True(t, testkit.WaitGone(pid, 15*time.Second), "the engine stopped")
	r := p.Orbit("job", "run", "hello")
	assert.Equal(t, 0, r.Code, r.String())
}

// TestFiltersThatMatchNothingSaySo: a filter that selects nothing says so
// on stderr instead of printing an empty table; a --type pattern no event
// type of a run can match (`step`, meant as step.*) is a usage error.
func TestFiltersThatMatchNothingSaySo(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	defer p.StopEngine()
	require.Equal(t, 0, p.Orbit("job", "run", "hello").Code)

	r := p.Orbit("run", "events", "--type", "step")
	assert.Equal(t, 2, r.Code, r.String())
	assert.Contains(t, r.Stderr, "--type step: no event type of a run matches it")
	assert.Contains(t, r.Stderr, "step.*")

	r = p.Orbit("run", "events", "--type", "step.>")
	assert.Equal(t, 0, r.Code, r.String())
	assert.Contains(t, r.Stdout, "step.finished")

	r = p.Orbit("run", "events", "--step", "nostep")
	assert.Equal(t, 0, r.Code, r.String())
	assert.Contains(t, r.Stderr, "matches --step nostep")

	r = p.Orbit("run", "history", "-j", "nosuch")
	assert.Equal(t, 0, r.Code, r.String())
	assert.Contains(t, r.Stderr, "no run of job nosuch")

	r = p.Orbit("run", "history", "-j", "hello")
	assert.Equal(t, 0, r.Code, r.String())
	assert.Empty(t, r.Stderr)
}
