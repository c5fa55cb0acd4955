package executor_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/executor"
	"github.com/orbitrun/orbit/internal/runrig"
	"github.com/orbitrun/orbit/internal/testkit"
)

// liveRuns lists the runs requested and not finished, a run whose budget
// was raised after its last run.finished counted live again: what the runs
// view gives an engine's orchestrator, read here from the log.
func liveRuns(ctx context.Context, log *events.Log) ([]string, error) {
	evs, err := log.Read(ctx, events.FollowOptions{Filters: []string{
		events.TypeFilter(events.AggregateRun, events.RunRequested),
		events.TypeFilter(events.AggregateRun, events.RunFinished),
		events.TypeFilter(events.AggregateRun, events.RunBudgetRaised),
	}})
	if err != nil {
		return nil, err
	}
	var ids []string
	live := map[string]bool{}
	for _, ev := range evs {
		if ev.Type == events.RunRequested {
			ids = append(ids, ev.RunID)
		}
		live[ev.RunID] = ev.Type != events.RunFinished
	}
	var out []string
	for _, id := range ids {
		if live[id] {
			out = append(out, id)
		}
	}
	return out, nil
}

// TestARaisedRunIsResumedOnceOnACluster: two engines on one cluster both
// see a run's budget raised; one of them resumes it. The log holds one
// run.resumed, one attempt of the re-run step after the raise and one
// run.finished after it.
func TestARaisedRunIsResumedOnceOnACluster(t *testing.T) {
	t.Parallel()
	c := testkit.StartCluster(t, filepath.Join(t.TempDir(), "creds"))
	e1 := startSharedWith(t, c, "e1", liveRuns)
	startSharedWith(t, c, "e2", liveRuns)
	log := e1.log
	ctx := testkit.Context(t)
	job := resumeSlotJob(t, filepath.Join(t.TempDir(), "no-hold"))
	job.Spec.Steps[0].Activity.ExecutorSpec.Command = runrig.WriteScript(t, `sleep 2
printf '{"type":"result","subtype":"success","is_error":false,"result":"done","num_turns":1,"usage":{"input_tokens":400,"output_tokens":200}}\n'
`)
	job.Spec.Steps[1].Activity.ExecutorSpec.Command = job.Spec.Steps[0].Activity.ExecutorSpec.Command

	run := runrig.Submit(t, log, job, nil)
	require.Equal(t, events.StateBudgetExhausted, runrig.WaitFinished(t, log, run).State)
	// A read of the log may lag the feed that delivered the end.
	runrig.WaitFor(t, "the run's end in the log", func() bool { return runrig.Has(t, log, run, events.RunFinished, "") })
	raised, err := executor.ResumeRun(ctx, log, run, executor.Raise{MaxTokens: 5000}, "test")
	require.NoError(t, err)
	runrig.WaitFor(t, "the run to finish again", func() bool { return len(runrig.OfType(runrig.History(t, log, run), events.RunFinished)) == 2 })
	// Long enough for either engine to take over a run it thought orphaned.
	time.Sleep(4 * time.Second)

	var resumed, started, finished int
	for _, ev := range runrig.History(t, log, run) {
		if ev.Seq <= raised.Seq {
			continue
		}
		switch {
		case ev.Type == events.RunResumed:
			resumed++
		case ev.Type == events.StepStarted && ev.StepKey == "again":
			started++
		case ev.Type == events.RunFinished:
			finished++
		}
	}
	assert.Equal(t, 1, resumed, "run.resumed after the raise")
	assert.Equal(t, 1, started, "step.started of the re-run step after the raise")
	assert.Equal(t, 1, finished, "run.finished after the raise")
}
