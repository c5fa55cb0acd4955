package projector

import (
	"fmt"
	"math"
	"strings"

	bolt "go.etcd.io/bbolt"

	"github.com/orbitrun/orbit/events"
)

// metricsFolds maps each event type the metrics view counts to its fold;
// other types are skipped.
var metricsFolds = foldTable[*metricsBatch]{
	events.AgentTurn:             on((*metricsBatch).agentTurn),
	events.CLIInvocationFinished: on((*metricsBatch).cliInvocationFinished),
	events.ToolCalled:            on((*metricsBatch).toolCalled),
	events.ToolDenied:            on((*metricsBatch).toolDenied),
	events.StepStarted:           on((*metricsBatch).stepStarted),
	events.StepFinished:          on((*metricsBatch).stepFinished),
	events.RunFinished:           on((*metricsBatch).runFinished),
	events.RunBudgetRaised:       on((*metricsBatch).runBudgetRaised),

	events.GroundhogTurn:         on((*metricsBatch).groundhogTurn),
	events.GroundhogToolCalled:   on((*metricsBatch).groundhogToolCalled),
	events.GroundhogToolDenied:   on((*metricsBatch).groundhogToolDenied),
	events.GroundhogAttempt:      on((*metricsBatch).groundhogAttempt),
	events.GroundhogCommitted:    on((*metricsBatch).groundhogCommitted),
	events.GroundhogRewound:      on((*metricsBatch).groundhogRewound),
	events.GroundhogInterrupted:  on((*metricsBatch).groundhogInterrupted),
	events.GroundhogAbandoned:    on((*metricsBatch).groundhogAbandoned),
	events.GroundhogVerification: on((*metricsBatch).groundhogVerification),
}

// metricsBatch holds the records one transaction touches, decoded, by
// bbolt key, and writes each once in flush: a batch of a hundred turns of
// one model encodes its record once.
type metricsBatch struct {
	b       *bolt.Bucket
	records map[string]any // bbolt key → *ModelMetrics, *ToolMetrics, …; a nil *startedStep is a key to delete
}

// record returns the record under key, from the batch's cache, from the
// bucket, or new.
func record[T any](b *metricsBatch, key string) (*T, error) {
	if r, ok := b.records[key]; ok {
		return r.(*T), nil
	}
	r := new(T)
	if raw := b.b.Get([]byte(key)); raw != nil {
		if err := decodeStored(raw, r); err != nil {
			return nil, fmt.Errorf("stored metrics %q: %w", key, err)
		}
	}
	b.records[key] = r
	return r, nil
}

func (b *metricsBatch) agentTurn(ev events.Event, d *events.AgentTurnData) error {
	return b.countTurn(d)
}

// countTurn counts a model turn of an agent step or of a Groundhog
// attempt.
func (b *metricsBatch) countTurn(d *events.AgentTurnData) error {
	m, err := record[ModelMetrics](b, modelKey(modelName(d.Model, d.Provider)))
	if err != nil {
		return err
	}
	m.Turns++
	inc(&m.Providers, d.Provider)
	addUsage(&m.Usage, d.Usage)
	return nil
}

func (b *metricsBatch) cliInvocationFinished(ev events.Event, d *events.CLIInvocationFinishedData) error {
	m, err := record[ModelMetrics](b, modelKey(modelName(d.Model, d.Executor)))
	if err != nil {
		return err
	}
	m.Invocations++
	inc(&m.Executors, d.Executor)
	if !d.UsageInTurns {
		// Otherwise the invocation's turns counted its tokens already.
		addUsage(&m.Usage, d.Usage)
	}
	m.CostNanoUSD += int64(math.Round(d.CostUSD * 1e9))
	return nil
}

func (b *metricsBatch) toolCalled(ev events.Event, d *events.ToolCalledData) error {
	return b.countToolCall(d)
}

// countToolCall counts a tool call of an agent step or of a Groundhog
// attempt.
func (b *metricsBatch) countToolCall(d *events.ToolCalledData) error {
	t, err := record[ToolMetrics](b, toolKey(d.Name))
	if err != nil {
		return err
	}
	t.Calls++
	if d.Error != "" {
		t.Errors++
	}
	return nil
}

func (b *metricsBatch) toolDenied(ev events.Event, d *events.ToolDeniedData) error {
	return b.countDenial(d)
}

// countDenial counts a refused tool call of an agent step or of a
// Groundhog attempt.
func (b *metricsBatch) countDenial(d *events.ToolDeniedData) error {
	t, err := record[ToolMetrics](b, toolKey(d.Name))
	if err != nil {
		return err
	}
	t.Denials++
	return nil
}

func (b *metricsBatch) stepFinished(ev events.Event, d *events.StepFinishedData) error {
	if d.Started != nil {
		// A decided step's one event stands for its step.started too.
		if err := b.stepStarted(ev, d.Started); err != nil {
			return err
		}
	}
	s, err := record[StepMetrics](b, stepMetricsKey(ev.Job, stepMetricsName(ev.StepKey)))
	if err != nil {
		return err
	}
	s.Count++
	s.TotalDurationMS += d.DurationMS
	s.MaxDurationMS = max(s.MaxDurationMS, d.DurationMS)
	inc(&s.States, d.State)
	return b.countActivityType(ev, d)
}

// stepMetricsName is the name a step instance's durations count under: its
// step id, or "<id>/*" for an item of fan-out <id> (whose key ends in the
// item's number), so that the items' durations do not mix with the
// fan-out's own.
func stepMetricsName(key string) string {
	if i := strings.LastIndexByte(key, '/'); i >= 0 && isNumber(key[i+1:]) {
		return stepID(key) + "/*"
	}
	return stepID(key)
}

func (b *metricsBatch) runFinished(ev events.Event, d *events.RunFinishedData) error {
	j, err := record[JobMetrics](b, jobMetricsKey(ev.Job))
	if err != nil {
		return err
	}
	counted, err := b.countedDuration(ev, d)
	if err != nil {
		return err
	}
	j.Runs++
	inc(&j.States, d.State)
	j.TotalDurationMS += max(d.DurationMS-counted, 0)
	return nil
}

// deleted reports whether r stands for a key to delete: a nil record of
// the view's own bookkeeping.
func deleted(r any) bool {
	switch r := r.(type) {
	case *startedStep:
		return r == nil
	case *exhaustedRun:
		return r == nil
	}
	return false
}

// flush writes every touched record once, in key order, and deletes the
// starts of the attempts that finished.
func (b *metricsBatch) flush() error {
	for _, key := range sortedKeys(b.records) {
		if deleted(b.records[key]) {
			if err := b.b.Delete([]byte(key)); err != nil {
				return err
			}
			continue
		}
		if err := putJSON(b.b, []byte(key), b.records[key]); err != nil {
			return err
		}
	}
	return nil
}

// modelName is the key of a model's usage: the model, or, when the event
// names none, what ran it in angle brackets.
func modelName(model, via string) string {
	if model != "" {
		return model
	}
	return "<" + via + ">"
}

func inc(m *map[string]int64, key string) {
	if *m == nil {
		*m = map[string]int64{}
	}
	(*m)[key]++
}

func addUsage(sum *events.TokenUsage, u events.TokenUsage) {
	sum.InputTokens += u.InputTokens
	sum.OutputTokens += u.OutputTokens
	sum.CacheReadTokens += u.CacheReadTokens
	sum.CacheWriteTokens += u.CacheWriteTokens
}
