package agent_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/agent"
	"github.com/orbitrun/orbit/events"
)

// turnCounter counts the agent.turn events a session records.
type turnCounter struct{ turns int }

func (c *turnCounter) Emit(_ context.Context, typ string, _ any) error {
	if typ == events.AgentTurn {
		c.turns++
	}
	return nil
}

func (c *turnCounter) PutBlob(context.Context, []byte) (events.BlobRef, error) {
	return events.BlobRef{}, errors.New("no blobs here")
}

// TestSessionStopsBetweenTurnsWhenTheBudgetIsSpent: a tool call of 600
// tokens, then an answer of 400; the budget is checked before each turn
// with what the run spent before the session.
func TestSessionStopsBetweenTurnsWhenTheBudgetIsSpent(t *testing.T) {
	t.Parallel()
	fixture := filepath.Join(t.TempDir(), "fixture.json")
	require.NoError(t, os.WriteFile(fixture, []byte(`[
	  {"content": [{"kind": "tool_use", "id": "l", "name": "fs.list", "input": {"path": "."}}], "stop_reason": "tool_use",
	   "usage": {"input_tokens": 500, "output_tokens": 100}},
	  {"content": [{"kind": "text", "text": "done"}], "stop_reason": "end_turn", "usage": {"input_tokens": 300, "output_tokens": 100}}
	]`), 0o600))
	list, ok := agent.Builtin("fs.list")
	require.True(t, ok)
	for _, tc := range []struct {
		name   string
		budget *agent.Budget
		turns  int
		err    string
	}{
		{name: "no budget", turns: 2},
		{name: "enough left for both turns", budget: &agent.Budget{MaxTokens: 1000, SpentTokens: 300}, turns: 2},
		{name: "spent by the first turn", budget: &agent.Budget{MaxTokens: 1000, SpentTokens: 400}, turns: 1,
			err: "budget exhausted: 1000 tokens spent of max_tokens 1000"},
		{name: "spent before the session", budget: &agent.Budget{MaxTokens: 1000, SpentTokens: 1000}, turns: 0,
			err: "budget exhausted: 1000 tokens spent of max_tokens 1000"},
		{name: "cost spent before the session", budget: &agent.Budget{MaxCostUSD: 0.5, SpentCostUSD: 0.5}, turns: 0,
			err: "budget exhausted: $0.5000 spent of max_cost_usd 0.5000"},
		{name: "a cost bound alone never stops token usage", budget: &agent.Budget{MaxCostUSD: 0.5}, turns: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := &turnCounter{}
			out, err := agent.Run(context.Background(), agent.Config{
				Provider: replayOf(t, fixture, 0), Tools: []agent.Tool{list},
				ToolCtx: &agent.ToolContext{Workspace: t.TempDir(), Profile: agent.DefaultProfile},
				Budget:  tc.budget, Emitter: rec,
			}, "list the files")
			assert.Equal(t, tc.turns, rec.turns)
			assert.Equal(t, tc.turns, out.Turns)
			if tc.err == "" {
				require.NoError(t, err)
				assert.Equal(t, agent.StopEndTurn, out.StopReason)
				return
			}
			require.ErrorIs(t, err, agent.ErrBudgetExhausted)
			assert.EqualError(t, err, tc.err)
			assert.Equal(t, agent.StopBudget, out.StopReason)
		})
	}
}
