package agent

import (
	"errors"
	"fmt"
)

// ErrBudgetExhausted: the run's budget was spent between two turns, and the
// session stopped rather than ask the model again.
var ErrBudgetExhausted = errors.New("budget exhausted")

// StopBudget is the stop reason of a session its budget stopped.
const StopBudget = "budget_exhausted"

// Budget bounds a session by what its run may still spend (DESIGN §8). The
// session adds its own usage to what was spent before it began and stops
// between turns once a bound is reached. A nil *Budget sets no bound; so
// does a zero bound.
type Budget struct {
	MaxTokens  int64   // input + output tokens
	MaxCostUSD float64 // as agents report it; usage without a cost counts by tokens only
	// SpentTokens and SpentCostUSD are what the run spent before the session.
	SpentTokens  int64
	SpentCostUSD float64
}

// check returns ErrBudgetExhausted, wrapped with the figures, when what was
// spent before the session plus the session's own usage and cost reach a
// bound.
func (b *Budget) check(u Usage, costUSD float64) error {
	if b == nil {
		return nil
	}
	tokens := b.SpentTokens + u.InputTokens + u.OutputTokens
	cost := b.SpentCostUSD + costUSD
	switch {
	case b.MaxTokens > 0 && tokens >= b.MaxTokens:
		return fmt.Errorf("%w: %d tokens spent of max_tokens %d", ErrBudgetExhausted, tokens, b.MaxTokens)
	case b.MaxCostUSD > 0 && cost >= b.MaxCostUSD:
		return fmt.Errorf("%w: $%.4f spent of max_cost_usd %.4f", ErrBudgetExhausted, cost, b.MaxCostUSD)
	}
	return nil
}
