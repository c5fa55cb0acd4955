package projector

import (
	"errors"
	"log/slog"
	"strings"

	bolt "go.etcd.io/bbolt"

	"github.com/orbitrun/orbit/events"
)

// Metrics is everything the metrics view counts (DESIGN §4), as of the last
// committed batch. Maps are keyed by name; encoded as JSON their keys sort,
// so equal metrics print equal.
//
// The counts are counts of events as the log holds them: the log's
// deduplication of event ids is what keeps one decision from being counted
// twice.
type Metrics struct {
	// Models is token usage by model. An event that names no model
	// counts under what ran it in angle brackets, which no model name
	// looks like: "<claude_code>" for a CLI invocation by that executor,
	// "<replay>" for a turn of that provider.
	Models map[string]ModelMetrics `json:"models"`
	// Tools is agent tool calls and denials by tool name.
	Tools map[string]ToolMetrics `json:"tools"`
	// Steps is step durations by job, then by step id: every instance of
	// a step (loop iterations, retries of the structural step around it)
	// counts under the step's id, and the items of fan-out <id> under
	// "<id>/*", apart from the fan-out's own.
	Steps map[string]map[string]StepMetrics `json:"steps"`
	// ActivityTypes is the duration histograms of finished step attempts
	// by the activity type their step.started recorded.
	ActivityTypes map[string]ActivityTypeMetrics `json:"activity_types"`
	// Jobs is finished runs by job.
	Jobs map[string]JobMetrics `json:"jobs"`

	// Checkpoints is Groundhog attempts by task, then by checkpoint.
	Checkpoints map[string]map[string]CheckpointMetrics `json:"checkpoints"`
	// Verifier is the verifier's criterion results by criterion kind.
	Verifier map[string]VerifierMetrics `json:"verifier"`
	// Tasks is Groundhog rewinds and abandons by task.
	Tasks map[string]TaskMetrics `json:"tasks"`
}

// ModelMetrics is the token usage of one model.
type ModelMetrics struct {
	// Turns counts agent.turn and groundhog.agent.turn events; Providers
	// splits them by provider.
	Turns     int64            `json:"turns,omitempty"`
	Providers map[string]int64 `json:"providers,omitempty"`
	// Invocations counts cli.invocation.finished events; Executors splits
	// them by CLI executor.
	Invocations int64            `json:"invocations,omitempty"`
	Executors   map[string]int64 `json:"executors,omitempty"`
	// Usage sums the tokens of both.
	Usage events.TokenUsage `json:"usage"`
	// CostNanoUSD sums the cost the CLI invocations report (Claude Code's
	// total_cost_usd) in billionths of a dollar, each rounded to the
	// nearest: integers, so that the sum is exact whatever the order.
	CostNanoUSD int64 `json:"cost_nano_usd,omitempty"`
}

// CostUSD is the model's cost in dollars.
func (m ModelMetrics) CostUSD() float64 { return float64(m.CostNanoUSD) / 1e9 }

// ToolMetrics counts the calls of one agent tool.
type ToolMetrics struct {
	// Calls counts tool.called and groundhog.tool.called events, Errors
	// those of them that carry an error, Denials the tool.denied and
	// groundhog.tool.denied events (calls refused, not run).
	Calls   int64 `json:"calls,omitempty"`
	Errors  int64 `json:"errors,omitempty"`
	Denials int64 `json:"denials,omitempty"`
}

// StepMetrics is the durations of one step of one job: one count per
// step.finished event, that is per attempt of each step instance.
type StepMetrics struct {
	Count           int64            `json:"count"`
	TotalDurationMS int64            `json:"total_duration_ms"`
	MaxDurationMS   int64            `json:"max_duration_ms"`
	States          map[string]int64 `json:"states,omitempty"`
}

// JobMetrics is the finished runs of one job.
type JobMetrics struct {
	Runs int64 `json:"runs"`
	// States counts the runs by terminal state.
	States          map[string]int64 `json:"states,omitempty"`
	TotalDurationMS int64            `json:"total_duration_ms"`
}

// The metrics view keeps one bbolt key per counter group, so that an event
// re-encodes the one small record it changes. A key is the group's prefix
// and the group's own key:
//
//	model/<model>            ModelMetrics
//	tool/<tool>              ToolMetrics
//	step/<job>\x00<step id>  StepMetrics
//	job/<job>                JobMetrics
//	type/<activity type>     ActivityTypeMetrics
//	started/<run>\x00<step key>\x00<attempt>  startedStep, until the attempt finishes
//	exhausted/<run>          exhaustedRun, while the run's last end is budget_exhausted
//
//	checkpoint/<task>\x00<checkpoint>  CheckpointMetrics
//	verifier/<criterion kind>          VerifierMetrics
//	task/<task>                        TaskMetrics
//
// Prefixes end with "/"; a key with two parts separates them with NUL, as
// the runs view's indexes do, so neither part needs escaping.
var bucketMetrics = []byte("metrics")

const (
	prefixModel = "model/"
	prefixTool  = "tool/"
	prefixStep  = "step/"
	prefixJob   = "job/"

	prefixActivityType = "type/"
	prefixStarted      = "started/"

	prefixCheckpoint = "checkpoint/"
	prefixVerifier   = "verifier/"
	prefixTask       = "task/"
)

func modelKey(model string) string         { return prefixModel + model }
func toolKey(name string) string           { return prefixTool + name }
func stepMetricsKey(job, id string) string { return prefixStep + job + "\x00" + id }
func jobMetricsKey(job string) string      { return prefixJob + job }

func checkpointMetricsKey(task, checkpoint string) string {
	return prefixCheckpoint + task + "\x00" + checkpoint
}
func verifierKey(kind string) string    { return prefixVerifier + kind }
func taskMetricsKey(task string) string { return prefixTask + task }

// metricsGroups reads the records of each key group into a Metrics: add
// decodes the record stored under a key, whose group prefix is already cut
// off, and adds it. A group the table does not know is an error: the view
// owns its bucket, and an older file with fewer groups is rebuilt, not read.
var metricsGroups = []struct {
	prefix string
	add    func(m *Metrics, key string, raw []byte) error
	// canonical checks that a record is stored exactly as the view
	// encodes it (see recordChecks).
	canonical func(raw []byte) error
}{
	{prefixModel, func(m *Metrics, model string, raw []byte) error {
		return addRecord(m.Models, model, raw)
	}, canonicalAs[ModelMetrics]},
	{prefixTool, func(m *Metrics, tool string, raw []byte) error {
		return addRecord(m.Tools, tool, raw)
	}, canonicalAs[ToolMetrics]},
	{prefixStep, func(m *Metrics, key string, raw []byte) error {
		job, id, ok := strings.Cut(key, "\x00")
		if !ok {
			return errors.New("no step id in the key")
		}
		if m.Steps[job] == nil {
			m.Steps[job] = map[string]StepMetrics{}
		}
		return addRecord(m.Steps[job], id, raw)
	}, canonicalAs[StepMetrics]},
	{prefixJob, func(m *Metrics, job string, raw []byte) error {
		return addRecord(m.Jobs, job, raw)
	}, canonicalAs[JobMetrics]},
	{prefixActivityType, func(m *Metrics, typ string, raw []byte) error {
		return addRecord(m.ActivityTypes, typ, raw)
	}, canonicalAs[ActivityTypeMetrics]},
	// A started attempt is the view's own bookkeeping, not a metric.
	{prefixStarted, func(_ *Metrics, _ string, raw []byte) error {
		var s startedStep
		return unmarshal(raw, &s)
	}, canonicalAs[startedStep]},
	// So is the end of a run its budget stopped (see metrics_resume.go).
	{prefixExhausted, func(_ *Metrics, _ string, raw []byte) error {
		var x exhaustedRun
		return unmarshal(raw, &x)
	}, canonicalAs[exhaustedRun]},
	{prefixCheckpoint, func(m *Metrics, key string, raw []byte) error {
		task, checkpoint, ok := strings.Cut(key, "\x00")
		if !ok {
			return errors.New("no checkpoint in the key")
		}
		if m.Checkpoints[task] == nil {
			m.Checkpoints[task] = map[string]CheckpointMetrics{}
		}
		return addRecord(m.Checkpoints[task], checkpoint, raw)
	}, canonicalAs[CheckpointMetrics]},
	{prefixVerifier, func(m *Metrics, kind string, raw []byte) error {
		return addRecord(m.Verifier, kind, raw)
	}, canonicalAs[VerifierMetrics]},
	{prefixTask, func(m *Metrics, task string, raw []byte) error {
		return addRecord(m.Tasks, task, raw)
	}, canonicalAs[TaskMetrics]},
}

func canonicalAs[T any](raw []byte) error {
	var v T
	return canonical(raw, &v)
}

func addRecord[T any](m map[string]T, key string, raw []byte) error {
	var v T
	if err := unmarshal(raw, &v); err != nil {
		return err
	}
	m[key] = v
	return nil
}

// metricsView folds agent, step, run and Groundhog events into counters.
type metricsView struct{}

func (metricsView) name() string { return "metrics" }

// version history: 1 tokens per model, tool calls, step durations, runs;
// 2 Groundhog attempts per checkpoint, verifier results per criterion
// kind, rewinds and abandons per task, and the turns and tool calls of
// Groundhog attempts in the models and tools; 3 the durations of fan-out
// items apart from the fan-out's own; 4 the duration histograms of step
// attempts by activity type, and the cost of CLI invocations per model.
func (metricsView) version() int      { return 4 }
func (metricsView) buckets() [][]byte { return [][]byte{bucketMetrics} }

func (metricsView) recordChecks() []recordCheck {
	return []recordCheck{{bucket: bucketMetrics, check: func(k, raw []byte) error {
		for _, g := range metricsGroups {
			if rest, ok := strings.CutPrefix(string(k), g.prefix); ok {
				if err := g.add(newMetrics(), rest, raw); err != nil {
					return err
				}
				return g.canonical(raw)
			}
		}
		return errors.New("no metrics group has this key")
	}}}
}

func (metricsView) begin(tx *bolt.Tx, _ *slog.Logger) (viewBatch, error) {
	b := tx.Bucket(bucketMetrics)
	batch := &metricsBatch{b: b, records: map[string]any{}}
	return folding[*metricsBatch]{batch, metricsFolds}, nil
}
