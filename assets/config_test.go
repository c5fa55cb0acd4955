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
	Engine:     assets.EngineConfig{IdleTimeoutSeconds: 60, AckWaitSeconds: 30, MaxDeliveries: 5, MaxChildDepth: 16, MaxDescendants: 1000},
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
			Durability: "relaxed", Serve: defaults.Serve, Engine: assets.EngineConfig{IdleTimeoutSeconds: 5, AckWaitSeconds: 30, MaxDeliveries: 5, MaxChildDepth: 16, MaxDescendants: 1000}, Runtime: defaults.Runtime}},
		{"everything", ptr("durability: strict\nserve:\n  listen: 0.0.0.0:9000\n  http: 127.0.0.1:4280\n  tls: {cert: certs/engine.pem, key: /etc/orbit/engine-key.pem, ca: certs/ca.pem}\nengine:\n  idle_timeout_seconds: 1\n  max_child_depth: 3\n  max_descendants: 50\nruntime:\n  backend: cli\n"), assets.Config{
			Durability: "strict", Serve: assets.ServeConfig{Listen: "0.0.0.0:9000", HTTP: "127.0.0.1:4280", TLS: &assets.TLSConfig{Cert: "certs/engine.pem", Key: "/etc/orbit/engine-key.pem", CA: "certs/ca.pem"}},
			Engine:  assets.EngineConfig{IdleTimeoutSeconds: 1, AckWaitSeconds: 30, MaxDeliveries: 5, MaxChildDepth: 3, MaxDescendants: 50},
			Runtime: assets.RuntimeConfig{Backend: "cli"}}},
		{"empty sections", ptr("serve:\nengine: {}\n"), defaults},
		{"console hosts", ptr("serve:\n  http: 127.0.0.1:4280\n  http_hosts: [orbit.example.com, \"orbit.internal:8443\", 10.0.0.5, \"[fe80::1]\", \"[::1]:4280\"]\n"),
			assets.Config{Durability: "strict", Serve: assets.ServeConfig{Listen: assets.DefaultListen, HTTP: "127.0.0.1:4280",
				HTTPHosts: []string{"orbit.example.com", "orbit.internal:8443", "10.0.0.5", "[fe80::1]", "[::1]:4280"}},
				Engine: defaults.Engine, Runtime: defaults.Runtime}},
		{"agent settings", ptr(`fs_profiles:
  docs: {read: ["**"], write: ["docs/**", "*.md"]}
  readonly: {read: ["**"]}
  default: {read: ["src/**"], write: []}
  nothing:
providers:
  openai_compat: {base_url: "http://localhost:11434/v1", api_key_env: OLLAMA_API_KEY}
  claude: {api_key_env: MY_ANTHROPIC_KEY}
`), assets.Config{Durability: "strict", Serve: defaults.Serve, Engine: defaults.Engine, Runtime: defaults.Runtime,
			FSProfiles: map[string]assets.FSProfileConfig{
				"docs":     {Read: []string{"**"}, Write: []string{"docs/**", "*.md"}},
				"readonly": {Read: []string{"**"}},
				"default":  {Read: []string{"src/**"}, Write: []string{}},
				"nothing":  {},
			},
			Providers: map[string]assets.ProviderConfig{
				"openai_compat": {BaseURL: "http://localhost:11434/v1", APIKeyEnv: "OLLAMA_API_KEY"},
				"claude":        {APIKeyEnv: "MY_ANTHROPIC_KEY"},
			}}},
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
	tests := []configProblem{
		{"unknown key", "durabilty: strict\nserve: {listn: x}\n",
			"1: durabilty: unknown key \"durabilty\" (did you mean \"durability\"?)\n" +
				"FILE:2: serve.listn: unknown key \"listn\" (did you mean \"listen\"?)"},
		{"bad values", "durability: fast\nserve:\n  listen: localhost\nengine:\n  idle_timeout_seconds: -1\nruntime:\n  backend: auto\n",
			"1: durability: \"fast\" is not one of strict, relaxed\n" +
				"FILE:3: serve.listen: \"localhost\" is not host:port\n" +
				"FILE:5: engine.idle_timeout_seconds: must be ≥ 1\n" +
				"FILE:7: runtime.backend: \"auto\" is not one of http, cli"},
		{"bad child depth", "engine:\n  max_child_depth: -2\n", `2: engine.max_child_depth: must be ≥ 1`},
		{"bad descendants", "engine:\n  max_descendants: -1\n", `2: engine.max_descendants: must be ≥ 1`},
		{"descendants not a number", "engine:\n  max_descendants: lots\n", `2: engine.max_descendants: must be an integer, not "lots"`},
		{"tls without a key", "serve:\n  tls:\n    cert: engine.pem\n    ca: ca.pem\n    verify: yes\n",
			"2: serve.tls.key: is required: the private key of serve.tls.cert (a PEM file)\n" +
				"FILE:5: serve.tls.verify: unknown key \"verify\""},
		{"tls not a mapping", "serve:\n  tls: on\n", `2: serve.tls: must be a mapping, not "on"`},
		{"bad port", "serve: {listen: \"h:99999\"}\n", `1: serve.listen: "h:99999" has no valid port`},
		{"bad console address", "serve:\n  http: console\n", `2: serve.http: "console" is not host:port`},
		{"bad console hosts", "serve:\n  http_hosts:\n    - ok.example\n    - http://evil.example\n    - \"*.example.com\"\n    - \"h:0\"\n    - \"fe80::1\"\n    - \"\"\n",
			"4: serve.http_hosts[1]: \"http://evil.example\" is not a host name or address, with or without a port (like orbit.example.com or orbit.example.com:443)\n" +
				"FILE:5: serve.http_hosts[2]: \"*.example.com\" is not a host name or address, with or without a port (like orbit.example.com or orbit.example.com:443)\n" +
				"FILE:6: serve.http_hosts[3]: \"h:0\" is not a host name or address, with or without a port (like orbit.example.com or orbit.example.com:443)\n" +
				"FILE:7: serve.http_hosts[4]: \"fe80::1\": write an IPv6 address in brackets, [fe80::1]\n" +
				"FILE:8: serve.http_hosts[5]: \"\" is not a host name or address, with or without a port (like orbit.example.com or orbit.example.com:443)"},
		{"console hosts not a list", "serve: {http_hosts: orbit.example.com}\n", `1: serve.http_hosts: must be a list of strings, not "orbit.example.com"`},
		{"wrong types", "engine: {idle_timeout_seconds: soon}\nruntime: [http]\n",
			"1: engine.idle_timeout_seconds: must be an integer, not \"soon\"\n" +
				"FILE:2: runtime: must be a mapping, not a list"},
		{"not a mapping", "- a\n", `1: must be a mapping, not a list`},
		{"fs_profiles", "fs_profiles:\n  docs:\n    read: \"**\"\n    write:\n      - \"{a,b\"\n  w: [x]\n",
			"3: fs_profiles.docs.read: must be a list of strings, not \"**\"\n" +
				"FILE:5: fs_profiles.docs.write[0]: \"{a,b\" is not a valid glob\n" +
				"FILE:6: fs_profiles.w: must be a mapping, not a list"},
		{"providers", "providers:\n  claude: {base_url: ftp://x, api_key_env: 'MY KEY', api_kye: k}\n  openai: {}\n",
			"2: providers.claude.api_kye: unknown key \"api_kye\"\n" +
				"FILE:2: providers.claude.base_url: \"ftp://x\" is not an http:// or https:// URL\n" +
				"FILE:2: providers.claude.api_key_env: \"MY KEY\" is not an environment variable name\n" +
				"FILE:3: providers.openai: provider \"openai\" cannot be configured (configurable: claude, openai_compat)"},
		{"api_key", "providers:\n  claude:\n    api_key: sk-ant-0123456789\n",
			"3: providers.claude.api_key: a key does not belong in a file: put it in an environment variable and name that variable with api_key_env"},
		{"malformed", "serve: [\n", `1: invalid YAML: did not find expected node content`},
	}
	checkConfigProblems(t, tests)
}

// configProblem is a .orbit/config.yaml (content) that LoadConfig
// refuses with the problems want, each "LINE: path: why" and, after the
// first, "FILE:" for the file's path.
type configProblem struct{ name, content, want string }

// checkConfigProblems loads each problem's config in a root of its own and
// checks that it is refused as invalid with exactly its problems.
func checkConfigProblems(t *testing.T, tests []configProblem) {
	t.Helper()
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

	// Maps are checked in key order, so the message is the same every time.
	agents := assets.Config{
		FSProfiles: map[string]assets.FSProfileConfig{"z": {Write: []string{"/abs"}}, "a": {Read: []string{"x/../../y"}}},
		Providers:  map[string]assets.ProviderConfig{"replay": {}, "claude": {BaseURL: "https://user:pw@api.example.com"}},
	}
	assert.EqualError(t, agents.Validate(), `fs_profiles.a.read[0]: "x/../../y" must not leave the workspace`+"\n"+
		`fs_profiles.z.write[0]: "/abs" must be relative to the workspace`+"\n"+
		`providers.claude.base_url: must not contain credentials: name the key's variable with api_key_env in the config`+"\n"+
		`providers.replay: provider "replay" cannot be configured (configurable: claude, openai_compat)`)
}

func TestConfigFSProfileNames(t *testing.T) {
	t.Parallel()
	var zero assets.Config
	assert.Equal(t, []string{"default", "docs_writer", "implementer", "pure_compute", "reviewer"}, zero.FSProfileNames())
	c := assets.Config{FSProfiles: map[string]assets.FSProfileConfig{"docs": {}, "default": {}, "build": {}, "reviewer": {}}}
	assert.Equal(t, []string{"build", "default", "docs", "docs_writer", "implementer", "pure_compute", "reviewer"}, c.FSProfileNames())
}

// TestParseConfig is LoadConfig on bytes.
func TestParseConfig(t *testing.T) {
	t.Parallel()
	c, err := assets.ParseConfig("c.yaml", nil)
	require.NoError(t, err)
	assert.Equal(t, defaults, *c)
	_, err = assets.ParseConfig("c.yaml", []byte("providers: {claude: sk-ant-secret}\n"))
	assert.EqualError(t, err, "c.yaml:1: providers.claude: must be a mapping of base_url and api_key_env")
}

// TestScaffold writes what orbit init writes and loads it back.
func TestScaffold(t *testing.T) {
	t.Parallel()
	files := assets.Scaffold()
	var names []string
	for name := range files {
		names = append(names, name)
	}
	assert.ElementsMatch(t, []string{"config.yaml", ".gitignore", "jobs/example.yaml", "activities/example_shell.yaml", "routines/README.md"}, names)
	assert.Contains(t, string(files[".gitignore"]), "\nstate/\n")

	root := t.TempDir()
	for name, data := range files {
		writeFile(t, root, filepath.Join(".orbit", name), string(data))
	}
	c, err := assets.LoadConfig(root)
	require.NoError(t, err)
	assert.Equal(t, defaults, *c, "the scaffolded config shows the defaults")
	// Its commented-out examples are valid once uncommented.
	uncommented := strings.NewReplacer("# fs_profiles:", "fs_profiles:", "#   ", "  ", "# providers:", "providers:").Replace(string(files["config.yaml"]))
	require.NotEqual(t, string(files["config.yaml"]), uncommented)
	ex, err := assets.ParseConfig("config.yaml", []byte(uncommented))
	require.NoError(t, err)
	assert.Equal(t, []string{"default", "docs", "docs_writer", "implementer", "pure_compute", "readonly", "reviewer"}, ex.FSProfileNames())
	assert.Equal(t, "http://localhost:11434/v1", ex.Providers["openai_compat"].BaseURL)

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

// TestSeededFSProfiles: the upstream profile names exist in every project
// with their meanings, and the config may redefine one.
func TestSeededFSProfiles(t *testing.T) {
	t.Parallel()
	var zero assets.Config
	got := zero.Profiles()
	assert.Equal(t, []string{"docs_writer", "implementer", "pure_compute", "reviewer"}, assets.SeededFSProfileNames())
	assert.Equal(t, assets.FSProfileConfig{Read: []string{"**"}, Write: []string{"**"}}, got["implementer"])
	assert.Equal(t, assets.FSProfileConfig{Read: []string{"**"}, Write: []string{}}, got["reviewer"])
	assert.Equal(t, assets.FSProfileConfig{Read: []string{}, Write: []string{}}, got["pure_compute"])
	assert.Equal(t, []string{"docs/**", "**/*.md", "**/*.rst", "**/*.txt"}, got["docs_writer"].Write)

	c, err := assets.ParseConfig("c.yaml", []byte("fs_profiles:\n  reviewer: {read: [\"src/**\"], write: []}\n"))
	require.NoError(t, err)
	assert.Equal(t, []string{"src/**"}, c.Profiles()["reviewer"].Read, "the config replaces a seeded profile")
	got["implementer"].Write[0] = "changed"
	assert.Equal(t, "**", zero.Profiles()["implementer"].Write[0], "Profiles returns copies")
}

// FuzzParseConfigHTTPHosts: any serve section parses or is refused with
// problems, never a panic, and a host name it accepts has no scheme, path,
// wildcard or space in it.
func FuzzParseConfigHTTPHosts(f *testing.F) {
	for _, seed := range []string{
		"serve: {http_hosts: [orbit.example.com, 'h:443', '[::1]:80', 10.1.2.3]}\n",
		"serve: {http_hosts: ['http://x/y', '*.x', 'a b']}\n",
		"serve: {http_hosts: x}\n",
		"serve:\n  http_hosts:\n    - ''\n",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		c, err := assets.ParseConfig("c.yaml", []byte(doc))
		if err != nil {
			return
		}
		for _, h := range c.Serve.HTTPHosts {
			if h == "" || strings.ContainsAny(h, "/*?#@ \t\r\n") {
				t.Fatalf("host %q accepted", h)
			}
		}
	})
}

// TestConfigChanged: each setting a file changes is reported once, live or
// needing a restart; defaults written out and empty sections change
// nothing.
func TestConfigChanged(t *testing.T) {
	t.Parallel()
	parse := func(text string) *assets.Config {
		c, err := assets.ParseConfig("config.yaml", []byte(text))
		require.NoError(t, err)
		return c
	}
	base := parse("fs_profiles:\n  docs: {read: [\"**\"], write: [\"docs/**\"]}\n")
	tests := []struct {
		name          string
		text          string
		live, restart []string
	}{
		{"the same", "fs_profiles:\n  docs: {write: [\"docs/**\"], read: [\"**\"]}\n", nil, nil},
		{"defaults written out", "durability: strict\nengine: {max_deliveries: 5}\nproviders: {}\nfs_profiles:\n  docs: {read: [\"**\"], write: [\"docs/**\"]}\n", nil, nil},
		{"a profile tightened", "fs_profiles:\n  docs: {read: [\"**\"], write: []}\n", []string{"fs_profiles"}, nil},
		{"a profile removed", "", []string{"fs_profiles"}, nil},
		{"live and restart", "durability: relaxed\nserve: {listen: \"127.0.0.1:5222\"}\nengine: {max_child_depth: 4, ack_wait_seconds: 9}\nruntime: {backend: cli}\nnats: {replicas: 3}\nproviders:\n  claude: {api_key_env: MY_KEY}\nfs_profiles:\n  docs: {read: [\"**\"], write: [\"docs/**\"]}\n",
			[]string{"engine.max_child_depth", "runtime.backend", "providers"},
			[]string{"durability", "serve.listen", "engine.ack_wait_seconds", "nats.replicas"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			live, restart := parse(tt.text).Changed(base)
			assert.Equal(t, tt.live, live)
			assert.Equal(t, tt.restart, restart)
		})
	}
}
