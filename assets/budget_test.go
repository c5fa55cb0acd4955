package assets_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/assets"
)

func budgetJob(budget string) []byte {
	return []byte("schemaVersion: 2\nkind: Job\nmetadata: {name: j}\nspec:\n  budget: " + budget +
		"\n  steps:\n    - {id: a, spec: " + echo + "}\n")
}

func TestJobBudget(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, budget string
		want         *assets.Budget
		err          string
	}{
		{name: "both bounds", budget: "{max_tokens: 1000, max_cost_usd: 0.25}", want: &assets.Budget{MaxTokens: 1000, MaxCostUSD: 0.25}},
		{name: "tokens only", budget: "{max_tokens: 5}", want: &assets.Budget{MaxTokens: 5}},
		{name: "a whole-number cost", budget: "{max_cost_usd: 2}", want: &assets.Budget{MaxCostUSD: 2}},
		{name: "null is no budget", budget: "null"},
		{name: "no bound", budget: "{}", err: "j.yaml:5: spec.budget: must set max_cost_usd or max_tokens"},
		{name: "zero tokens", budget: "{max_tokens: 0}", err: "spec.budget.max_tokens: must be ≥ 1"},
		{name: "fractional tokens", budget: "{max_tokens: 1.5}", err: "spec.budget.max_tokens: must be an integer"},
		{name: "negative cost", budget: "{max_cost_usd: -1}", err: "spec.budget.max_cost_usd: must be > 0, not -1"},
		{name: "text cost", budget: "{max_cost_usd: lots}", err: "spec.budget.max_cost_usd: must be a number"},
		{name: "unknown key", budget: "{max_token: 5}", err: `spec.budget.max_token: unknown key "max_token" (did you mean "max_tokens"?)`},
		{name: "not a mapping", budget: "100", err: "spec.budget: must be a mapping"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			j, err := assets.ParseJob("j.yaml", budgetJob(tc.budget), nil)
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, j.Spec.Budget)
		})
	}
}

func TestBudgetExhausted(t *testing.T) {
	t.Parallel()
	var none *assets.Budget
	assert.False(t, none.Exhausted(1<<40, 1e9), "no budget, no bound")
	b := &assets.Budget{MaxTokens: 100, MaxCostUSD: 1}
	assert.False(t, b.Exhausted(99, 0.99))
	assert.True(t, b.Exhausted(100, 0), "reaching a bound spends it")
	assert.True(t, b.Exhausted(0, 1))
	assert.False(t, (&assets.Budget{MaxCostUSD: 1}).Exhausted(1<<40, 0), "tokens are unbounded without max_tokens")
}

func TestPlanAndGroundhogActivityBudgets(t *testing.T) {
	t.Parallel()
	p, err := assets.ParsePlan("plan.yaml", []byte("budget: {max_tokens: 100, max_cost_usd: 1.5}\ncheckpoints:\n  - id: a\n    spec: do a\n    success_criteria:\n      - {kind: file_exists, path: a}\n"))
	require.NoError(t, err)
	assert.Equal(t, &assets.Budget{MaxTokens: 100, MaxCostUSD: 1.5}, p.Budget)

	_, err = assets.ParsePlan("plan.yaml", []byte("budget: {max_tokens: -3}\ncheckpoints:\n  - id: a\n    spec: do a\n    success_criteria:\n      - {kind: file_exists, path: a}\n"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "plan.yaml:1: budget.max_tokens: must be ≥ 1")

	a, err := assets.ParseActivity("gh.yaml", []byte("schemaVersion: 2\nkind: Activity\nmetadata: {name: gh}\nspec: {type: groundhog, provider: claude, budget: {max_cost_usd: 3}}\n"))
	require.NoError(t, err)
	assert.Equal(t, &assets.Budget{MaxCostUSD: 3}, a.Spec.Budget)

	_, err = assets.ParseActivity("al.yaml", []byte("schemaVersion: 2\nkind: Activity\nmetadata: {name: al}\nspec: {type: agent_loop, provider: claude, budget: {max_cost_usd: 3}}\n"))
	require.Error(t, err, "an agent_loop's budget is its run's, on the job")
	assert.Contains(t, err.Error(), "spec.budget")
}
