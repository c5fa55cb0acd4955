package main_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/engine"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

// profileProject is a project whose agent (a replayed script) writes
// notes.txt and docs/guide.md with fs.write, under the fs profile its job
// names; the engine it starts runs the script.
func profileProject(t *testing.T) *testkit.Project {
	t.Helper()
	p := testkit.NewProject(t)
	p.Env = append(p.Env, "ORBIT_REPLAY_FIXTURE="+p.WriteFile("writes.json", `[
	  {"content": [
	    {"kind": "tool_use", "id": "w1", "name": "fs.write", "input": {"path": "notes.txt", "content": "notes"}},
	    {"kind": "tool_use", "id": "w2", "name": "fs.write", "input": {"path": "docs/guide.md", "content": "guide"}}], "stop_reason": "tool_use"},
	  {"content": [{"kind": "text", "text": "done"}]}
	]`))
	for _, profile := range []string{"writer", "docs"} {
		p.WriteFile(".orbit/jobs/"+profile+".yaml", `schemaVersion: 2
kind: Job
metadata: {name: `+profile+`}
spec:
  steps:
    - id: agent
      spec: {type: agent_loop, provider: claude, tools: [fs.write], on_denial: continue, fsProfile: `+profile+`}
`)
	}
	return p
}

// writeConfig replaces the project's .orbit/config.yaml.
func writeConfig(t *testing.T, p *testkit.Project, text string) {
	t.Helper()
	p.WriteFile(".orbit/config.yaml", text)
}

// engineStatus runs orbit engine status --json.
func engineStatus(t *testing.T, p *testkit.Project) engine.Status {
	t.Helper()
	return orbitJSON[engine.Status](t, p, "engine", "status", "--json")
}

// runWrites runs job and returns the paths its agent was denied.
func runWrites(t *testing.T, p *testkit.Project, job string) (denied []string) {
	t.Helper()
	for _, f := range []string{"notes.txt", "docs/guide.md"} {
		_ = os.Remove(filepath.Join(p.Root, f))
	}
	r := p.Orbit("job", "run", job)
	require.Equal(t, 0, r.Code, r.String())
	for _, ev := range runEvents(t, p, strings.TrimSpace(r.Stdout), "--type", events.ToolDenied) {
		var d events.ToolDeniedData
		require.NoError(t, ev.Decode(&d))
		denied = append(denied, d.Path)
		assert.NoFileExists(t, filepath.Join(p.Root, d.Path), "a denied write wrote")
	}
	return denied
}

// TestARunningEngineAppliesProfileEdits: edits of .orbit/config.yaml take
// effect in the engine that is running, from its next step: a profile
// tightened to write nothing holds at once, and a profile added is known.
func TestARunningEngineAppliesProfileEdits(t *testing.T) {
	t.Parallel()
	p := profileProject(t)
	writeConfig(t, p, "fs_profiles:\n  writer: {read: [\"**\"], write: [\"**\"]}\n")
	assert.Empty(t, runWrites(t, p, "writer"))
	assert.FileExists(t, filepath.Join(p.Root, "notes.txt"))
	pid := p.EnginePID()
	require.NotZero(t, pid)

	writeConfig(t, p, "fs_profiles:\n  writer: {read: [\"**\"], write: []}\n")
	assert.Equal(t, []string{"notes.txt", "docs/guide.md"}, runWrites(t, p, "writer"), "the tightened profile holds at once")

	writeConfig(t, p, "fs_profiles:\n  writer: {read: [\"**\"], write: []}\n  docs: {read: [\"**\"], write: [\"docs/**\"]}\n")
	assert.Equal(t, []string{"notes.txt"}, runWrites(t, p, "docs"), "a profile added is known to the engine")
	assert.FileExists(t, filepath.Join(p.Root, "docs", "guide.md"))
	assert.Equal(t, pid, p.EnginePID(), "one engine ran every step")
}

// TestEngineStatusSaysWhatNeedsARestart: what a running engine cannot
// change (durability) is reported as needing a restart — by orbit engine
// status and by a run — and a bad file keeps the running configuration
// and says why, in status and in the engine's log. orbit engine restart
// applies the rest.
func TestEngineStatusSaysWhatNeedsARestart(t *testing.T) {
	t.Parallel()
	p := profileProject(t)
	writeConfig(t, p, "fs_profiles:\n  writer: {read: [\"**\"], write: []}\n")
	require.Equal(t, 0, p.Orbit("job", "run", "writer").Code)
	pid := p.EnginePID()
	require.NotZero(t, pid)
	first := engineStatus(t, p)
	assert.Equal(t, pid, first.PID)
	assert.True(t, first.Background)
	assert.Equal(t, filepath.Join(p.Root, ".orbit", "config.yaml"), first.Config.File)
	assert.NotEmpty(t, first.Config.Hash)
	assert.Empty(t, first.Config.RestartNeeded)
	assert.Nil(t, first.Config.Error)

	writeConfig(t, p, "durability: relaxed\nfs_profiles:\n  writer: {read: [\"**\"], write: []}\n")
	st := engineStatus(t, p)
	assert.Equal(t, []string{"durability"}, st.Config.RestartNeeded)
	assert.Equal(t, events.DurabilityStrict, st.Durability, "durability changes only with a restart")
	assert.NotEqual(t, first.Config.Hash, st.Config.Hash)
	r := p.Orbit("engine", "status")
	require.Equal(t, 0, r.Code, r.String())
	assert.Contains(t, r.Stdout, "restart needed: durability")
	r = p.Orbit("job", "run", "writer")
	require.Equal(t, 0, r.Code, r.String())
	assert.Contains(t, r.Stderr, "restart needed: durability", "a run says that the engine runs with a setting the file changed")

	// A bad file: the engine keeps what it runs with, and says why.
	writeConfig(t, p, "fs_profiles:\n  writer: {read: [\"**\"], write: [\"/etc/**\"]}\n")
	st = engineStatus(t, p)
	require.NotNil(t, st.Config.Error, "%+v", st.Config)
	assert.Equal(t, filepath.Join(p.Root, ".orbit", "config.yaml"), st.Config.Error.File)
	assert.Equal(t, 2, st.Config.Error.Line)
	assert.Equal(t, "fs_profiles.writer.write[0]", st.Config.Error.Path)
	assert.Contains(t, st.Config.Error.Reason, "must be relative to the workspace")
	assert.Equal(t, []string{"durability"}, st.Config.RestartNeeded, "still the last good file's")
	r = p.Orbit("engine", "status")
	assert.Contains(t, r.Stdout, "config.yaml:2: fs_profiles.writer.write[0]")
	assert.Contains(t, r.Stdout, "keeps the configuration it loaded")
	log, err := os.ReadFile(filepath.Join(p.Root, ".orbit", "state", "engine.log"))
	require.NoError(t, err)
	assert.Contains(t, string(log), "fs_profiles.writer.write[0]")

	writeConfig(t, p, "durability: relaxed\nfs_profiles:\n  writer: {read: [\"**\"], write: [\"**\"]}\n")
	st = engineStatus(t, p)
	assert.Nil(t, st.Config.Error, "a good file again clears the error")

	r = p.Orbit("engine", "restart")
	require.Equal(t, 0, r.Code, r.String())
	assert.False(t, testkit.Runs(pid), "the old engine is gone")
	st = engineStatus(t, p)
	assert.NotEqual(t, pid, st.PID)
	assert.Equal(t, events.DurabilityRelaxed, st.Durability)
	assert.Empty(t, st.Config.RestartNeeded)
	assert.Empty(t, runWrites(t, p, "writer"))
}

// TestEngineStopAndStatusWithoutAnEngine: stop ends the engine gracefully
// and waits for it; with none running, status and stop exit 3.
func TestEngineStopAndStatusWithoutAnEngine(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	r := p.Orbit("engine", "status")
	assert.Equal(t, 3, r.Code, r.String())
	assert.Contains(t, r.Stderr, "no engine")
	r = p.Orbit("engine", "stop")
	assert.Equal(t, 3, r.Code, r.String())

	require.Equal(t, 0, p.Orbit("job", "run", "example").Code)
	pid := p.EnginePID()
	require.NotZero(t, pid)
	r = p.Orbit("engine", "stop")
	require.Equal(t, 0, r.Code, r.String())
	assert.Contains(t, r.Stdout, "stopped engine")
	assert.Contains(t, r.Stdout, strconv.Itoa(pid))
	assert.False(t, testkit.Runs(pid), "stop waits for the engine to exit")
	_, err := os.Stat(filepath.Join(p.Root, ".orbit", "state", "engine.json"))
	assert.True(t, os.IsNotExist(err), "engine.json is gone with it")
	assert.Equal(t, 3, p.Orbit("engine", "status").Code)
}

// TestEngineRestartOfAForegroundServe: orbit engine restart does not take
// an engine a person runs in a terminal from under them: it says how.
func TestEngineRestartOfAForegroundServe(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	engine := serve(t, p)
	r := p.Orbit("engine", "restart")
	assert.Equal(t, 2, r.Code, r.String())
	assert.Contains(t, r.Stderr, "orbit serve")
	assert.Contains(t, r.Stderr, strconv.Itoa(engine.Process.Pid))
	assert.Equal(t, engine.Process.Pid, p.EnginePID(), "still running")

	r = p.Orbit("engine", "stop")
	require.Equal(t, 0, r.Code, r.String())
	require.NoError(t, engine.Wait(), "orbit serve exits 0 when stopped")
}

// TestEngineStopOnAClusterStopsOnlyTheEngineMeant: with two engines on a
// cluster, engine stop stops the engine of its root (or the one --engine
// names) and no other; status reaches either by --engine, and without an
// engine of its own a root's status is exit 3 naming the others.
func TestEngineStopOnAClusterStopsOnlyTheEngineMeant(t *testing.T) {
	t.Parallel()
	_, ps, es := twoEngines(t)
	ids := [2]string{}
	for i, p := range ps {
		info, err := engine.ReadInfo(p.Root)
		require.NoError(t, err)
		ids[i] = info.Engine
	}
	st := orbitJSON[engine.Status](t, ps[0], "engine", "status", "--engine", ids[1], "--json")
	assert.Equal(t, ids[1], st.Engine)
	assert.Equal(t, ps[1].Root, st.Root)

	r := ps[0].Orbit("engine", "stop")
	require.Equal(t, 0, r.Code, r.String())
	assert.Contains(t, r.Stdout, ids[0])
	require.NoError(t, es[0].Cmd.Wait(), "the root's engine exits 0")
	assert.Equal(t, ids[1], engineStatus(t, ps[1]).Engine, "the other engine goes on")

	r = ps[0].Orbit("engine", "status")
	assert.Equal(t, 3, r.Code, r.String())
	assert.Contains(t, r.Stderr, "--engine: "+ids[1])
	r = ps[0].Orbit("engine", "stop", "--engine", ids[1])
	require.Equal(t, 0, r.Code, r.String())
	require.NoError(t, es[1].Cmd.Wait())
}
