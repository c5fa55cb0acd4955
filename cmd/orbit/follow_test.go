package main_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

// followedAppender starts `job run appender` on a new project, in the
// foreground (following its run), and returns the project, the file the
// job appends to, the command and what it prints.
func followedAppender(t *testing.T) (p *testkit.Project, lines string, cmd *exec.Cmd, stdout, stderr *bytes.Buffer) {
	t.Helper()
	p = testkit.NewProject(t)
	p.WriteFile(".orbit/jobs/appender.yaml", appendJob)
	cmd = p.Command("job", "run", "appender")
	stdout, stderr = &bytes.Buffer{}, &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	return p, filepath.Join(p.Root, "lines.txt"), cmd, stdout, stderr
}

// TestJobRunFollowsItsRunAcrossAKilledEngine SIGKILLs the background engine
// a foreground `job run` started while a step runs: the command starts
// another engine and follows the run to its end, printing every step once,
// and exits with the run's outcome.
func TestJobRunFollowsItsRunAcrossAKilledEngine(t *testing.T) {
	t.Parallel()
	p, lines, cmd, stdout, stderr := followedAppender(t)
	waitFor(t, "step two to write", func() bool { return count(readLines(t, lines), "two") == 1 })
	first := p.EnginePID()
	require.NotZero(t, first)
	require.NoError(t, syscall.Kill(first, syscall.SIGKILL))

	require.NoError(t, cmd.Wait(), stderr.String())
	second := p.EnginePID()
	assert.NotZero(t, second)
	assert.NotEqual(t, first, second, "a new engine serves the root")

	out := stderr.String()
	assert.Contains(t, out, "lost the engine")
	assert.Regexp(t, `run \S+ resumed by engine (\S+) \(engine \S+ ran it before\)`, out, "another engine resumed it")
	for _, step := range []string{"one", "two", "three"} {
		assert.Equal(t, 1, strings.Count(out, "  success   "+step+" "), "step %s ends once:\n%s", step, out)
	}
	assert.Equal(t, 1, strings.Count(out, ") started\n"), out)
	assert.Equal(t, 1, strings.Count(out, ") success in "), out)
	runID := strings.TrimSpace(stdout.String())
	assert.Equal(t, events.StateSuccess, runView(t, p, runID).State)
}

// TestJobRunOnAnExternalEngineThatDiesSaysHowToFollowOn: with --nats-url
// the command cannot start the engine; it says so with the hint to tail the
// run, and exits 3, instead of waiting for ever.
func TestJobRunOnAnExternalEngineThatDiesSaysHowToFollowOn(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	p.WriteFile(".orbit/jobs/appender.yaml", appendJob)
	lines := filepath.Join(p.Root, "lines.txt")
	engine := serve(t, p)
	data, err := os.ReadFile(filepath.Join(p.Root, ".orbit", "state", "engine.json"))
	require.NoError(t, err)
	var info struct {
		URL string `json:"url"`
	}
	require.NoError(t, json.Unmarshal(data, &info))

	cmd := p.Command("--nats-url", info.URL, "job", "run", "appender")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	waitFor(t, "step two to write", func() bool { return count(readLines(t, lines), "two") == 1 })
	require.NoError(t, engine.Process.Signal(syscall.SIGKILL))

	var buf bytes.Buffer
	_, _ = buf.ReadFrom(out)
	err = cmd.Wait()
	var exitErr *exec.ExitError
	require.ErrorAs(t, err, &exitErr, stderr.String())
	assert.Equal(t, 3, exitErr.ExitCode(), stderr.String())
	runID := strings.TrimSpace(buf.String())
	assert.Contains(t, stderr.String(), "orbit run tail "+runID)
}

// TestInterruptedJobRunExits130AndLeavesTheRunRunning: Ctrl-C of a followed
// `job run` stops following, not the run: exit 130 (as shells report
// SIGINT, and not 1, which means the run failed), with the commands that
// follow or cancel the run, which goes on to its end.
func TestInterruptedJobRunExits130AndLeavesTheRunRunning(t *testing.T) {
	t.Parallel()
	_, lines, cmd, stdout, stderr := followedAppender(t)
	waitFor(t, "step one to write", func() bool { return count(readLines(t, lines), "one") == 1 })
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))

	err := cmd.Wait()
	var exitErr *exec.ExitError
	require.ErrorAs(t, err, &exitErr, stderr.String())
	assert.Equal(t, 130, exitErr.ExitCode(), stderr.String())
	runID := strings.TrimSpace(stdout.String())
	require.NotEmpty(t, runID)
	assert.Contains(t, stderr.String(), "orbit run cancel "+runID)
	waitFor(t, "the run to go on to step three", func() bool { return count(readLines(t, lines), "three") == 1 })
}
