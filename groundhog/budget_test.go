package groundhog_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
)

// costlyTurn is writeTurn spending 150 tokens.
func costlyTurn(path, content, summary string) string {
	return strings.Replace(writeTurn(path, content, summary), `"stop_reason": "tool_use"}`,
		`"stop_reason": "tool_use", "usage": {"input_tokens": 120, "output_tokens": 30}}`, 1)
}

var twoFiles = filesPlan("a", "b")

// TestTheActivitysBudgetStopsATaskBeforeItsNextAttempt: with no budget in
// the plan the activity's applies; a plan's own budget wins over it.
func TestTheActivitysBudgetStopsATaskBeforeItsNextAttempt(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		plan       string
		state      string
		committed  int
		budgetRecs int
	}{
		{name: "the activity's budget", plan: twoFiles, state: events.GroundhogBudgetExhausted, committed: 1, budgetRecs: 1},
		{name: "the plan's budget wins", plan: "budget: {max_tokens: 1000}\n" + twoFiles, state: events.GroundhogDone, committed: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, map[string]string{"README.md": "hi\n"}, tc.plan)
			s := spec("fs.write")
			s.Budget = &assets.Budget{MaxTokens: 100}
			res, err := h.run("R1", s, replay(t, fixture(costlyTurn("a.txt", "a\n", "a"), costlyTurn("b.txt", "b\n", "b"))))
			require.NoError(t, err)
			assert.Equal(t, tc.state, res.State, res.Message)
			assert.Equal(t, tc.committed, res.Committed)
			assert.Len(t, h.events(events.GroundhogBudgetSpent), tc.budgetRecs)
			if tc.budgetRecs == 0 {
				return
			}
			var d events.GroundhogBudgetSpentData
			require.NoError(t, h.events(events.GroundhogBudgetSpent)[0].Decode(&d))
			assert.Equal(t, events.GroundhogBudgetSpentData{RunID: "R1", PlanVersion: 1, Checkpoint: "b", Tokens: 150, MaxTokens: 100}, d)
			st := h.events(events.TaskStatusChanged)
			var status events.TaskStatusChangedData
			require.NoError(t, st[len(st)-1].Decode(&status))
			assert.Equal(t, events.TaskBudgetExhausted, status.Status)
			assert.True(t, h.verify().OK)
		})
	}
}
