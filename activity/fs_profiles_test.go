package activity_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/activity"
	"github.com/orbitrun/orbit/agent"
	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/executor"
	"github.com/orbitrun/orbit/internal/runrig"
	"github.com/orbitrun/orbit/internal/testkit"
)

// seededProfileEngine is an engine whose workers know the profiles every
// project has (the seeded ones), as the engine's wiring gives them.
func seededProfileEngine(t *testing.T, log *events.Log, root string, env map[string]string) {
	t.Helper()
	profiles := map[string]agent.FSProfile{}
	for name, p := range (&assets.Config{}).Profiles() {
		profiles[name] = agent.FSProfile{Name: name, Read: p.Read, Write: p.Write}
	}
	lookup := func(name string) (string, bool) { v, ok := env[name]; return v, ok }
	runrig.Start(t, executor.Config{Log: log, Root: root, Env: lookup}, activity.WorkerConfig{Log: log, Env: lookup,
		Settings: func() activity.Settings { return activity.Settings{FSProfiles: profiles} }})
}

// TestSeededFSProfilesBoundTheAgentsTools: the same agent script, run
// under each seeded profile with on_denial: continue, is denied exactly
// the calls outside the profile, and writes only what it allows.
func TestSeededFSProfilesBoundTheAgentsTools(t *testing.T) {
	t.Parallel()
	log := testkit.StartLog(t, events.Config{})
	fixture := writeFixture(t, t.TempDir(), "calls.json", `[
	  {"content": [
	    {"kind": "tool_use", "id": "c1", "name": "fs.read", "input": {"path": "README.md"}},
	    {"kind": "tool_use", "id": "c2", "name": "fs.write", "input": {"path": "docs/guide.md", "content": "guide"}},
	    {"kind": "tool_use", "id": "c3", "name": "fs.write", "input": {"path": "notes.txt", "content": "notes"}},
	    {"kind": "tool_use", "id": "c4", "name": "fs.write", "input": {"path": "src/main.go", "content": "package main"}}
	  ]},
	  {"content": [{"kind": "text", "text": "done"}]}
	]`)
	tests := []struct {
		profile string
		denied  []string // tool_use ids
	}{
		{"implementer", nil},
		{"reviewer", []string{"c2", "c3", "c4"}},
		{"pure_compute", []string{"c1", "c2", "c3", "c4"}},
		{"docs_writer", []string{"c4"}},
	}
	for _, tt := range tests {
		t.Run(tt.profile, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, "README.md"), []byte("# readme"), 0o644))
			require.NoError(t, os.MkdirAll(filepath.Join(dir, "docs"), 0o755))
			require.NoError(t, os.MkdirAll(filepath.Join(dir, "src"), 0o755))
			seededProfileEngine(t, log, dir, map[string]string{"ORBIT_REPLAY_FIXTURE": fixture})
			runID, fin := runrig.RunJob(t, log, runrig.ParseJob(t, `
schemaVersion: 2
kind: Job
metadata: {name: profiled}
spec:
  steps:
    - id: agent
      fsProfile: `+tt.profile+`
      spec: {type: agent_loop, on_denial: continue, tools: [fs.read, fs.write]}
`), nil)
			require.Equal(t, events.StateSuccess, fin.State, "%+v", fin.Error)
			var denied []string
			for _, d := range runrig.DecodeAll[events.ToolDeniedData](t, runrig.OfType(runrig.History(t, log, runID), events.ToolDenied)) {
				denied = append(denied, d.ToolUseID)
				assert.Contains(t, d.Reason, "fsProfile \""+tt.profile+"\"")
			}
			assert.Equal(t, tt.denied, denied)
			for id, path := range map[string]string{"c2": "docs/guide.md", "c3": "notes.txt", "c4": "src/main.go"} {
				_, err := os.Stat(filepath.Join(dir, path))
				assert.Equal(t, !slices.Contains(tt.denied, id), err == nil, "%s written", path)
			}
		})
	}
}
