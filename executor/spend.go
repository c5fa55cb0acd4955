package executor

import (
	"context"

	"github.com/orbitrun/orbit/agent"
	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
)

// spend is what a run's agents spent, by the log: input plus output tokens
// of every agent.turn (the HTTP loop and the claude_code adapter record
// them live), the tokens of a CLI invocation whose turns carried none (an
// output parsed only at the end: claude_json; codex_jsonl, whose turns
// carry no usage), and the cost_usd of every cli.invocation.finished (only
// CLI agents report a cost; the HTTP loop has no price table, so its turns
// count by tokens only). Events must be added in log order: a step
// attempt's turns come before its invocation's end.
type spend struct {
	tokens  int64
	costUSD float64
	// turned holds step key # attempt of every agent.turn added that
	// carried usage: an invocation recorded before usage_in_turns existed
	// says nothing, and its turns tell.
	turned map[string]bool
}

// add counts one event of the run's log; events of other types are
// ignored.
func (s *spend) add(ev events.Event) {
	switch ev.Type {
	case events.AgentTurn:
		var d events.AgentTurnData
		if ev.Decode(&d) == nil {
			s.tokens += d.Usage.InputTokens + d.Usage.OutputTokens
			if d.Usage == (events.TokenUsage{}) {
				break
			}
			if s.turned == nil {
				s.turned = map[string]bool{}
			}
			s.turned[attemptKey(ev.StepKey, d.Attempt)] = true
		}
	case events.CLIInvocationFinished:
		var d events.CLIInvocationFinishedData
		if ev.Decode(&d) == nil {
			s.costUSD += d.CostUSD
			if !d.UsageInTurns && !s.turned[attemptKey(ev.StepKey, d.Attempt)] {
				s.tokens += d.Usage.InputTokens + d.Usage.OutputTokens
			}
		}
	}
}

// spendFilters select the events a spend sums.
func spendFilters(runID string) []string {
	return []string{
		events.EventSubject(events.AggregateRun, runID, events.AgentTurn),
		events.EventSubject(events.AggregateRun, runID, events.CLIInvocationFinished),
	}
}

// agentBudget is the budget an agent step's session checks between turns:
// the run's bounds, less what the run spent before the session began.
func (a *agentStep) agentBudget(ctx context.Context, b *assets.Budget) (*agent.Budget, error) {
	if b == nil {
		return nil, nil
	}
	evs, err := a.w.cfg.Log.Read(ctx, events.FollowOptions{Filters: spendFilters(a.cmd.RunID)})
	if err != nil {
		return nil, err
	}
	var s spend
	for _, ev := range evs {
		s.add(ev)
	}
	return &agent.Budget{MaxTokens: b.MaxTokens, MaxCostUSD: b.MaxCostUSD, SpentTokens: s.tokens, SpentCostUSD: s.costUSD}, nil
}
