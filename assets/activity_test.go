package assets_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/assets"
)

// activity wraps a spec (YAML indented by two spaces) in an Activity envelope.
func activity(spec string) []byte {
	return []byte("schemaVersion: 2\nkind: Activity\nmetadata: {name: act}\nspec:\n" + spec)
}

func TestParseActivity(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		spec string
		want assets.ActivitySpec
	}{
		{"shell defaults", `
  type: shell
  program: echo
  allowed_programs: [echo]`,
			assets.ActivitySpec{Type: "shell", Program: "echo", AllowedPrograms: []string{"echo"}, TimeoutSeconds: 300, ExpectedExitCodes: []int{0}}},
		{"shell, every field", `
  type: shell
  description: d
  fsProfile: workspace
  program: "{{ input.tool }}"
  args: [-n, 3, "{{ input.x }}"]
  allowed_programs: [echo, printf]
  timeout_seconds: 9
  expected_exit_codes: [0, 1, 255]
  sandbox: agent`,
			assets.ActivitySpec{Type: "shell", Description: "d", FSProfile: "workspace", Program: "{{ input.tool }}",
				Args: []string{"-n", "3", "{{ input.x }}"}, AllowedPrograms: []string{"echo", "printf"}, TimeoutSeconds: 9,
				ExpectedExitCodes: []int{0, 1, 255}, Sandbox: "agent"}},
		{"shell, sandbox none is the default", `
  type: shell
  program: echo
  allowed_programs: [echo]
  sandbox: none`,
			assets.ActivitySpec{Type: "shell", Program: "echo", AllowedPrograms: []string{"echo"}, TimeoutSeconds: 300, ExpectedExitCodes: []int{0}}},
		{"deterministic", `
  type: deterministic
  action: sleep
  config: {ms: 250, note: "{{ input.why }}"}`,
			assets.ActivitySpec{Type: "deterministic", Action: "sleep", Config: map[string]any{"ms": float64(250), "note": "{{ input.why }}"}}},
		{"agent_loop defaults: backend auto resolves to http", `
  type: agent_loop
  provider: claude`,
			assets.ActivitySpec{Type: "agent_loop", OnDenial: "terminate", Backend: "http", Provider: "claude"}},
		{"agent_loop, every field", `
  type: agent_loop
  fsProfile: docs
  instruction: "Fix {{ input.issue }}"
  tools: [fs.read, fs.write, shell.exec]
  allowed_programs: [go, git]
  on_denial: continue
  model: m1
  max_iterations: 12
  max_tokens: 4096
  backend: http
  provider: openai_compat
  base_url: http://localhost:11434/v1
  executor: codex
  wall_clock_timeout_seconds: 600
  fixture: testdata/fix.json`,
			assets.ActivitySpec{Type: "agent_loop", FSProfile: "docs", Instruction: "Fix {{ input.issue }}",
				Tools: []string{"fs.read", "fs.write", "shell.exec"}, AllowedPrograms: []string{"go", "git"},
				OnDenial: "continue", Model: "m1", MaxIterations: 12, MaxTokens: 4096, Backend: "http", Provider: "openai_compat",
				BaseURL: "http://localhost:11434/v1", Executor: "codex", WallClockTimeoutSeconds: 600, Fixture: "testdata/fix.json"}},
		{"agent_loop on cli gets its executor", `
  type: agent_loop
  provider: codex
  backend: cli`,
			assets.ActivitySpec{Type: "agent_loop", OnDenial: "terminate", Backend: "cli", Provider: "codex",
				ExecutorSpec: &assets.ExecutorSpec{Command: "codex", Output: "codex"}}},
		{"groundhog", `
  type: groundhog
  provider: claude
  attempt_budget_default: 5`,
			assets.ActivitySpec{Type: "groundhog", OnDenial: "terminate", Provider: "claude", AttemptBudgetDefault: 5}},
		{"groundhog, agent fields", `
  type: groundhog
  provider: openai_compat
  base_url: https://llm.example.com/v1
  max_tokens: 1000
  tools: [fs.read]
  allowed_programs: [make]`,
			assets.ActivitySpec{Type: "groundhog", OnDenial: "terminate", Provider: "openai_compat", BaseURL: "https://llm.example.com/v1",
				MaxTokens: 1000, Tools: []string{"fs.read"}, AllowedPrograms: []string{"make"}}},
		{"schemas as YAML are stored as compact JSON", `
  type: deterministic
  action: echo
  input_schema_json:
    type: object
    properties: {n: {type: integer, minimum: 1}}
  output_schema_json: '{"type": "object"}'`,
			assets.ActivitySpec{Type: "deterministic", Action: "echo",
				InputSchemaJSON:  `{"properties":{"n":{"minimum":1,"type":"integer"}},"type":"object"}`,
				OutputSchemaJSON: `{"type": "object"}`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a, err := assets.ParseActivity("act.yaml", activity(tt.spec[1:]+"\n"))
			require.NoError(t, err)
			assert.Equal(t, "act", a.Name)
			assert.Equal(t, "act.yaml", a.Source)
			assert.Equal(t, tt.want, a.Spec)
		})
	}
}

func TestParseActivityProblems(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, spec, want string }{
		{"no type", "  action: echo", `act.yaml:5: spec.type: is required (one of shell, deterministic, agent_loop, groundhog)`},
		{"no allowed_programs", "  type: shell\n  program: echo",
			`act.yaml:5: spec.allowed_programs: is required: list the programs this activity may run`},
		{"empty allowed_programs", "  type: shell\n  program: echo\n  allowed_programs: []",
			`act.yaml:7: spec.allowed_programs: must list at least one program`},
		{"no program", "  type: shell\n  allowed_programs: [echo]", `act.yaml:5: spec.program: is required`},
		{"exit codes", "  type: shell\n  program: echo\n  allowed_programs: [echo]\n  expected_exit_codes: [0, 256, -1]",
			"act.yaml:8: spec.expected_exit_codes[1]: must be between 0 and 255\nact.yaml:8: spec.expected_exit_codes[2]: must be between 0 and 255"},
		{"no exit codes", "  type: shell\n  program: echo\n  allowed_programs: [echo]\n  expected_exit_codes: []",
			`act.yaml:8: spec.expected_exit_codes: must list at least one exit code`},
		{"sandbox", "  type: shell\n  program: echo\n  allowed_programs: [echo]\n  sandbox: agents",
			`act.yaml:8: spec.sandbox: "agents" is not one of none, agent`},
		{"sandbox on an agent", "  type: agent_loop\n  provider: claude\n  sandbox: agent",
			`act.yaml:7: spec.sandbox: sandbox is not a field of an agent_loop activity`},
		{"timeout", "  type: shell\n  program: echo\n  allowed_programs: [echo]\n  timeout_seconds: 0",
			`act.yaml:8: spec.timeout_seconds: must be ≥ 1`},
		{"empty action", "  type: deterministic\n  action: ''", `act.yaml:6: spec.action: must not be empty`},
		{"config not a mapping", "  type: deterministic\n  action: echo\n  config: [1]", `act.yaml:7: spec.config: must be a mapping, not a list`},
		{"groundhog backend auto", "  type: groundhog\n  provider: claude\n  backend: auto", `act.yaml:7: spec.backend: "auto" is not one of http, cli`},
		{"executor on an http groundhog", "  type: groundhog\n  provider: claude\n  executor: claude", `act.yaml:7: spec.executor: is read only with backend: cli`},
		{"groundhog over codex with a tool it lacks", "  type: groundhog\n  provider: claude\n  backend: cli\n  executor: codex\n  tools: [shell.exec]\n  allowed_programs: [sh]",
			`act.yaml:9: spec.tools[0]: "shell.exec" has no equivalent in Codex: Codex's shell runs any program its sandbox allows, so allowed_programs cannot be enforced (tools that have one: fs.delete, fs.edit, fs.list, fs.read, fs.write): executor "codex" runs Codex (output codex)`},
		{"budget on agent_loop", "  type: agent_loop\n  provider: claude\n  attempt_budget_default: 2", `act.yaml:7: spec.attempt_budget_default: attempt_budget_default is not a field of an agent_loop activity`},
		{"budget 0", "  type: groundhog\n  provider: claude\n  attempt_budget_default: 0", `act.yaml:7: spec.attempt_budget_default: must be ≥ 1`},
		{"empty provider", "  type: agent_loop\n  provider: ' '", `act.yaml:6: spec.provider: must not be empty (leave it out for claude)`},
		{"provider not a string", "  type: groundhog\n  provider: [claude]", `act.yaml:6: spec.provider: must be a string, not a list`},
		{"groundhog needs an http provider", "  type: groundhog\n  provider: codex",
			`act.yaml:6: spec.provider: provider "codex" has no HTTP transport (http providers: claude, openai_compat, replay)`},
		{"auto resolves to http, which codex lacks", "  type: agent_loop\n  provider: codex",
			`act.yaml:6: spec.provider: provider "codex" has no HTTP transport (http providers: claude, openai_compat, replay); use backend: cli`},
		{"no executor named like the provider", "  type: agent_loop\n  provider: openai_compat\n  backend: cli",
			`act.yaml:6: spec: no executor "openai_compat" for backend cli (executors: claude, codex)`},
		{"no executor by that name", "  type: agent_loop\n  provider: claude\n  backend: cli\n  executor: gemini",
			`act.yaml:8: spec: no executor "gemini" for backend cli (executors: claude, codex)`},
		{"executor_spec by hand", "  type: agent_loop\n  provider: claude\n  executor_spec: {command: x}",
			`act.yaml:7: spec.executor_spec: executor_spec cannot be written: it is filled in at load, from the executor named by executor: (or provider:)`},
		{"tools", "  type: agent_loop\n  provider: claude\n  tools: [fs.read, '', fs.read]",
			"act.yaml:7: spec.tools[1]: must not be empty\nact.yaml:7: spec.tools[2]: \"fs.read\" is listed twice"},
		{"empty program for shell.exec", "  type: agent_loop\n  provider: claude\n  allowed_programs: [go, '']",
			`act.yaml:7: spec.allowed_programs: must not contain an empty program`},
		{"max_tokens", "  type: agent_loop\n  provider: claude\n  max_tokens: 0", `act.yaml:7: spec.max_tokens: must be ≥ 1`},
		{"base_url", "  type: agent_loop\n  provider: openai_compat\n  base_url: localhost:11434",
			`act.yaml:7: spec.base_url: "localhost:11434" is not an http:// or https:// URL`},
		{"base_url with credentials", "  type: agent_loop\n  provider: openai_compat\n  base_url: https://me:pw@llm.example.com",
			`act.yaml:7: spec.base_url: must not contain credentials: name the key's variable with api_key_env in the config`},
		{"unknown seeded fixture", "  type: agent_loop\n  provider: replay\n  fixture: seeded:fixtures/nope.json",
			`act.yaml:7: spec.fixture: no seeded file "fixtures/nope.json"`},
		{"schema not JSON", "  type: deterministic\n  action: echo\n  input_schema_json: '{nope'", `act.yaml:7: spec.input_schema_json: must be valid JSON`},
		{"schema list", "  type: deterministic\n  action: echo\n  input_schema_json: [1]", `act.yaml:7: spec.input_schema_json: must be a JSON string or a mapping, not a list`},
		{"bad template", "  type: deterministic\n  action: echo\n  config: {a: [\"{{ nope }}\"]}",
			`act.yaml:7: spec.config.a[0]: {{ nope }}: unknown root "nope" (expected input, steps, env, item, iteration or workspace_path)`},
		{"number JSON cannot hold", "  type: deterministic\n  action: echo\n  config: {a: .inf}", `act.yaml:7: spec.config.a: ".inf" is not a number JSON can represent`},
		{"spec not a mapping", "  - type", `act.yaml:5: spec: must be a mapping, not a list`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := assets.ParseActivity("act.yaml", activity(tt.spec+"\n"))
			require.ErrorIs(t, err, assets.ErrInvalid)
			assert.EqualError(t, err, tt.want)
		})
	}
}

func TestParseActivityMetadata(t *testing.T) {
	t.Parallel()
	a, err := assets.ParseActivity("a.yaml", []byte(`schemaVersion: 2
kind: Activity
metadata:
  name: v1.2_tool-x
  description: A tool.
  labels: {owner: me, n: 3}
spec: {type: deterministic, action: echo}
`))
	require.NoError(t, err)
	assert.Equal(t, "v1.2_tool-x", a.Name)
	assert.Equal(t, "A tool.", a.Description)
	assert.Equal(t, map[string]string{"owner": "me", "n": "3"}, a.Labels)

	_, err = assets.ParseActivity("a.yaml", []byte("schemaVersion: 2\nkind: Activity\nmetadata: {}\n"))
	assert.EqualError(t, err, "a.yaml:1: spec: is required\na.yaml:3: metadata.name: is required")

	_, err = assets.ParseActivity("a.yaml", []byte("schemaVersion: 3\nkind: Activity\n"))
	assert.EqualError(t, err, "a.yaml:1: schemaVersion 3 is not supported; this Orbit reads schemaVersion 2")
	_, err = assets.ParseActivity("a.yaml", []byte("schemaVersion: two\nkind: Activity\n"))
	assert.EqualError(t, err, `a.yaml:1: schemaVersion: must be 2, not "two"`)
	_, err = assets.ParseActivity("a.yaml", []byte("schemaVersion: 2\nkind: Activity\nmetadata: {name: a}\nspec: {type: deterministic, action: echo}\nextra: 1\n"))
	assert.EqualError(t, err, `a.yaml:5: extra: unknown key "extra"`)
}
