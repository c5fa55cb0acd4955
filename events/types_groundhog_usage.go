package events

// GroundhogUsage records, on the task, what a CLI agent's session of an
// attempt reported at its end: the usage and cost of its
// cli.invocation.finished, which is stored under the run. A task's budget
// spans its runs, so it reads its attempts' spending from the task alone.
const GroundhogUsage = "groundhog.agent.usage"

func init() {
	register(GroundhogUsage, AggregateTask, GroundhogUsageData{})
}

// GroundhogUsageData is the account of one CLI session of an attempt.
// Whatever sums a task's usage follows the rule of usage_in_turns: the
// tokens count when the attempt's groundhog.agent.turn events carried none
// (Codex, claude_json), and never twice; the cost always counts, as no
// turn carries one.
type GroundhogUsageData struct {
	Attempt
	Usage        TokenUsage `json:"usage"`
	CostUSD      float64    `json:"cost_usd,omitempty"`
	UsageInTurns bool       `json:"usage_in_turns,omitempty"`
}

// Tokens is the input plus output tokens the record adds to what the
// attempt's turns carry: its own when its turns carried none.
func (d *GroundhogUsageData) Tokens() int64 {
	if d.UsageInTurns {
		return 0
	}
	return d.Usage.InputTokens + d.Usage.OutputTokens
}
