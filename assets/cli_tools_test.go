package assets_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/assets"
)

func TestClaudeCodeGrant(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		tools    []string
		programs []string
		want     assets.ClaudeCodeGrantData
	}{
		{"none", nil, nil, assets.ClaudeCodeGrantData{Orbit: map[string]string{}}},
		{"files", []string{"fs.write", "fs.read", "fs.edit"}, nil, assets.ClaudeCodeGrantData{
			Tools: []string{"Edit", "Read", "Write"}, Allowed: []string{"Edit(./**)", "Read(./**)"},
			Orbit: map[string]string{"Edit": "fs.edit", "Read": "fs.read", "Write": "fs.write"}}},
		{"a rule per program", []string{"shell.exec"}, []string{"git", "go"}, assets.ClaudeCodeGrantData{
			Tools: []string{"Bash"}, Allowed: []string{"Bash(git:*)", "Bash(go:*)"}, Orbit: map[string]string{"Bash": "shell.exec"}}},
		{"shell.exec stands for Bash over fs.list", []string{"fs.list", "shell.exec"}, []string{"ls", "make"}, assets.ClaudeCodeGrantData{
			Tools: []string{"Bash"}, Allowed: []string{"Bash(ls:*)", "Bash(make:*)"}, Orbit: map[string]string{"Bash": "shell.exec"}}},
		{"fs.list alone", []string{"fs.list"}, nil, assets.ClaudeCodeGrantData{
			Tools: []string{"Bash"}, Allowed: []string{"Bash(ls:*)"}, Orbit: map[string]string{"Bash": "fs.list"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := assets.ClaudeCodeGrant(tt.tools, tt.programs)
			require.NoError(t, err)
			assert.Equal(t, []string{"Read(./.git/**)", "Read(./.orbit/**)", "Edit(./.git/**)", "Edit(./.orbit/**)"}, got.Denied,
				"what Orbit's fs tools never touch is denied whatever is allowed")
			got.Denied = nil
			assert.Equal(t, tt.want, got)
		})
	}
	_, err := assets.ClaudeCodeGrant([]string{"fs.read", "fs.delete"}, nil)
	assert.EqualError(t, err, `"fs.delete" has no equivalent in Claude Code (tools that have one: fs.edit, fs.list, fs.read, fs.write, shell.exec)`)
}

// TestClaudeCodeToolWithoutEquivalentIsALoadError: the claude_code adapter
// cannot grant fs.delete, and a job asking for it does not load.
func TestClaudeCodeToolWithoutEquivalentIsALoadError(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writeFile(t, root, ".orbit/executors/claude.yaml", executorYAML("claude", "claude", "claude_code"))
	writeFile(t, root, ".orbit/jobs/j.yaml", "schemaVersion: 2\nkind: Job\nmetadata: {name: j}\nspec:\n  steps:\n"+
		"    - id: a\n      spec:\n        type: agent_loop\n        provider: claude\n        backend: cli\n"+
		"        tools: [fs.read, fs.delete]\n")
	_, err := openStrict(root, assets.CatalogOptions{Backend: "cli"})
	require.ErrorIs(t, err, assets.ErrInvalid)
	assert.Contains(t, err.Error(), `jobs/j.yaml:11: spec.steps[0].spec.tools[1]: "fs.delete" has no equivalent in Claude Code`)
	assert.Contains(t, err.Error(), `executor "claude" runs Claude Code (output claude_code)`)

	// The same tools on an executor read as claude_json load: that adapter
	// does not grant anything.
	writeFile(t, root, ".orbit/executors/claude.yaml", executorYAML("claude", "claude", "claude_json"))
	_, err = openStrict(root, assets.CatalogOptions{Backend: "cli"})
	require.NoError(t, err)
}

func TestClaudeCodeOrbitTool(t *testing.T) {
	t.Parallel()
	for agentTool, want := range map[string]string{"Read": "fs.read", "Write": "fs.write", "Edit": "fs.edit", "Bash": "shell.exec", "WebFetch": ""} {
		assert.Equal(t, want, assets.ClaudeCodeOrbitTool(agentTool), agentTool)
	}
}

func TestCodexGrant(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		tools []string
		want  assets.CodexGrantData
	}{
		"none":        {nil, assets.CodexGrantData{Sandbox: assets.CodexReadOnly}},
		"reads":       {[]string{"fs.read", "fs.list"}, assets.CodexGrantData{Sandbox: assets.CodexReadOnly}},
		"a write":     {[]string{"fs.read", "fs.edit"}, assets.CodexGrantData{Sandbox: assets.CodexWorkspaceWrite, Writes: true}},
		"every write": {[]string{"fs.write", "fs.delete"}, assets.CodexGrantData{Sandbox: assets.CodexWorkspaceWrite, Writes: true}},
	} {
		got, err := assets.CodexGrant(tc.tools)
		require.NoError(t, err, name)
		assert.Equal(t, tc.want, got, name)
	}
	_, err := assets.CodexGrant([]string{"fs.read", "shell.exec"})
	assert.EqualError(t, err, `"shell.exec" has no equivalent in Codex: Codex's shell runs any program its sandbox allows, `+
		`so allowed_programs cannot be enforced (tools that have one: fs.delete, fs.edit, fs.list, fs.read, fs.write)`)
	_, err = assets.CodexGrant([]string{"web.fetch"})
	assert.EqualError(t, err, `"web.fetch" has no equivalent in Codex (tools that have one: fs.delete, fs.edit, fs.list, fs.read, fs.write)`)
}

// TestCodexToolWithoutEquivalentIsALoadError: the codex adapter cannot
// grant shell.exec with a program allowlist, and a job asking for it does
// not load.
func TestCodexToolWithoutEquivalentIsALoadError(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writeFile(t, root, ".orbit/executors/codex.yaml", executorYAML("codex", "codex", "codex"))
	writeFile(t, root, ".orbit/jobs/j.yaml", "schemaVersion: 2\nkind: Job\nmetadata: {name: j}\nspec:\n  steps:\n"+
		"    - id: a\n      spec:\n        type: agent_loop\n        provider: codex\n        backend: cli\n"+
		"        tools: [fs.write, shell.exec]\n        allowed_programs: [go]\n")
	_, err := openStrict(root, assets.CatalogOptions{Backend: "cli"})
	require.ErrorIs(t, err, assets.ErrInvalid)
	assert.Contains(t, err.Error(), `jobs/j.yaml:11: spec.steps[0].spec.tools[1]: "shell.exec" has no equivalent in Codex`)
	assert.Contains(t, err.Error(), `executor "codex" runs Codex (output codex)`)

	writeFile(t, root, ".orbit/jobs/j.yaml", "schemaVersion: 2\nkind: Job\nmetadata: {name: j}\nspec:\n  steps:\n"+
		"    - id: a\n      spec:\n        type: agent_loop\n        provider: codex\n        backend: cli\n"+
		"        tools: [fs.read, fs.write, fs.delete]\n")
	_, err = openStrict(root, assets.CatalogOptions{Backend: "cli"})
	require.NoError(t, err)
}

func TestCodexOrbitTool(t *testing.T) {
	t.Parallel()
	for _, tc := range [][3]string{{"command_execution", "", "shell.exec"}, {"file_change", "add", "fs.write"},
		{"file_change", "update", "fs.edit"}, {"file_change", "delete", "fs.delete"}, {"mcp_tool_call", "", ""}, {"web_search", "", ""}} {
		assert.Equal(t, tc[2], assets.CodexOrbitTool(tc[0], tc[1]), tc[0]+" "+tc[1])
	}
}
