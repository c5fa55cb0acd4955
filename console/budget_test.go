package console_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

// TestARunPageShowsHowToResumeABudgetAndTheRaise: a run its budget stopped
// says how to resume it; once resumed, its page lists the raise.
func TestARunPageShowsHowToResumeABudgetAndTheRaise(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	p.Env = append(p.Env, "ORBIT_REPLAY_FIXTURE="+p.WriteFile("fixture.json", `[
  {"content": [{"kind": "tool_use", "id": "l1", "name": "fs.list", "input": {"path": "."}}], "stop_reason": "tool_use",
   "usage": {"input_tokens": 500, "output_tokens": 100}},
  {"content": [{"kind": "text", "text": "done"}], "stop_reason": "end_turn",
   "usage": {"input_tokens": 300, "output_tokens": 100}}
]`))
	writeJob(t, p, "spender", `
schemaVersion: 2
kind: Job
metadata: {name: spender}
spec:
  budget: {max_tokens: 500}
  steps:
    - id: agent
      spec: {type: agent_loop, provider: claude, tools: [fs.list]}
`)
	c := serveConsole(t, p)
	id := runJob(t, p, "spender")
	require.Equal(t, events.StateBudgetExhausted, showRun(t, p, id).State)
	code, body := c.get(t, "/runs/"+id)
	require.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, "orbit run resume "+id+" --max-tokens N")
	assert.NotContains(t, body, `class="budget-raise"`)

	r := p.Orbit("run", "resume", id, "--max-tokens", "5000")
	require.Equal(t, 0, r.Code, r.String())
	code, body = c.get(t, "/runs/"+id)
	require.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, `<dd class="budget-raise">raised to max_tokens 5000 after 600 tokens, $0.0000 spent`)
	assert.NotContains(t, body, "orbit run resume "+id)
}
