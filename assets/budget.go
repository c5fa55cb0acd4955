package assets

import (
	"fmt"
	"math"
	"slices"

	"gopkg.in/yaml.v3"
)

// Budget bounds what a run may spend on its agents, summed from the usage
// the log records (DESIGN §8). A zero field sets no bound.
type Budget struct {
	// MaxCostUSD bounds the cost agents report (a CLI agent's cost_usd).
	// Usage whose cost is not recorded (the HTTP loop) counts by tokens
	// only.
	MaxCostUSD float64 `json:"max_cost_usd,omitempty"`
	// MaxTokens bounds input plus output tokens of every model turn.
	MaxTokens int64 `json:"max_tokens,omitempty"`
}

// Exhausted reports whether tokens and costUSD spent reach the budget. A
// nil budget is never exhausted.
func (b *Budget) Exhausted(tokens int64, costUSD float64) bool {
	if b == nil {
		return false
	}
	return (b.MaxTokens > 0 && tokens >= b.MaxTokens) || (b.MaxCostUSD > 0 && costUSD >= b.MaxCostUSD)
}

var budgetKeys = []string{"max_cost_usd", "max_tokens"}

// budget reads an optional budget: {max_cost_usd, max_tokens} field of m.
// Each bound must be a positive number and at least one must be set.
func (d *decoder) budget(m *mapping, key string) *Budget {
	n := m.get(key)
	if n == nil {
		return nil
	}
	path := child(m.path, key)
	bm := d.mapping(n, path)
	if bm == nil {
		return nil
	}
	d.checkKeys(bm, budgetKeys, nil)
	b := &Budget{}
	if v := bm.get("max_tokens"); v != nil {
		if t, ok := d.scalarInt(v, child(path, "max_tokens")); ok {
			if t < 1 {
				d.addAt(v, child(path, "max_tokens"), "must be ≥ 1")
			}
			b.MaxTokens = int64(t)
		}
	}
	if v := bm.get("max_cost_usd"); v != nil {
		b.MaxCostUSD = d.positiveNumber(v, child(path, "max_cost_usd"))
	}
	if !slices.ContainsFunc(budgetKeys, bm.has) {
		d.addAt(n, path, "must set max_cost_usd or max_tokens")
	}
	return b
}

// positiveNumber reads a number that must be greater than zero.
func (d *decoder) positiveNumber(n *yaml.Node, path string) float64 {
	n = resolve(n)
	var f float64
	if n.Kind != yaml.ScalarNode || (n.ShortTag() != "!!int" && n.ShortTag() != "!!float") || n.Decode(&f) != nil ||
		math.IsInf(f, 0) || math.IsNaN(f) {
		d.addAt(n, path, "must be a number, not "+kindName(n))
		return 0
	}
	if f <= 0 {
		d.addAt(n, path, fmt.Sprintf("must be > 0, not %v", f))
	}
	return f
}
