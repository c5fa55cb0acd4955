package assets_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/assets"
)

func TestSeededReferenceActivities(t *testing.T) {
	t.Parallel()
	c := seeded(t)
	sh, err := c.Activity("shell_reference")
	require.NoError(t, err)
	s := sh.Spec
	assert.Equal(t, "shell", s.Type)
	assert.Equal(t, "echo", s.Program)
	assert.Equal(t, []string{"{{ input.message }}"}, s.Args)
	assert.Equal(t, []string{"echo", "printf", "sh"}, s.AllowedPrograms)
	assert.NotZero(t, s.TimeoutSeconds)
	assert.Equal(t, []int{0}, s.ExpectedExitCodes)
	assert.NotEmpty(t, s.InputSchemaJSON)
	assert.NotEmpty(t, s.OutputSchemaJSON)

	det, err := c.Activity("deterministic_reference")
	require.NoError(t, err)
	assert.Equal(t, "deterministic", det.Spec.Type)
	assert.Equal(t, "echo", det.Spec.Action)
	assert.NotEmpty(t, det.Spec.Config)
}

// TestSeededHelloDataFlow follows the data of the hello job the way the
// executor runs it: a step's input is its default_input rendered against the
// job, the echo action outputs its rendered config merged over that input,
// and later steps read earlier outputs.
func TestSeededHelloDataFlow(t *testing.T) {
	t.Parallel()
	j, err := seeded(t).Job("hello")
	require.NoError(t, err)
	steps := j.Spec.Steps
	require.Len(t, steps, 3)
	assert.Equal(t, "activity:deterministic_reference", steps[0].Target)
	assert.Empty(t, steps[1].Target)
	assert.Equal(t, "echo", steps[1].Activity.Action)
	assert.Equal(t, "shell", steps[2].Activity.Type)

	input := assets.MergeInput(j.Spec.DefaultInput, map[string]any{"name": "Ada"})
	results := map[string]assets.StepResult{}
	jobScope := func() *assets.Scope { return &assets.Scope{Input: input, Steps: results} }
	var shellArgs []string
	for _, st := range steps {
		stepInput := input
		if st.DefaultInput != nil {
			stepInput, err = assets.RenderValue(st.DefaultInput, jobScope())
			require.NoError(t, err, st.ID)
		}
		sc := &assets.Scope{Input: stepInput, Steps: results}
		switch st.Activity.Type {
		case assets.TypeDeterministic:
			cfg, err := assets.RenderValue(st.Activity.Config, sc)
			require.NoError(t, err, st.ID)
			results[st.ID] = assets.StepResult{State: "success", Output: assets.MergeInput(stepInput, cfg)}
		case assets.TypeShell:
			for _, a := range st.Activity.Args {
				tmpl, err := assets.ParseTemplate(a)
				require.NoError(t, err)
				s, err := tmpl.Render(sc)
				require.NoError(t, err, st.ID)
				shellArgs = append(shellArgs, s)
			}
		}
	}
	assert.Equal(t, []string{"Hello, Ada! Greeted Ada."}, shellArgs)
}

// TestSeededAssetsLoadOnEveryBackend: the seeded catalog loads whatever auto
// resolves to, and whatever profiles a project defines.
func TestSeededAssetsLoadOnEveryBackend(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"", "http", "cli", "auto"} {
		c, err := assets.OpenCatalog(t.TempDir(), assets.CatalogOptions{Backend: backend, FSProfiles: []string{}})
		require.NoError(t, err, backend)
		want := "http"
		if backend == "cli" {
			want = "cli"
		}
		ref, err := c.Activity("agent_loop_reference")
		require.NoError(t, err)
		assert.Equal(t, want, ref.Spec.Backend, backend)
		assert.Equal(t, want == "cli", ref.Spec.ExecutorSpec != nil, backend)

		j, err := c.Job("example_agent")
		require.NoError(t, err)
		assert.Equal(t, "http", j.Spec.Steps[0].Activity.Backend, "example_agent replays over http on every backend")
		assert.Nil(t, j.Spec.Steps[0].Activity.ExecutorSpec)
	}
}

func TestSeededAgentLoopReference(t *testing.T) {
	t.Parallel()
	a, err := seeded(t).Activity("agent_loop_reference")
	require.NoError(t, err)
	s := a.Spec
	assert.Equal(t, "agent_loop", s.Type)
	assert.Equal(t, "claude", s.Provider)
	assert.Equal(t, "claude", s.Executor)
	assert.NotEmpty(t, s.Model)
	assert.Contains(t, s.Instruction, "{{ input.issue }}")
	assert.Equal(t, []string{"fs.read", "fs.list", "fs.edit", "fs.write", "shell.exec"}, s.Tools)
	assert.Equal(t, []string{"go", "git", "ls"}, s.AllowedPrograms)
	assert.Equal(t, "continue", s.OnDenial)
	assert.Equal(t, "default", s.FSProfile)
	assert.NotZero(t, s.MaxIterations)
	assert.NotZero(t, s.MaxTokens)
	assert.NotZero(t, s.WallClockTimeoutSeconds)
	assert.NotEmpty(t, s.InputSchemaJSON)
}

// fixture is the replay provider's script, as the seeded one writes it.
type fixture struct {
	Turns []struct {
		Content []struct {
			Kind  string          `json:"kind"`
			Text  string          `json:"text"`
			ID    string          `json:"id"`
			Name  string          `json:"name"`
			Input json.RawMessage `json:"input"`
		} `json:"content"`
		StopReason string `json:"stop_reason"`
	} `json:"turns"`
}

// TestSeededExampleAgent checks that the example's fixture plays the
// conversation its job describes, with only the tools the step allows.
func TestSeededExampleAgent(t *testing.T) {
	t.Parallel()
	j, err := seeded(t).Job("example_agent")
	require.NoError(t, err)
	require.Len(t, j.Spec.Steps, 1)
	step := j.Spec.Steps[0].Activity
	assert.Equal(t, "agent_loop", step.Type)
	assert.Equal(t, "replay", step.Provider)
	assert.Equal(t, []string{"fs.write", "fs.read", "fs.list"}, step.Tools)
	require.Equal(t, "seeded:fixtures/example_agent.json", step.Fixture)

	data, err := assets.SeededFile("fixtures/example_agent.json")
	require.NoError(t, err)
	var f fixture
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&f))
	require.Len(t, f.Turns, 3)

	type call struct{ name, input string }
	var calls []call
	ids := map[string]bool{}
	for i, turn := range f.Turns {
		var turnCalls int
		for _, b := range turn.Content {
			switch b.Kind {
			case "text":
				assert.NotEmpty(t, b.Text)
			case "tool_use":
				turnCalls++
				assert.Contains(t, step.Tools, b.Name)
				assert.False(t, ids[b.ID], "tool_use ids are unique")
				ids[b.ID] = true
				calls = append(calls, call{b.Name, string(b.Input)})
			default:
				t.Fatalf("turn %d: unknown block kind %q", i, b.Kind)
			}
		}
		if i < len(f.Turns)-1 {
			assert.Equal(t, "tool_use", turn.StopReason, "turn %d", i)
			assert.Equal(t, 1, turnCalls, "turn %d", i)
		} else {
			assert.Equal(t, "end_turn", turn.StopReason)
			assert.Zero(t, turnCalls)
		}
	}
	require.Len(t, calls, 2)
	assert.Equal(t, "fs.write", calls[0].name)
	assert.JSONEq(t, `{"path": "hello.txt", "content": "Hello from an Orbit agent loop.\n"}`, calls[0].input)
	assert.Equal(t, "fs.read", calls[1].name)
	assert.JSONEq(t, `{"path": "hello.txt"}`, calls[1].input)
}

func TestSeededFile(t *testing.T) {
	t.Parallel()
	data, err := assets.SeededFile("jobs/hello.yaml")
	require.NoError(t, err)
	assert.Contains(t, string(data), "name: hello")
	data[0] = 'X'
	again, err := assets.SeededFile("jobs/hello.yaml")
	require.NoError(t, err)
	assert.NotEqual(t, byte('X'), again[0], "each call returns its own copy")

	for _, name := range []string{"fixtures/nope.json", "", ".", "fixtures", "../seeded.go", "/jobs/hello.yaml", "seeded:jobs/hello.yaml", "jobs//hello.yaml"} {
		_, err := assets.SeededFile(name)
		require.ErrorIs(t, err, assets.ErrNotFound, "%q", name)
	}
	_, err = assets.SeededFile("fixtures/nope.json")
	assert.EqualError(t, err, `seeded file "fixtures/nope.json" not found`)
}
