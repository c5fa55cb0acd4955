package main

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/spf13/cobra"

	"github.com/orbitrun/orbit/engine"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/projector"
)

func (a *app) metricsCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "metrics",
		Short: "Show token usage per model, tool calls, and step and run durations",
		Args:  cobra.NoArgs,
		RunE: a.withEngine(func(ctx context.Context, l *events.Log, _ []string) error {
			last, err := l.LastSeq(ctx)
			if err != nil {
				return &exitError{code: exitUnavailable, err: err}
			}
			var m projector.Metrics
			if err := request(ctx, l, engine.EndpointMetrics, engine.MetricsQuery{MinSeq: last}, &m); err != nil {
				return err
			}
			if a.json {
				return a.printJSON(m)
			}
			a.printMetrics(&m)
			return nil
		}),
	}
}

func (a *app) printMetrics(m *projector.Metrics) {
	t := newTable(a.stdout, "MODEL", "TURNS", "INVOCATIONS", "INPUT", "OUTPUT", "CACHE READ", "CACHE WRITE", "COST USD")
	for _, name := range slices.Sorted(maps.Keys(m.Models)) {
		x := m.Models[name]
		t.row(name, fmt.Sprint(x.Turns), fmt.Sprint(x.Invocations), fmt.Sprint(x.Usage.InputTokens), fmt.Sprint(x.Usage.OutputTokens),
			fmt.Sprint(x.Usage.CacheReadTokens), fmt.Sprint(x.Usage.CacheWriteTokens), fmt.Sprintf("%.4f", x.CostUSD()))
	}
	_ = t.flush()
	a.printf("\n")
	t = newTable(a.stdout, "TOOL", "CALLS", "ERRORS", "DENIALS")
	for _, name := range slices.Sorted(maps.Keys(m.Tools)) {
		x := m.Tools[name]
		t.row(name, fmt.Sprint(x.Calls), fmt.Sprint(x.Errors), fmt.Sprint(x.Denials))
	}
	_ = t.flush()
	a.printf("\n")
	t = newTable(a.stdout, "JOB", "STEP", "COUNT", "MEAN", "MAX", "STATES")
	for _, job := range slices.Sorted(maps.Keys(m.Steps)) {
		for _, step := range slices.Sorted(maps.Keys(m.Steps[job])) {
			x := m.Steps[job][step]
			mean := int64(0)
			if x.Count > 0 {
				mean = x.TotalDurationMS / x.Count
			}
			t.row(job, step, fmt.Sprint(x.Count), duration(mean), duration(x.MaxDurationMS), states(x.States))
		}
	}
	_ = t.flush()
	a.printf("\n")
	t = newTable(a.stdout, "ACTIVITY TYPE", "COUNT", "MEAN", "P50", "P90", "P99", "STATES")
	for _, typ := range slices.Sorted(maps.Keys(m.ActivityTypes)) {
		x := m.ActivityTypes[typ]
		mean := int64(0)
		if x.Count > 0 {
			mean = x.TotalDurationMS / x.Count
		}
		t.row(typ, fmt.Sprint(x.Count), duration(mean), bucketBound(x, 0.5), bucketBound(x, 0.9), bucketBound(x, 0.99), states(x.States))
	}
	_ = t.flush()
	a.printf("\n")
	t = newTable(a.stdout, "JOB", "RUNS", "TOTAL", "STATES")
	for _, job := range slices.Sorted(maps.Keys(m.Jobs)) {
		x := m.Jobs[job]
		t.row(job, fmt.Sprint(x.Runs), duration(x.TotalDurationMS), states(x.States))
	}
	_ = t.flush()
	if len(m.Checkpoints) == 0 {
		return
	}
	a.printf("\n")
	t = newTable(a.stdout, "TASK", "CHECKPOINT", "ATTEMPTS", "COMMITTED", "REWOUND", "INTERRUPTED", "ABANDONED")
	for _, task := range slices.Sorted(maps.Keys(m.Checkpoints)) {
		for _, cp := range slices.Sorted(maps.Keys(m.Checkpoints[task])) {
			x := m.Checkpoints[task][cp]
			t.row(task, cp, fmt.Sprint(x.Started), fmt.Sprint(x.Committed), fmt.Sprint(x.Rewound), fmt.Sprint(x.Interrupted), fmt.Sprint(x.Abandoned))
		}
	}
	_ = t.flush()
	a.printf("\n")
	t = newTable(a.stdout, "CRITERION", "PASS", "FAIL", "SKIPPED", "ANTI PASS", "ANTI FAIL")
	for _, kind := range slices.Sorted(maps.Keys(m.Verifier)) {
		x := m.Verifier[kind]
		t.row(kind, fmt.Sprint(x.Criteria.Pass), fmt.Sprint(x.Criteria.Fail), fmt.Sprint(x.Criteria.Skipped),
			fmt.Sprint(x.AntiCriteria.Pass), fmt.Sprint(x.AntiCriteria.Fail))
	}
	_ = t.flush()
}

// bucketBound is the upper bound of the histogram bucket that holds the
// q quantile of the attempts, "<=1.0s" say, or ">10m" past the last bound.
func bucketBound(x projector.ActivityTypeMetrics, q float64) string {
	rank := int64(math.Ceil(q * float64(x.Count)))
	for _, b := range x.Buckets {
		if b.Count >= rank {
			return "<=" + duration(b.LeMS)
		}
	}
	if len(x.Buckets) == 0 {
		return "-"
	}
	return ">" + duration(x.Buckets[len(x.Buckets)-1].LeMS)
}

func states(m map[string]int64) string {
	s := ""
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if s != "" {
			s += " "
		}
		s += fmt.Sprintf("%s=%d", k, m[k])
	}
	return s
}
