package projector_test

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
	"github.com/orbitrun/orbit/projector"
)

// agentHistory appends three runs that use agents: a review job whose loop,
// fan-out and parallel steps are retried, with API turns of two models,
// tool calls and denials and two CLI invocations; a ci job that retries its
// build and fails; and a second review run that is cancelled. It also
// appends events the metrics view must skip. It returns the sequence of the
// last event and the metrics the whole history folds to.
func (e *env) agentHistory() (uint64, *projector.Metrics) {
	e.t.Helper()
	review, ci, cancelled := runID(1), runID(2), runID(3)
	add := func(run, job, key, typ string, payload any) uint64 {
		return e.append(events.Event{Type: typ, RunID: run, Job: job, StepKey: key}, payload)
	}
	turn := func(key, provider, model string, n int, in, out, cacheRead, cacheWrite int64) {
		add(review, "review", key, events.AgentTurn, events.AgentTurnData{Attempt: 1, Turn: n, Provider: provider, Model: model,
			StopReason: "tool_use", Usage: events.TokenUsage{InputTokens: in, OutputTokens: out, CacheReadTokens: cacheRead, CacheWriteTokens: cacheWrite}})
	}
	tool := func(key, name, errText string) {
		add(review, "review", key, events.ToolCalled, events.ToolCalledData{Attempt: 1, Turn: 1, ToolUseID: "tu-" + name,
			Name: name, InputDigest: "sha256-00", DurationMS: 5, Error: errText})
	}
	deny := func(key, name string) {
		add(review, "review", key, events.ToolDenied, events.ToolDeniedData{Attempt: 1, Turn: 2, ToolUseID: "tu-" + name,
			Name: name, Reason: "outside the allowlist", OnDenial: "continue"})
	}
	finish := func(run, job, key, state string, attempt int, ms int64) {
		add(run, job, key, events.StepFinished, events.StepFinishedData{Attempt: attempt, State: state, DurationMS: ms})
	}
	start := func(run, job, key, activityType string, attempt int) {
		add(run, job, key, events.StepStarted, events.StepStartedData{Attempt: attempt, ActivityType: activityType})
	}

	add(review, "review", "", events.RunRequested, events.RunRequestedData{JobName: "review"})
	add(review, "review", "", events.RunStarted, events.RunStartedData{Engine: "engine-a"})
	add(review, "review", "plan", events.StepStarted, events.StepStartedData{Attempt: 1, ActivityType: "agent_loop"})
	turn("plan", "replay", "replay-fixture", 1, 100, 20, 0, 0)
	tool("plan", "read_file", "")
	tool("plan", "read_file", "no such file")
	turn("plan", "replay", "replay-fixture", 2, 150, 30, 0, 0)
	turn("plan", "replay", "", 3, 7, 1, 0, 0)
	finish(review, "review", "plan", events.StateSuccess, 1, 1200)

	// A loop of two iterations, the first review failing.
	start(review, "review", "review_fix", events.TypeLoop, 1)
	start(review, "review", "review_fix/1/review", "agent_loop", 1)
	turn("review_fix/1/review", "anthropic", "claude-sonnet-4-5", 1, 1000, 200, 800, 100)
	tool("review_fix/1/review", "bash", "exit status 1")
	deny("review_fix/1/review", "bash")
	finish(review, "review", "review_fix/1/review", events.StateFailed, 1, 300)
	start(review, "review", "review_fix/2/review", "agent_loop", 1)
	turn("review_fix/2/review", "anthropic", "claude-sonnet-4-5", 1, 1100, 250, 900, 0)
	tool("review_fix/2/review", "bash", "")
	tool("review_fix/2/review", "edit_file", "")
	deny("review_fix/2/review", "write_file")
	finish(review, "review", "review_fix/2/review", events.StateSuccess, 1, 500)
	finish(review, "review", "review_fix", events.StateSuccess, 1, 2000)

	// A fan-out whose second item fails, retried as a whole; the
	// retry's items record no start and are in no histogram.
	start(review, "review", "fan", events.TypeFanOut, 1)
	start(review, "review", "fan/1", "shell", 1)
	start(review, "review", "fan/2", "shell", 1)
	finish(review, "review", "fan/1", events.StateSuccess, 1, 100)
	finish(review, "review", "fan/2", events.StateFailed, 1, 50)
	finish(review, "review", "fan", events.StateFailed, 1, 160)
	start(review, "review", "fan", events.TypeFanOut, 2)
	finish(review, "review", "fan@2/1", events.StateSuccess, 1, 90)
	finish(review, "review", "fan@2/2", events.StateSuccess, 1, 70)
	finish(review, "review", "fan", events.StateSuccess, 2, 170)

	// A parallel step retried, its lint branch failing, then timing out.
	finish(review, "review", "checks/lint", events.StateFailed, 1, 10)
	start(review, "review", "checks/cli", "agent_loop", 1)
	add(review, "review", "checks/cli", events.CLIInvocationFinished, events.CLIInvocationFinishedData{Attempt: 1,
		Executor: "claude_code", DurationMS: 3900, Model: "claude-sonnet-4-5", CostUSD: 0.0125})
	finish(review, "review", "checks/cli", events.StateSuccess, 1, 4000)
	finish(review, "review", "checks@2/lint", events.StateTimeout, 1, 900)
	add(review, "review", "checks@2/cli", events.CLIInvocationFinished, events.CLIInvocationFinishedData{Attempt: 1,
		Executor: "claude_code", DurationMS: 3000, Model: "claude-sonnet-4-5",
		Usage: events.TokenUsage{InputTokens: 5000, OutputTokens: 700, CacheReadTokens: 4000}, CostUSD: 0.0421})
	finish(review, "review", "checks@2/cli", events.StateSuccess, 1, 3100)
	add(review, "review", "second_opinion", events.CLIInvocationFinished, events.CLIInvocationFinishedData{Attempt: 1,
		Executor: "codex", ExitCode: 1, DurationMS: 800, Usage: events.TokenUsage{InputTokens: 300, OutputTokens: 40}})
	finish(review, "review", "second_opinion", events.StateFailed, 1, 820)
	add(review, "review", "", events.RunFinished, events.RunFinishedData{State: events.StateSuccess, DurationMS: 9000})

	add(ci, "ci", "", events.RunRequested, events.RunRequestedData{JobName: "ci"})
	start(ci, "ci", "build", "shell", 1)
	finish(ci, "ci", "build", events.StateFailed, 1, 1500)
	start(ci, "ci", "build", "shell", 2)
	finish(ci, "ci", "build", events.StateSuccess, 2, 900)
	// A start that never finishes is in no histogram.
	start(ci, "ci", "deploy", "shell", 1)
	// A start that records no activity type counts under <none>.
	start(ci, "ci", "notify", "", 1)
	finish(ci, "ci", "notify", events.StateSuccess, 1, 700000)
	finish(ci, "ci", "test", events.StateFailed, 1, 2500)
	add(ci, "ci", "", events.RunFinished, events.RunFinishedData{State: events.StateFailed, DurationMS: 5200})

	add(cancelled, "review", "", events.RunRequested, events.RunRequestedData{JobName: "review"})
	add(cancelled, "review", "", events.RunFinished, events.RunFinishedData{State: events.StateCancelled, DurationMS: 40})

	// Skipped: a step.finished without a step key, and a run.finished
	// whose state is not terminal.
	add(ci, "ci", "", events.StepFinished, events.StepFinishedData{Attempt: 1, State: events.StateSuccess, DurationMS: 1})
	last := add(ci, "ci", "", events.RunFinished, events.RunFinishedData{State: events.StateRunning, DurationMS: 1})

	return last, &projector.Metrics{
		Models: map[string]projector.ModelMetrics{
			"replay-fixture": {Turns: 2, Providers: map[string]int64{"replay": 2},
				Usage: events.TokenUsage{InputTokens: 250, OutputTokens: 50}},
			"<replay>": {Turns: 1, Providers: map[string]int64{"replay": 1},
				Usage: events.TokenUsage{InputTokens: 7, OutputTokens: 1}},
			"claude-sonnet-4-5": {Turns: 2, Providers: map[string]int64{"anthropic": 2},
				Invocations: 2, Executors: map[string]int64{"claude_code": 2},
				Usage:       events.TokenUsage{InputTokens: 7100, OutputTokens: 1150, CacheReadTokens: 5700, CacheWriteTokens: 100},
				CostNanoUSD: 54_600_000},
			"<codex>": {Invocations: 1, Executors: map[string]int64{"codex": 1},
				Usage: events.TokenUsage{InputTokens: 300, OutputTokens: 40}},
		},
		Tools: map[string]projector.ToolMetrics{
			"read_file":  {Calls: 2, Errors: 1},
			"bash":       {Calls: 2, Errors: 1, Denials: 1},
			"edit_file":  {Calls: 1},
			"write_file": {Denials: 1},
		},
		Steps: map[string]map[string]projector.StepMetrics{
			"review": {
				"plan":           {Count: 1, TotalDurationMS: 1200, MaxDurationMS: 1200, States: map[string]int64{"success": 1}},
				"review":         {Count: 2, TotalDurationMS: 800, MaxDurationMS: 500, States: map[string]int64{"failed": 1, "success": 1}},
				"review_fix":     {Count: 1, TotalDurationMS: 2000, MaxDurationMS: 2000, States: map[string]int64{"success": 1}},
				"fan":            {Count: 2, TotalDurationMS: 330, MaxDurationMS: 170, States: map[string]int64{"failed": 1, "success": 1}},
				"fan/*":          {Count: 4, TotalDurationMS: 310, MaxDurationMS: 100, States: map[string]int64{"failed": 1, "success": 3}},
				"lint":           {Count: 2, TotalDurationMS: 910, MaxDurationMS: 900, States: map[string]int64{"failed": 1, "timeout": 1}},
				"cli":            {Count: 2, TotalDurationMS: 7100, MaxDurationMS: 4000, States: map[string]int64{"success": 2}},
				"second_opinion": {Count: 1, TotalDurationMS: 820, MaxDurationMS: 820, States: map[string]int64{"failed": 1}},
			},
			"ci": {
				"build":  {Count: 2, TotalDurationMS: 2400, MaxDurationMS: 1500, States: map[string]int64{"failed": 1, "success": 1}},
				"test":   {Count: 1, TotalDurationMS: 2500, MaxDurationMS: 2500, States: map[string]int64{"failed": 1}},
				"notify": {Count: 1, TotalDurationMS: 700000, MaxDurationMS: 700000, States: map[string]int64{"success": 1}},
			},
		},
		ActivityTypes: map[string]projector.ActivityTypeMetrics{
			// plan 1200, review 300 and 500, checks/cli 4000.
			"agent_loop": {Count: 4, TotalDurationMS: 6000, States: map[string]int64{"failed": 1, "success": 3},
				Buckets: buckets(map[int64]int64{500: 2, 1000: 2, 2500: 3, 5000: 4})},
			"loop": {Count: 1, TotalDurationMS: 2000, States: map[string]int64{"success": 1},
				Buckets: buckets(map[int64]int64{2500: 1})},
			// fan 160 and 170.
			"fan_out": {Count: 2, TotalDurationMS: 330, States: map[string]int64{"failed": 1, "success": 1},
				Buckets: buckets(map[int64]int64{250: 2})},
			// fan/1 100, fan/2 50, build 1500 and 900.
			"shell": {Count: 4, TotalDurationMS: 2550, States: map[string]int64{"failed": 2, "success": 2},
				Buckets: buckets(map[int64]int64{50: 1, 100: 2, 1000: 3, 2500: 4})},
			// Beyond the last bound: only in the count.
			"<none>": {Count: 1, TotalDurationMS: 700000, States: map[string]int64{"success": 1},
				Buckets: buckets(nil)},
		},
		Jobs: map[string]projector.JobMetrics{
			"review": {Runs: 2, States: map[string]int64{"success": 1, "cancelled": 1}, TotalDurationMS: 9040},
			"ci":     {Runs: 1, States: map[string]int64{"failed": 1}, TotalDurationMS: 5200},
		},
		Checkpoints: map[string]map[string]projector.CheckpointMetrics{},
		Verifier:    map[string]projector.VerifierMetrics{},
		Tasks:       map[string]projector.TaskMetrics{},
	}
}

func TestMetricsViewCountsAgentsStepsAndRuns(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	last, want := e.agentHistory()
	p := e.running(projector.Config{}, last)

	got, err := p.Metrics(e.ctx)
	require.NoError(t, err)
	assert.Equal(t, want, got)

	report, err := p.Replay(e.ctx, true)
	require.NoError(t, err)
	assert.Zero(t, report.TotalDifferences, "%+v", report.Differences)
	assert.Equal(t, last, report.Applied)

	// The next events change only the records they count.
	next := e.append(events.Event{Type: events.ToolCalled, RunID: runID(1), Job: "review", StepKey: "plan"},
		events.ToolCalledData{Attempt: 1, Name: "read_file"})
	require.NoError(t, p.WaitFor(e.ctx, next))
	got, err = p.Metrics(e.ctx)
	require.NoError(t, err)
	want.Tools["read_file"] = projector.ToolMetrics{Calls: 3, Errors: 1}
	assert.Equal(t, want, got)
}

func TestMetricsOfNoEventsAreEmpty(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p := e.open(projector.Config{})
	got, err := p.Metrics(e.ctx)
	require.NoError(t, err)
	assert.Equal(t, &projector.Metrics{
		Models: map[string]projector.ModelMetrics{},
		Tools:  map[string]projector.ToolMetrics{},
		Steps:  map[string]map[string]projector.StepMetrics{},
		Jobs:   map[string]projector.JobMetrics{},

		ActivityTypes: map[string]projector.ActivityTypeMetrics{},

		Checkpoints: map[string]map[string]projector.CheckpointMetrics{},
		Verifier:    map[string]projector.VerifierMetrics{},
		Tasks:       map[string]projector.TaskMetrics{},
	}, got)
}

// The metrics, like every view, must not depend on how the events were cut
// into batches.
func TestMetricsDoNotDependOnBatchSize(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.history(runID(10), runID(11))
	last, want := e.agentHistory()
	dumps := map[int]map[string]map[string]string{}
	for _, size := range []int{1, 256} {
		path := filepath.Join(e.dir, fmt.Sprintf("batch-%d", size), "views.db")
		p := e.open(projector.Config{Path: path, BatchSize: size})
		stop := e.start(p)
		require.NoError(t, p.WaitFor(e.ctx, last))
		got, err := p.Metrics(e.ctx)
		require.NoError(t, err)
		assert.Equal(t, want.Models, got.Models, "batch size %d", size)
		require.NoError(t, stop())
		require.NoError(t, p.Close())
		dumps[size] = testkit.DumpBolt(t, path)
	}
	require.NotEmpty(t, dumps[1]["metrics"])
	var started []string
	for key := range dumps[1]["metrics"] {
		if strings.HasPrefix(key, "started/") {
			started = append(started, key)
		}
	}
	assert.Equal(t, []string{"started/" + runID(2) + "\x00deploy\x001"}, started,
		"the view keeps the start of an attempt only until it finishes")
	assert.Equal(t, dumps[1], dumps[256], "files built with batch sizes 1 and 256")
	assert.Equal(t, e.rebuild(last), dumps[1], "a live file and a rebuild")
}

func TestMetricsAreCountedOnceAcrossACrashBeforeCommit(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	last, want := e.agentHistory()

	e.crashBeforeCommitPast(20)

	// The engine restarts: the lost batch is counted once, from the log.
	p := e.running(projector.Config{BatchSize: 4}, last)
	got, err := p.Metrics(e.ctx)
	require.NoError(t, err)
	assert.Equal(t, want, got)
	require.NoError(t, p.Close())
	assert.Equal(t, e.rebuild(last), testkit.DumpBolt(t, e.path))
}

// metricsOfAnOldFile runs the views over the agent history until they
// have applied it, then closes them and lets old write into the file what
// an older format left. It returns the history's last sequence and its
// metrics.
func (e *env) metricsOfAnOldFile(old func(p *projector.Projector, want *projector.Metrics)) (uint64, *projector.Metrics) {
	e.t.Helper()
	last, want := e.agentHistory()
	p := e.open(projector.Config{})
	stop := e.start(p)
	require.NoError(e.t, p.WaitFor(e.ctx, last))
	require.NoError(e.t, stop())
	old(p, want)
	require.NoError(e.t, p.Close())
	return last, want
}

// checkMetricsRebuilt opens the views again and checks that the metrics
// view is rebuilt from the log, its log saying why, and counts want.
func (e *env) checkMetricsRebuilt(last uint64, want *projector.Metrics, why string) {
	e.t.Helper()
	var logs testkit.SyncBuffer
	p := e.open(projector.Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	e.start(p)
	require.NoError(e.t, p.WaitFor(e.ctx, last))
	got, err := p.Metrics(e.ctx)
	require.NoError(e.t, err)
	assert.Equal(e.t, want, got)
	assert.Contains(e.t, logs.String(), why)
}

// A file written before the metrics view existed records no metrics
// format: it is rebuilt, and the metrics count the whole log.
func TestAFileWithoutTheMetricsViewIsRebuilt(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	last, want := e.metricsOfAnOldFile(func(p *projector.Projector, want *projector.Metrics) {
		// What a file of the previous format looks like, as far as the
		// metrics go: no format recorded, nothing counted.
		require.NoError(t, projector.PutRaw(p, "meta", "version:metrics", ""))
		for model := range want.Models {
			require.NoError(t, projector.PutRaw(p, "metrics", "model/"+model, ""))
		}
	})
	e.checkMetricsRebuilt(last, want, "view metrics is new")
}

func TestMetricsReportADamagedRecord(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	last, want := e.agentHistory()
	p := e.running(projector.Config{}, last)

	require.NoError(t, projector.PutRaw(p, "metrics", "stray", "{}"))
	_, err := p.Metrics(e.ctx)
	assert.ErrorContains(t, err, `metrics "stray"`)

	report, err := p.Replay(e.ctx, false)
	require.NoError(t, err)
	assert.Equal(t, 1, report.TotalDifferences)
	got, err := p.Metrics(e.ctx)
	require.NoError(t, err)
	assert.Equal(t, want, got)
}

// buckets returns the cumulative buckets of a histogram from the counts at
// the bounds where they change: each bound's count holds until the next
// one given.
func buckets(changes map[int64]int64) []projector.DurationBucket {
	var b []projector.DurationBucket
	n := int64(0)
	for _, le := range projector.StepDurationBucketsMS {
		if c, ok := changes[le]; ok {
			n = c
		}
		b = append(b, projector.DurationBucket{LeMS: le, Count: n})
	}
	return b
}

// A file of metrics format 3 has neither the histograms by activity type
// nor the cost per model: it is rebuilt from the log, which fills them.
func TestAMetricsFileOfFormat3IsRebuilt(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	last, want := e.metricsOfAnOldFile(func(p *projector.Projector, want *projector.Metrics) {
		// What format 3 wrote: the same counters but for these.
		require.NoError(t, projector.PutRaw(p, "meta", "version:metrics", "3"))
		for typ := range want.ActivityTypes {
			require.NoError(t, projector.PutRaw(p, "metrics", "type/"+typ, ""))
		}
		require.NoError(t, projector.PutRaw(p, "metrics", "started/"+runID(2)+"\x00deploy\x001", ""))
		require.NoError(t, projector.PutRaw(p, "metrics", "model/claude-sonnet-4-5", `{"turns":2,"providers":{"anthropic":2},"invocations":2,"executors":{"claude_code":2},"usage":{"input_tokens":7100,"output_tokens":1150,"cache_read_tokens":5700,"cache_write_tokens":100}}`))
	})
	e.checkMetricsRebuilt(last, want, "view metrics changed format from 3 to 4")
}
