package executor_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/agent"
	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/executor"
	"github.com/orbitrun/orbit/internal/runrig"
	"github.com/orbitrun/orbit/internal/testkit"
)

// resumeSlotJob is a job of max_active_runs 1 and a budget of 600 tokens
// whose two agent steps spend 600 each (a CLI agent printing a
// claude_json result), each waiting first while the file hold exists: a
// run ends budget_exhausted before its second step, and a raise lets it
// run that step.
func resumeSlotJob(t *testing.T, hold string) *assets.Job {
	t.Helper()
	script := runrig.WriteScript(t, `while [ -f '`+hold+`' ]; do sleep 0.05; done
printf '{"type":"result","subtype":"success","is_error":false,"result":"done","num_turns":1,"usage":{"input_tokens":400,"output_tokens":200}}\n'
`)
	job := runrig.CLIJob(t, script, agent.OutputClaudeJSON, 60)
	job.Name = "resume_slot"
	job.Spec.MaxActiveRuns = 1
	job.Spec.Budget = &assets.Budget{MaxTokens: 600}
	again := job.Spec.Steps[0]
	again.ID = "again"
	job.Spec.Steps = append(job.Spec.Steps, again)
	return job
}

// eventsOfRuns reads the log's events of the given run event types of
// runs ids, in log order.
func eventsOfRuns(t *testing.T, log *events.Log, ids []string, types ...string) []events.Event {
	t.Helper()
	var filters []string
	for _, typ := range types {
		filters = append(filters, events.TypeFilter(events.AggregateRun, typ))
	}
	evs, err := log.Read(testkit.Context(t), events.FollowOptions{Filters: filters})
	require.NoError(t, err)
	var mine []events.Event
	for _, ev := range evs {
		if slices.Contains(ids, ev.RunID) {
			mine = append(mine, ev)
		}
	}
	return mine
}

// runningAtOnce reads the log's run.started, run.resumed and run.finished
// of runs ids, in log order, and returns the most of them running at once
// and the sequence of each one's events of type typ.
func runningAtOnce(t *testing.T, log *events.Log, ids ...string) (int, map[string][]uint64) {
	t.Helper()
	running := map[string]bool{}
	seqs := map[string][]uint64{}
	most := 0
	for _, ev := range eventsOfRuns(t, log, ids, events.RunStarted, events.RunResumed, events.RunFinished) {
		running[ev.RunID] = ev.Type != events.RunFinished
		seqs[ev.RunID+" "+ev.Type] = append(seqs[ev.RunID+" "+ev.Type], ev.Seq)
		n := 0
		for _, r := range running {
			if r {
				n++
			}
		}
		most = max(most, n)
	}
	return most, seqs
}

// resumeWaitsForASlot: run A of a job at max_active_runs 1 ends
// budget_exhausted and gives its slot back; run B takes it and is held
// mid-step; A's budget is raised. A waits for B to end before it goes on,
// and then finishes.
func resumeWaitsForASlot(t *testing.T, log *events.Log) {
	t.Helper()
	ctx := testkit.Context(t)
	hold := filepath.Join(t.TempDir(), "hold")
	job := resumeSlotJob(t, hold)

	a := runrig.Submit(t, log, job, nil)
	require.Equal(t, events.StateBudgetExhausted, runrig.WaitFinished(t, log, a).State)

	require.NoError(t, os.WriteFile(hold, nil, 0o644))
	b := runrig.Submit(t, log, job, nil)
	runrig.WaitFor(t, "run B's first step to start", func() bool { return runrig.Has(t, log, b, events.StepStarted, "agent") })

	_, err := executor.ResumeRun(ctx, log, a, executor.Raise{MaxTokens: 5000}, "test")
	require.NoError(t, err)
	time.Sleep(time.Second)
	assert.False(t, runrig.Has(t, log, a, events.RunResumed, ""), "run A went on while run B held the only slot")
	assert.False(t, runrig.Has(t, log, a, events.StepStarted, "again"), "run A went on while run B held the only slot")

	require.NoError(t, os.Remove(hold))
	runrig.WaitFor(t, "run A to finish again", func() bool { return len(runrig.OfType(runrig.History(t, log, a), events.RunFinished)) == 2 })
	evs := runrig.History(t, log, a)
	var fin events.RunFinishedData
	require.NoError(t, runrig.OfType(evs, events.RunFinished)[1].Decode(&fin))
	assert.Equal(t, events.StateSuccess, fin.State, "%+v", fin.Error)
	require.Equal(t, events.StateBudgetExhausted, runrig.WaitFinished(t, log, b).State)

	most, seqs := runningAtOnce(t, log, a, b)
	assert.Equal(t, 1, most, "runs of the job running at once")
	require.Len(t, seqs[a+" "+events.RunResumed], 1)
	require.Len(t, seqs[b+" "+events.RunFinished], 1)
	assert.Greater(t, seqs[a+" "+events.RunResumed][0], seqs[b+" "+events.RunFinished][0],
		"run A went on after run B finished")
}

// TestAResumedRunWaitsForASlot: one engine on an embedded log.
func TestAResumedRunWaitsForASlot(t *testing.T) {
	t.Parallel()
	log := runrig.EngineLog(t)
	resumeWaitsForASlot(t, log)
}

// TestAResumedRunWaitsForASlotOfTheSharedQueue: two engines on a cluster,
// whose slots are shared: the resumed run takes its place at the back of
// the global queue.
func TestAResumedRunWaitsForASlotOfTheSharedQueue(t *testing.T) {
	t.Parallel()
	c := testkit.StartCluster(t, filepath.Join(t.TempDir(), "creds"))
	e1 := startShared(t, c, "e1")
	startShared(t, c, "e2")
	resumeWaitsForASlot(t, e1.log)
}
