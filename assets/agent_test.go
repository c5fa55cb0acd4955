package assets_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/assets"
)

var (
	claudeCLI = &assets.ExecutorSpec{Command: "claude", Output: "claude_code"}
	codexCLI  = &assets.ExecutorSpec{Command: "codex", Output: "codex"}
)

// TestBackendResolution loads one agent spec as a catalog activity, as the
// target of a job step and as a job's inline spec, under each catalog
// backend option, and checks what all three resolved to.
func TestBackendResolution(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		spec     string // the fields after type
		option   string // CatalogOptions.Backend
		backend  string // the resolved spec's Backend
		executor *assets.ExecutorSpec
	}{
		{"auto, no option: http", "provider: claude", "", "http", nil},
		{"auto, option auto: http", "provider: claude", "auto", "http", nil},
		{"auto, option http", "provider: openai_compat", "http", "http", nil},
		{"auto, option cli", "provider: claude", "cli", "cli", claudeCLI},
		{"auto written out, option cli", "{provider: codex, backend: auto}", "cli", "cli", codexCLI},
		{"http whatever the option", "{provider: replay, backend: http}", "cli", "http", nil},
		{"cli whatever the option", "{provider: codex, backend: cli}", "http", "cli", codexCLI},
		{"executor: chooses over provider", "{provider: claude, executor: codex, backend: cli}", "", "cli", codexCLI},
		{"executor: is unused over http", "{provider: claude, executor: codex}", "http", "http", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			spec := "{type: agent_loop, " + trimBraces(tt.spec) + "}"
			writeFile(t, root, ".orbit/activities/agent.yaml", "schemaVersion: 2\nkind: Activity\nmetadata: {name: agent}\nspec: "+spec+"\n")
			writeFile(t, root, ".orbit/jobs/j.yaml", "schemaVersion: 2\nkind: Job\nmetadata: {name: j}\nspec:\n  steps:\n"+
				"    - {id: targeted, target: activity:agent}\n    - {id: inline, spec: "+spec+"}\n")
			c, err := assets.OpenCatalog(root, assets.CatalogOptions{Backend: tt.option})
			require.NoError(t, err)
			a, err := c.Activity("agent")
			require.NoError(t, err)
			j, err := c.Job("j")
			require.NoError(t, err)
			for _, got := range []*assets.ActivitySpec{&a.Spec, j.Spec.Steps[0].Activity, j.Spec.Steps[1].Activity} {
				assert.Equal(t, tt.backend, got.Backend)
				assert.Equal(t, tt.executor, got.ExecutorSpec)
			}
			// What the log stores decodes to the same resolved spec.
			data, err := json.Marshal(j)
			require.NoError(t, err)
			var back assets.Job
			require.NoError(t, json.Unmarshal(data, &back))
			assert.Equal(t, *j, back)
		})
	}
}

func trimBraces(s string) string {
	if len(s) > 1 && s[0] == '{' {
		return s[1 : len(s)-1]
	}
	return s
}

func TestGroundhogHasNoBackend(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writeFile(t, root, ".orbit/activities/gh.yaml", "schemaVersion: 2\nkind: Activity\nmetadata: {name: gh}\nspec: {type: groundhog, provider: claude}\n")
	c, err := assets.OpenCatalog(root, assets.CatalogOptions{Backend: "cli"})
	require.NoError(t, err)
	a, err := c.Activity("gh")
	require.NoError(t, err)
	assert.Empty(t, a.Spec.Backend)
	assert.Nil(t, a.Spec.ExecutorSpec)

	// Its provider must have an HTTP transport, whatever the catalog's
	// backend.
	writeFile(t, root, ".orbit/activities/gh.yaml", "schemaVersion: 2\nkind: Activity\nmetadata: {name: gh}\nspec: {type: groundhog, provider: codex}\n")
	_, err = openStrict(root, assets.CatalogOptions{Backend: "cli"})
	require.ErrorIs(t, err, assets.ErrInvalid)
	assert.Contains(t, err.Error(), `spec.provider: provider "codex" has no HTTP transport (http providers: claude, openai_compat, replay)`)
	assert.NotContains(t, err.Error(), "use backend: cli")
}

// TestBackendProblemsDependOnTheOption: the same activity is fine or not
// depending on what auto resolves to.
func TestBackendProblemsDependOnTheOption(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	file := writeFile(t, root, ".orbit/activities/a.yaml", "schemaVersion: 2\nkind: Activity\nmetadata: {name: a}\nspec:\n  type: agent_loop\n  provider: openai_compat\n")
	_, err := openStrict(root, assets.CatalogOptions{})
	require.NoError(t, err)
	_, err = openStrict(root, assets.CatalogOptions{Backend: "cli"})
	require.ErrorIs(t, err, assets.ErrInvalid)
	assert.EqualError(t, err, file+`:6: spec: no executor "openai_compat" for backend cli (executors: claude, codex)`)

	writeFile(t, root, ".orbit/activities/a.yaml", "schemaVersion: 2\nkind: Activity\nmetadata: {name: a}\nspec:\n  type: agent_loop\n  provider: codex\n")
	_, err = openStrict(root, assets.CatalogOptions{Backend: "cli"})
	require.NoError(t, err)
	_, err = openStrict(root, assets.CatalogOptions{})
	assert.EqualError(t, err, file+`:6: spec.provider: provider "codex" has no HTTP transport (http providers: claude, openai_compat, replay); use backend: cli`)
}

// TestExecutorAttachment: a cli spec gets a copy of the executor its catalog
// resolves, first match wins, by executor: or else by provider.
func TestExecutorAttachment(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	env := t.TempDir()
	writeFile(t, root, ".orbit/executors/claude.yaml", executorYAML("claude", "/opt/claude/bin/claude", "text"))
	writeFile(t, root, ".orbit/executors/aider.yaml", executorYAML("aider", "aider", "text"))
	writeFile(t, env, "aider.yaml", executorYAML("aider", "/usr/local/bin/aider", "text"))
	writeFile(t, root, ".orbit/executors/goose.yaml", "schemaVersion: 2\nkind: Executor\nmetadata: {name: goose}\n"+
		"spec: {command: goose, args: [run, --quiet]}\n")
	writeFile(t, root, ".orbit/jobs/j.yaml", "schemaVersion: 2\nkind: Job\nmetadata: {name: j}\nspec:\n  steps:\n"+
		"    - {id: by_provider, spec: {type: agent_loop, provider: claude, backend: cli}}\n"+
		"    - {id: by_name, spec: {type: agent_loop, provider: aider, backend: cli}}\n"+
		"    - {id: by_executor, spec: {type: agent_loop, provider: openai_compat, executor: codex}}\n"+
		"    - {id: with_args, spec: {type: agent_loop, provider: openai_compat, executor: goose}}\n")
	c, err := assets.OpenCatalog(root, assets.CatalogOptions{Backend: "cli", ExecutorDir: env})
	require.NoError(t, err)
	j, err := c.Job("j")
	require.NoError(t, err)
	steps := j.Spec.Steps
	assert.Equal(t, &assets.ExecutorSpec{Command: "/opt/claude/bin/claude", Output: "text"}, steps[0].Activity.ExecutorSpec,
		"the workspace claude shadows the seeded one")
	assert.Equal(t, &assets.ExecutorSpec{Command: "/usr/local/bin/aider", Output: "text"}, steps[1].Activity.ExecutorSpec,
		"the env layer comes first")
	assert.Equal(t, codexCLI, steps[2].Activity.ExecutorSpec)

	// The attached spec is a copy: changing it changes no other job.
	steps[3].Activity.ExecutorSpec.Args[0] = "changed"
	e, err := c.Executor("goose")
	require.NoError(t, err)
	assert.Equal(t, "run", e.Spec.Args[0])

	// The message lists what the catalog has.
	writeFile(t, root, ".orbit/jobs/j.yaml", "schemaVersion: 2\nkind: Job\nmetadata: {name: j}\nspec:\n  steps:\n"+
		"    - {id: a, spec: {type: agent_loop, provider: claude, executor: gemini}}\n")
	_, err = openStrict(root, assets.CatalogOptions{Backend: "cli"})
	require.ErrorIs(t, err, assets.ErrInvalid)
	assert.Contains(t, err.Error(), `spec.steps[0].spec: no executor "gemini" for backend cli (executors: aider, claude, codex, goose)`)
}

// TestParseJobResolvesWithSeededExecutors: outside a catalog, auto is http
// and cli finds the seeded executors.
func TestParseJobResolvesWithSeededExecutors(t *testing.T) {
	t.Parallel()
	j, err := assets.ParseJob("j.yaml", job(`    - {id: a, spec: {type: agent_loop, provider: claude}}
    - {id: b, spec: {type: agent_loop, provider: claude, backend: cli}}
`), nil)
	require.NoError(t, err)
	assert.Equal(t, "http", j.Spec.Steps[0].Activity.Backend)
	assert.Nil(t, j.Spec.Steps[0].Activity.ExecutorSpec)
	assert.Equal(t, "cli", j.Spec.Steps[1].Activity.Backend)
	assert.Equal(t, claudeCLI, j.Spec.Steps[1].Activity.ExecutorSpec)
}

func TestFSProfileNames(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writeFile(t, root, ".orbit/activities/a.yaml", "schemaVersion: 2\nkind: Activity\nmetadata: {name: a}\n"+
		"spec: {type: shell, program: ls, allowed_programs: [ls], fsProfile: docs}\n")
	writeFile(t, root, ".orbit/jobs/j.yaml", "schemaVersion: 2\nkind: Job\nmetadata: {name: j}\nspec:\n  steps:\n"+
		"    - {id: a, target: activity:a, fsProfile: readonly}\n    - {id: b, spec: {type: agent_loop, provider: claude}, fsProfile: default}\n")
	tests := []struct {
		name     string
		profiles []string
		want     string // "" when the catalog opens
	}{
		{"nil accepts any name", nil, ""},
		{"all known", []string{"docs", "readonly"}, ""},
		{"default is always known", []string{"docs", "readonly", "default"}, ""},
		{"an unknown activity profile", []string{"readonly"}, `spec.fsProfile: unknown fsProfile "docs" (profiles: default, readonly)`},
		{"an unknown step profile", []string{"docs"}, `spec.steps[0].fsProfile: unknown fsProfile "readonly" (profiles: default, docs)`},
		{"none defined", []string{}, `unknown fsProfile "docs" (profiles: default)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := openStrict(root, assets.CatalogOptions{FSProfiles: tt.profiles})
			if tt.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, assets.ErrInvalid)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

// TestGroundhogOnTheCLIBackend: backend: cli attaches the executor when it
// has the claude_code or codex adapter, and refuses one without either.
func TestGroundhogOnTheCLIBackend(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writeFile(t, root, ".orbit/executors/cc.yaml", "schemaVersion: 2\nkind: Executor\nmetadata: {name: cc}\nspec: {command: claude, output: claude_code}\n")
	writeFile(t, root, ".orbit/activities/gh.yaml", "schemaVersion: 2\nkind: Activity\nmetadata: {name: gh}\nspec: {type: groundhog, provider: claude, backend: cli, executor: cc, tools: [fs.write]}\n")
	c, err := openStrict(root, assets.CatalogOptions{})
	require.NoError(t, err)
	a, err := c.Activity("gh")
	require.NoError(t, err)
	assert.Equal(t, assets.BackendCLI, a.Spec.Backend)
	require.NotNil(t, a.Spec.ExecutorSpec)
	assert.Equal(t, assets.OutputClaudeCode, a.Spec.ExecutorSpec.Output)

	writeFile(t, root, ".orbit/executors/cx.yaml", "schemaVersion: 2\nkind: Executor\nmetadata: {name: cx}\nspec: {command: codex, output: codex}\n")
	writeFile(t, root, ".orbit/activities/gx.yaml", "schemaVersion: 2\nkind: Activity\nmetadata: {name: gx}\nspec: {type: groundhog, provider: claude, backend: cli, executor: cx, tools: [fs.read, fs.write]}\n")
	c, err = openStrict(root, assets.CatalogOptions{})
	require.NoError(t, err)
	a, err = c.Activity("gx")
	require.NoError(t, err)
	require.NotNil(t, a.Spec.ExecutorSpec)
	assert.Equal(t, assets.OutputCodex, a.Spec.ExecutorSpec.Output)
	writeFile(t, root, ".orbit/activities/gx.yaml", "schemaVersion: 2\nkind: Activity\nmetadata: {name: gx}\nspec: {type: groundhog, provider: claude, backend: cli, executor: cc}\n")

	// A tool Claude Code cannot be granted is refused as for an agent_loop.
	writeFile(t, root, ".orbit/activities/gh.yaml", "schemaVersion: 2\nkind: Activity\nmetadata: {name: gh}\nspec: {type: groundhog, provider: claude, backend: cli, executor: cc, tools: [http.get]}\n")
	_, err = openStrict(root, assets.CatalogOptions{})
	require.ErrorIs(t, err, assets.ErrInvalid)
	assert.Contains(t, err.Error(), "spec.tools[0]")

	writeFile(t, root, ".orbit/executors/cc.yaml", "schemaVersion: 2\nkind: Executor\nmetadata: {name: cc}\nspec: {command: claude, output: text}\n")
	writeFile(t, root, ".orbit/activities/gh.yaml", "schemaVersion: 2\nkind: Activity\nmetadata: {name: gh}\nspec: {type: groundhog, provider: claude, backend: cli, executor: cc}\n")
	_, err = openStrict(root, assets.CatalogOptions{})
	require.ErrorIs(t, err, assets.ErrInvalid)
	assert.Contains(t, err.Error(), `gh.yaml:4: spec: executor "cc" has output "text": a groundhog activity on backend cli needs an executor with output claude_code or codex`)
}

// TestExecutorPass: pass: names variables of the engine's environment an
// executor's agent is given; each must be a variable's name.
func TestExecutorPass(t *testing.T) {
	t.Parallel()
	e, err := assets.ParseExecutor("cc.yaml", []byte("schemaVersion: 2\nkind: Executor\nmetadata: {name: cc}\nspec: {command: claude, output: claude_code, pass: [PROJECT_MODEL_KEY]}\n"))
	require.NoError(t, err)
	assert.Equal(t, []string{"PROJECT_MODEL_KEY"}, e.Spec.Pass)

	_, err = assets.ParseExecutor("cc.yaml", []byte("schemaVersion: 2\nkind: Executor\nmetadata: {name: cc}\nspec: {command: claude, output: claude_code, pass: [OK, 1BAD]}\n"))
	require.ErrorIs(t, err, assets.ErrInvalid)
	assert.Contains(t, err.Error(), `spec.pass[1]: "1BAD" is not an environment variable name`)
}
