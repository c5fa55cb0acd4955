package assets_test

import (
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
