package assets_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/assets"
)

var defaults = assets.Config{
	Durability: "strict",
	Serve:      assets.ServeConfig{Listen: "127.0.0.1:4222"},
	Engine:     assets.EngineConfig{IdleTimeoutSeconds: 60},
	Runtime:    assets.RuntimeConfig{Backend: "http"},
}

func TestLoadConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		content *string // nil: no file
		want    assets.Config
	}{
		{"no file", nil, defaults},
		{"empty file", ptr(""), defaults},
		{"comments only", ptr("# nothing set\n"), defaults},
		{"empty document", ptr("---\n"), defaults},
		{"partial", ptr("durability: relaxed\nengine: {idle_timeout_seconds: 5}\n"), assets.Config{
			Durability: "relaxed", Serve: defaults.Serve, Engine: assets.EngineConfig{IdleTimeoutSeconds: 5}, Runtime: defaults.Runtime}},
		{"everything", ptr("durability: strict\nserve:\n  listen: 0.0.0.0:9000\nengine:\n  idle_timeout_seconds: 1\nruntime:\n  backend: cli\n"), assets.Config{
			Durability: "strict", Serve: assets.ServeConfig{Listen: "0.0.0.0:9000"}, Engine: assets.EngineConfig{IdleTimeoutSeconds: 1},
			Runtime: assets.RuntimeConfig{Backend: "cli"}}},
		{"empty sections", ptr("serve:\nengine: {}\n"), defaults},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			if tt.content != nil {
				writeFile(t, root, ".orbit/config.yaml", *tt.content)
			}
			c, err := assets.LoadConfig(root)
			require.NoError(t, err)
			assert.Equal(t, tt.want, *c)
		})
	}
}

func ptr(s string) *string { return &s }

func TestLoadConfigProblems(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, content, want string }{
		{"unknown key", "durabilty: strict\nserve: {listn: x}\n",
			"1: durabilty: unknown key \"durabilty\" (did you mean \"durability\"?)\n" +
				"FILE:2: serve.listn: unknown key \"listn\" (did you mean \"listen\"?)"},
		{"bad values", "durability: fast\nserve:\n  listen: localhost\nengine:\n  idle_timeout_seconds: -1\nruntime:\n  backend: auto\n",
			"1: durability: \"fast\" is not one of strict, relaxed\n" +
				"FILE:3: serve.listen: \"localhost\" is not host:port\n" +
				"FILE:5: engine.idle_timeout_seconds: must be ≥ 1\n" +
				"FILE:7: runtime.backend: \"auto\" is not one of http, cli"},
		{"bad port", "serve: {listen: \"h:99999\"}\n", `1: serve.listen: "h:99999" has no valid port`},
		{"wrong types", "engine: {idle_timeout_seconds: soon}\nruntime: [http]\n",
			"1: engine.idle_timeout_seconds: must be an integer, not \"soon\"\n" +
				"FILE:2: runtime: must be a mapping, not a list"},
		{"not a mapping", "- a\n", `1: must be a mapping, not a list`},
		{"malformed", "serve: [\n", `1: invalid YAML: did not find expected node content`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			file := writeFile(t, root, ".orbit/config.yaml", tt.content)
			_, err := assets.LoadConfig(root)
			require.ErrorIs(t, err, assets.ErrInvalid)
			assert.EqualError(t, err, strings.ReplaceAll(file+":"+tt.want, "FILE", file))
		})
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	var zero assets.Config
	require.NoError(t, zero.Validate(), "the zero value means defaults")
	assert.Equal(t, assets.Config{}, zero, "Validate does not change the config")

	bad := assets.Config{Durability: "maybe", Runtime: assets.RuntimeConfig{Backend: "x"}}
	err := bad.Validate()
	require.ErrorIs(t, err, assets.ErrInvalid)
	assert.EqualError(t, err, "durability: \"maybe\" is not one of strict, relaxed\nruntime.backend: \"x\" is not one of http, cli")
}

// TestScaffold writes what orbit init writes and loads it back.
func TestScaffold(t *testing.T) {
	t.Parallel()
	files := assets.Scaffold()
	var names []string
	for name := range files {
		names = append(names, name)
	}
	assert.ElementsMatch(t, []string{"config.yaml", ".gitignore", "jobs/example.yaml", "activities/example_shell.yaml"}, names)
	assert.Contains(t, string(files[".gitignore"]), "\nstate/\n")

	root := t.TempDir()
	for name, data := range files {
		writeFile(t, root, filepath.Join(".orbit", name), string(data))
	}
	c, err := assets.LoadConfig(root)
	require.NoError(t, err)
	assert.Equal(t, defaults, *c, "the scaffolded config shows the defaults")

	cat, err := assets.OpenCatalog(root, assets.CatalogOptions{})
	require.NoError(t, err)
	j, err := cat.Job("example")
	require.NoError(t, err)
	assert.Equal(t, assets.LayerWorkspace, j.Layer)
	require.Len(t, j.Spec.Steps, 2)
	assert.Equal(t, "activity:deterministic_reference", j.Spec.Steps[0].Target, "the example uses a seeded activity")
	assert.Equal(t, "printf", j.Spec.Steps[1].Activity.Program, "and the scaffolded one")

	// Each call returns fresh data.
	files["config.yaml"][0] = 'X'
	assert.NotEqual(t, byte('X'), assets.Scaffold()["config.yaml"][0])
}
