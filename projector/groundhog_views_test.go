package projector_test

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
	"github.com/orbitrun/orbit/projector"
)

// groundhogTasks appends a run of job ci and the histories of tasks T-7
// and T-12, and returns the last sequence.
func (e *env) groundhogTasks() uint64 {
	e.t.Helper()
	e.history(runID(1), runID(2))
	e.groundhogHistory("T-7", runID(7))
	_, last := e.setbackHistory("T-12", runID(12), runID(13), runID(14))
	return last
}

// groundhogQueries returns what every Groundhog query answers about tasks
// T-7 and T-12.
func groundhogQueries(t *testing.T, e *env, p *projector.Projector) map[string]any {
	t.Helper()
	got := map[string]any{}
	tasks, err := p.Tasks(e.ctx)
	require.NoError(t, err)
	got["tasks"] = tasks
	for _, task := range []string{"T-7", "T-12"} {
		m, err := p.GroundhogMemory(e.ctx, task)
		require.NoError(t, err)
		got["memory "+task] = m
		r, err := p.GroundhogRun(e.ctx, task)
		require.NoError(t, err)
		got["run "+task] = r
	}
	m, err := p.Metrics(e.ctx)
	require.NoError(t, err)
	got["metrics"] = m
	return got
}

func TestGroundhogMetrics(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	last := e.groundhogTasks()
	p := e.running(projector.Config{}, last)

	got, err := p.Metrics(e.ctx)
	require.NoError(t, err)
	assert.Equal(t, map[string]map[string]projector.CheckpointMetrics{
		"T-7": {
			"cp-1": {Started: 1, Committed: 1},
			"cp-2": {Started: 2, Committed: 1, Rewound: 1},
		},
		"T-12": {"only": {Started: 2, Rewound: 2, Interrupted: 1, Abandoned: 1}},
	}, got.Checkpoints)
	assert.Equal(t, map[string]projector.VerifierMetrics{
		"command":     {Criteria: projector.OutcomeCounts{Pass: 3, Fail: 1, Skipped: 1}},
		"file_absent": {AntiCriteria: projector.OutcomeCounts{Pass: 3}},
	}, got.Verifier)
	assert.Equal(t, map[string]projector.TaskMetrics{
		"T-7":  {Rewinds: 1},
		"T-12": {Rewinds: 2, Abandons: 1},
	}, got.Tasks)
	// The turns and tool calls of attempts count with those of agent steps.
	assert.Equal(t, map[string]projector.ModelMetrics{
		"claude-sonnet-4-5": {Turns: 5, Providers: map[string]int64{"anthropic": 5},
			Usage: events.TokenUsage{InputTokens: 5008, OutputTokens: 400, CacheReadTokens: 4500}},
		"replay-fixture": {Turns: 1, Providers: map[string]int64{"replay": 1}},
	}, got.Models)
	assert.Equal(t, map[string]projector.ToolMetrics{
		"fs.read":    {Calls: 1},
		"fs.write":   {Calls: 1, Denials: 1},
		"shell.exec": {Calls: 1, Errors: 1},
	}, got.Tools)
}

// Every view must not depend on how events were cut into batches, and a
// replay must find nothing to correct.
func TestGroundhogViewsDoNotDependOnBatchSize(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	last := e.groundhogTasks()
	dumps := map[int]map[string]map[string]string{}
	answers := map[int]map[string]any{}
	for _, size := range []int{1, 256} {
		path := filepath.Join(e.dir, fmt.Sprintf("batch-%d", size), "views.db")
		p := e.open(projector.Config{Path: path, BatchSize: size})
		stop := e.start(p)
		require.NoError(t, p.WaitFor(e.ctx, last))
		answers[size] = groundhogQueries(t, e, p)

		report, err := p.Replay(e.ctx, true)
		require.NoError(t, err)
		assert.Zero(t, report.TotalDifferences, "batch size %d: %+v", size, report.Differences)
		assert.Equal(t, last, report.Applied)

		require.NoError(t, stop())
		require.NoError(t, p.Close())
		dumps[size] = testkit.DumpBolt(t, path)
	}
	for _, bucket := range []string{"tasks", "groundhog_memory", "groundhog_runs", "groundhog_attempts", "metrics"} {
		require.NotEmpty(t, dumps[1][bucket], bucket)
	}
	assert.Len(t, dumps[1]["groundhog_attempts"], 5, "one record per attempt")
	assert.Equal(t, dumps[1], dumps[256], "files built with batch sizes 1 and 256")
	assert.Equal(t, e.rebuild(last), dumps[1], "a live file and a rebuild")
	assert.Equal(t, answers[1], answers[256])
}

func TestGroundhogViewsAreAppliedOnceAcrossACrashBeforeCommit(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	last := e.groundhogTasks()
	want := groundhogQueries(t, e, e.viewsAt(last))

	// Crash in the middle of task T-7's day 2.
	e.crashBeforeCommitPast(21 + 20)

	// The engine restarts: the lost batch is applied once, from the log.
	p := e.running(projector.Config{BatchSize: 4}, last)
	assert.Equal(t, want, groundhogQueries(t, e, p))
	require.NoError(t, p.Close())
	assert.Equal(t, e.rebuild(last), testkit.DumpBolt(t, e.path))
}

// Events whose data do not make sense are skipped with a warning, and
// events of tasks that were never created are ignored; neither stops the
// projector.
func TestGroundhogEventsThatCannotApplyAreSkipped(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.forTask("T-1")
	a.add(events.TaskCreated, events.TaskCreatedData{Title: "t", PlanVersion: 1})
	a.add(events.TaskStatusChanged, events.TaskStatusChangedData{Status: "paused"})
	a.add(events.GroundhogAttempt, events.GroundhogAttemptData{Attempt: attempt("c", 1, 0)})
	a.add(events.GroundhogToolCalled, events.GroundhogToolCalledData{Attempt: attempt("", 1, 1)})
	a.add(events.GroundhogAbandoned, events.GroundhogAbandonedData{Attempts: 1})
	a.add(events.GroundhogVerification, events.GroundhogVerificationData{Attempt: attempt("c", 1, 1),
		Results: []events.CriterionResult{{Kind: "command", Outcome: "pass"}, {Kind: "command", Outcome: "maybe"}}})
	other := e.forTask("T-99")
	other.add(events.GroundhogRunStarted, events.GroundhogRunStartedData{RunID: "r", Checkpoints: []string{"c"}})
	other.add(events.GroundhogAttempt, events.GroundhogAttemptData{Attempt: attempt("c", 1, 1)})
	other.add(events.TaskStatusChanged, events.TaskStatusChangedData{Status: events.TaskDone})
	last := other.add(events.GroundhogCommitted, events.GroundhogCommittedData{Attempt: attempt("c", 1, 1), SHA: "s"})

	var logs testkit.SyncBuffer
	p := e.running(projector.Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))}, last)

	task, err := p.Task(e.ctx, "T-1")
	require.NoError(t, err)
	assert.Equal(t, events.TaskActive, task.Status)
	run, err := p.GroundhogRun(e.ctx, "T-1")
	require.NoError(t, err)
	// The audit record keeps the verification as recorded; the metrics
	// refuse its unknown outcome.
	require.Len(t, run.Checkpoints, 1)
	require.Len(t, run.Checkpoints[0].Attempts, 1)
	assert.Len(t, run.Checkpoints[0].Attempts[0].Verifications, 1)
	assert.Empty(t, run.Checkpoints[0].Attempts[0].ToolCalls)
	m, err := p.GroundhogMemory(e.ctx, "T-1")
	require.NoError(t, err)
	assert.Equal(t, &projector.GroundhogMemory{TaskID: "T-1", PlanVersion: 1}, m)
	metrics, err := p.Metrics(e.ctx)
	require.NoError(t, err)
	assert.Empty(t, metrics.Verifier)
	assert.Equal(t, map[string]map[string]projector.CheckpointMetrics{"T-99": {"c": {Started: 1, Committed: 1}}}, metrics.Checkpoints,
		"the metrics count events as the log holds them")

	for _, q := range []func() error{
		func() error { _, err := p.Task(e.ctx, "T-99"); return err },
		func() error { _, err := p.GroundhogMemory(e.ctx, "T-99"); return err },
		func() error { _, err := p.GroundhogRun(e.ctx, "T-99"); return err },
	} {
		assert.ErrorIs(t, q(), projector.ErrNotFound)
	}
	for _, s := range []string{"is not a task status", "names no attempt", "names no checkpoint", "is not a criterion outcome"} {
		assert.Contains(t, logs.String(), s)
	}
}
