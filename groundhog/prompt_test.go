package groundhog_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/groundhog"
	"github.com/orbitrun/orbit/projector"
)

// TestThePromptSaysACheckpointMadeNoChanges: a checkpoint whose attempt
// changed nothing is remembered as such, never with the commit it started
// from, which is not its own.
func TestThePromptSaysACheckpointMadeNoChanges(t *testing.T) {
	t.Parallel()
	plan, err := assets.ParsePlan("plan.yaml", []byte(twoCheckpoints))
	require.NoError(t, err)
	started := "0123456789abcdef0123456789abcdef01234567"
	mem := &groundhog.Memory{Checkpoints: []projector.MemoryCheckpoint{
		{ID: "greeting", Summary: "greet.txt was already there", Commit: started, NoChange: true},
	}}
	prompt := groundhog.Prompt(plan, mem, &plan.Checkpoints[1])
	assert.Contains(t, prompt, "## greeting (no changes)\ngreet.txt was already there")
	assert.NotContains(t, prompt, started[:12])

	mem.Checkpoints[0].NoChange = false
	assert.Contains(t, groundhog.Prompt(plan, mem, &plan.Checkpoints[1]), "## greeting (commit "+started[:12]+")")
}
