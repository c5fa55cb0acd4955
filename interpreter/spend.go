package interpreter

import (
	"strconv"

	"github.com/orbitrun/orbit/events"
)

// Spend is what a run's agents spent, by the log: input plus output tokens
// of every agent.turn (the HTTP loop and the claude_code adapter record
// them live), the tokens of a CLI invocation whose turns carried none (an
// output parsed only at the end: claude_json; codex_jsonl, whose turns
// carry no usage), and the cost_usd of every cli.invocation.finished (only
// CLI agents report a cost; the HTTP loop has no price table, so its turns
// count by tokens only). Events must be added in log order: a step
// attempt's turns come before its invocation's end.
type Spend struct {
	Tokens  int64
	CostUSD float64
	// turned holds step key # attempt of every agent.turn added that
	// carried usage: an invocation recorded before usage_in_turns existed
	// says nothing, and its turns tell.
	turned map[string]bool
}

// Add counts one event of the run's log; events of other types are
// ignored.
func (s *Spend) Add(ev events.Event) {
	switch ev.Type {
	case events.AgentTurn:
		var d events.AgentTurnData
		if ev.Decode(&d) == nil {
			s.Tokens += d.Usage.InputTokens + d.Usage.OutputTokens
			if d.Usage == (events.TokenUsage{}) {
				break
			}
			if s.turned == nil {
				s.turned = map[string]bool{}
			}
			s.turned[AttemptKey(ev.StepKey, d.Attempt)] = true
		}
	case events.CLIInvocationFinished:
		var d events.CLIInvocationFinishedData
		if ev.Decode(&d) == nil {
			s.CostUSD += d.CostUSD
			if !d.UsageInTurns && !s.turned[AttemptKey(ev.StepKey, d.Attempt)] {
				s.Tokens += d.Usage.InputTokens + d.Usage.OutputTokens
			}
		}
	}
}

// SpendFilters select the events of run runID that a Spend sums.
func SpendFilters(runID string) []string {
	return []string{
		events.EventSubject(events.AggregateRun, runID, events.AgentTurn),
		events.EventSubject(events.AggregateRun, runID, events.CLIInvocationFinished),
	}
}

// AttemptKey names a step attempt: step key # attempt.
func AttemptKey(key string, attempt int) string {
	return key + "#" + strconv.Itoa(attempt)
}
