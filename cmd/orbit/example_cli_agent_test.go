package main_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

// TestSeededExampleCLIAgentRunsClaudeCode runs the seeded job
// example_cli_agent as make demo-cli-agent does: the real Claude Code CLI,
// found on PATH by the seeded executor claude, against the scripted model
// of examples/cli-agent. Claude Code writes hello.txt into the project
// root through Write, reads it back through Read, and the step records
// both calls under Orbit's names.
func TestSeededExampleCLIAgentRunsClaudeCode(t *testing.T) {
	t.Parallel()
	bin := testkit.ClaudeCLI(t)
	data, err := os.ReadFile(filepath.Join(testkit.ModuleRoot(t), "examples", "cli-agent", "script.json"))
	require.NoError(t, err)
	var script struct {
		Turns []testkit.Turn `json:"turns"`
	}
	require.NoError(t, json.Unmarshal(data, &script))
	srv := testkit.NewAnthropicServer(t, script.Turns...)
	p := testkit.NewProject(t)
	p.Env = append(p.Env, testkit.ClaudeEnv(t, srv)...)
	p.Env = append(p.Env, "PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"))

	id := runJob(t, p, "example_cli_agent")
	got, err := os.ReadFile(filepath.Join(p.Root, "hello.txt"))
	require.NoError(t, err)
	assert.Equal(t, "Hello from Claude Code.\n", string(got))

	var names []string
	for _, ev := range runEvents(t, p, id, "--type", events.ToolCalled) {
		var d events.ToolCalledData
		require.NoError(t, ev.Decode(&d))
		names = append(names, d.AgentTool+"="+d.Name)
	}
	assert.Equal(t, []string{"Write=fs.write", "Read=fs.read"}, names)
	reqs := srv.Scripted()
	require.Len(t, reqs, 3)
	assert.Equal(t, "claude-sonnet-4-5", reqs[0].Model)
	assert.Contains(t, reqs[0].System, "You keep files short and check your work.")
	v := runView(t, p, id)
	assert.Equal(t, "hello.txt says: Hello from Claude Code.", v.Output.(map[string]any)["final_message"])
}
