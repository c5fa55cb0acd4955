package assets_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/assets"
)

func executorYAML(name, command, output string) string {
	return "schemaVersion: 2\nkind: Executor\nmetadata: {name: " + name + ", description: runs " + command + "}\n" +
		"spec: {command: " + command + ", output: " + output + "}\n"
}

func TestParseExecutor(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		spec string
		want assets.ExecutorSpec
	}{
		{"defaults", "{command: aider}", assets.ExecutorSpec{Command: "aider", Output: "text"}},
		{"every field", `
  command: /usr/bin/claude
  args: [-p, --output-format, json, --max-turns, 30, "{{ literal }}"]
  output: claude_json
  env: {DISABLE_TELEMETRY: 1, EMPTY: , MODE: "fast"}`,
			assets.ExecutorSpec{Command: "/usr/bin/claude", Args: []string{"-p", "--output-format", "json", "--max-turns", "30", "{{ literal }}"},
				Output: "claude_json", Env: map[string]string{"DISABLE_TELEMETRY": "1", "EMPTY": "", "MODE": "fast"}}},
		{"codex_jsonl", "{command: codex, args: [exec, --json], output: codex_jsonl}",
			assets.ExecutorSpec{Command: "codex", Args: []string{"exec", "--json"}, Output: "codex_jsonl"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e, err := assets.ParseExecutor("x.yaml", []byte("schemaVersion: 2\nkind: Executor\nmetadata:\n  name: x\n  description: d\n  labels: {a: b}\nspec: "+tt.spec+"\n"))
			require.NoError(t, err)
			assert.Equal(t, &assets.Executor{Name: "x", Description: "d", Labels: map[string]string{"a": "b"}, Source: "x.yaml",
				Layer: assets.LayerFile, Spec: tt.want}, e)
		})
	}
}

func TestParseExecutorProblems(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, doc, want string }{
		{"no command", "spec: {output: text}", `x.yaml:4: spec.command: is required`},
		{"empty command", "spec: {command: ' '}", `x.yaml:4: spec.command: must not be empty`},
		{"bad output", "spec: {command: c, output: jsonl}", `x.yaml:4: spec.output: "jsonl" is not one of text, claude_json, codex_jsonl, claude_code, codex`},
		{"env not a mapping", "spec: {command: c, env: [A=1]}", `x.yaml:4: spec.env: must be a mapping, not a list`},
		{"secret env", "spec: {command: c, env: {GITHUB_TOKEN: ghp_x, db_password: pw, SECRET: s}}",
			"x.yaml:4: spec.env.GITHUB_TOKEN: looks like a secret: set it in the engine's environment instead (an executor's env is copied into every run that uses it)\n" +
				"x.yaml:4: spec.env.db_password: looks like a secret: set it in the engine's environment instead (an executor's env is copied into every run that uses it)\n" +
				"x.yaml:4: spec.env.SECRET: looks like a secret: set it in the engine's environment instead (an executor's env is copied into every run that uses it)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			doc := "schemaVersion: 2\nkind: Executor\nmetadata: {name: x}\n" + tt.doc + "\n"
			_, err := assets.ParseExecutor("x.yaml", []byte(doc))
			require.ErrorIs(t, err, assets.ErrInvalid)
			assert.EqualError(t, err, tt.want)
		})
	}
	_, err := assets.ParseExecutor("a.yaml", activity("  type: deterministic\n  action: echo\n"))
	assert.EqualError(t, err, "a.yaml:2: kind is Activity, expected Executor")
	_, err = assets.ParseJob("x.yaml", []byte("schemaVersion: 2\nkind: Executor\nmetadata: {name: x}\nspec: {command: c}\n"), nil)
	assert.EqualError(t, err, "x.yaml:2: kind is Executor, expected Job")
}

func TestCatalogExecutors(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	env := t.TempDir()
	envCodex := writeFile(t, env, "codex.yaml", executorYAML("codex", "/opt/codex", "codex_jsonl"))
	wsCodex := writeFile(t, root, ".orbit/executors/codex.yml", executorYAML("codex", "codex-nightly", "codex_jsonl"))
	aider := writeFile(t, root, ".orbit/executors/aider.yaml", executorYAML("aider", "aider", "text"))
	writeFile(t, root, ".orbit/executors/notes.txt", "not an executor")

	c, err := assets.OpenCatalog(root, assets.CatalogOptions{ExecutorDir: env})
	require.NoError(t, err)
	codex, err := c.Executor("codex")
	require.NoError(t, err)
	assert.Equal(t, assets.LayerEnv, codex.Layer)
	assert.Equal(t, "/opt/codex", codex.Spec.Command)
	_, err = c.Executor("gemini")
	require.ErrorIs(t, err, assets.ErrNotFound)
	assert.EqualError(t, err, `no executor "gemini" (orbit executor list lists the executors)`)

	assert.Equal(t, []assets.Entry{
		{Name: "aider", Kind: "text", Description: "runs aider", Source: aider, Layer: assets.LayerWorkspace},
		{Name: "claude", Kind: "claude_code", Description: "Claude Code through the claude_code adapter (claude -p, stream-json records as they come).",
			Source: "seeded:executors/claude.yaml", Layer: assets.LayerSeeded},
		{Name: "codex", Kind: "codex_jsonl", Description: "runs /opt/codex", Source: envCodex, Layer: assets.LayerEnv,
			Shadows: []string{wsCodex, "seeded:executors/codex.yaml"}},
	}, c.Executors())
}

func TestCatalogExecutorProblems(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	a := writeFile(t, root, ".orbit/executors/a.yaml", executorYAML("same", "one", "text"))
	b := writeFile(t, root, ".orbit/executors/b.yaml", executorYAML("same", "two", "text"))
	bad := writeFile(t, root, ".orbit/executors/bad.yaml", "schemaVersion: 2\nkind: Executor\nmetadata: {name: bad}\nspec: {output: text}\n")
	_, err := openStrict(root, assets.CatalogOptions{})
	require.ErrorIs(t, err, assets.ErrInvalid)
	assert.EqualError(t, err, b+`:3: metadata.name: executor "same" is defined twice in the workspace layer: `+a+" and "+b+"\n"+
		bad+`:4: spec.command: is required`)

	// A file where the env layer's directory should be is an I/O error.
	file := writeFile(t, root, "not_a_dir", "")
	_, err = openStrict(t.TempDir(), assets.CatalogOptions{ExecutorDir: file})
	require.Error(t, err)
	assert.NotErrorIs(t, err, assets.ErrInvalid)
}
