package activity

import (
	"context"

	"github.com/orbitrun/orbit/agent"
	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/interpreter"
)

// agentBudget is the budget an agent step's session checks between turns:
// the run's bounds, less what the run spent before the session began.
func (a *agentStep) agentBudget(ctx context.Context, b *assets.Budget) (*agent.Budget, error) {
	if b == nil {
		return nil, nil
	}
	evs, err := a.w.cfg.Log.Read(ctx, events.FollowOptions{Filters: interpreter.SpendFilters(a.cmd.RunID)})
	if err != nil {
		return nil, err
	}
	var s interpreter.Spend
	for _, ev := range evs {
		s.Add(ev)
	}
	return &agent.Budget{MaxTokens: b.MaxTokens, MaxCostUSD: b.MaxCostUSD, SpentTokens: s.Tokens, SpentCostUSD: s.CostUSD}, nil
}
