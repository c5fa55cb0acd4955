package groundhog_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
)

// baselinePlan asks for greet.txt and that check.sh passes; the base's
// check.sh fails whatever the checkpoint does.
func baselinePlan(fixes bool) string {
	flag := ""
	if fixes {
		flag = ", fixes_baseline: true"
	}
	return `
checkpoints:
  - id: greet
    spec: Create greet.txt saying hello.
    success_criteria:
      - {kind: file_contains, path: greet.txt, pattern: hello}
      - {kind: command, command: "sh check.sh"` + flag + `}
`
}

// TestABaseThatFailsACheckHoldsTheCheckpoint: the attempt's work is fine
// but check.sh fails on the base too: the checkpoint holds as
// baseline_red, the attempt is rewound and spends nothing, the base is
// checked once (a second run holds at once, running neither an agent nor
// the check). With fixes_baseline: true the same failure is the
// attempt's, and the next attempt fixes check.sh and commits.
func TestABaseThatFailsACheckHoldsTheCheckpoint(t *testing.T) {
	t.Parallel()
	h := newHarness(t, map[string]string{"README.md": "# demo\n", "check.sh": "echo the base is broken; exit 1\n"}, baselinePlan(false))
	base := h.git("rev-parse", "main")
	fix := `{"content": [
	  {"kind": "tool_use", "name": "fs.write", "input": {"path": "check.sh", "content": "exit 0\n"}},
	  {"kind": "tool_use", "name": "fs.write", "input": {"path": "greet.txt", "content": "hello\n"}},
	  {"kind": "tool_use", "name": "orbit.groundhog.checkpoint_success", "input": {"summary": "Add greet.txt; mend check.sh"}}
	], "stop_reason": "tool_use"}`
	turns := fixture(writeTurn("greet.txt", "hello\n", "Add greet.txt"), fix)

	res, err := h.run("R1", spec("fs.write"), replay(t, turns))
	require.NoError(t, err)
	assert.Equal(t, events.GroundhogBaselineRed, res.State, res.Message)
	assert.Contains(t, res.Message, "fixes_baseline")
	assert.Equal(t, base, h.git("rev-parse", "main"), "nothing committed")
	assert.Equal(t, "main", h.git("branch", "--show-current"))
	assert.Empty(t, h.git("status", "--porcelain"), "the attempt's work is rewound")

	b := onlyEvent[events.GroundhogBaselineData](t, h, events.GroundhogBaseline)
	assert.Equal(t, base, b.BaseSHA)
	assert.Equal(t, []int{1}, b.Red)
	require.Len(t, b.Checks, 1)
	assert.Equal(t, "fail", b.Checks[0].Result.Outcome)
	assert.Contains(t, b.Checks[0].Result.Output, "the base is broken")
	require.Len(t, h.events(events.GroundhogInterrupted), 1, "the attempt is closed as an interruption: no attempt spent")

	last, err := h.log.LastSeq(h.ctx)
	require.NoError(t, err)
	require.NoError(t, h.proj.WaitFor(h.ctx, last))
	task, err := h.proj.Task(h.ctx, h.task)
	require.NoError(t, err)
	assert.Equal(t, events.TaskBlocked, task.Status)
	assert.Contains(t, task.StatusReason, "its base")

	// The same base: held at once, nothing run again.
	res, err = h.run("R2", spec("fs.write"), replay(t, turns))
	require.NoError(t, err)
	assert.Equal(t, events.GroundhogBaselineRed, res.State)
	assert.Len(t, h.events(events.GroundhogAttempt), 1, "no new attempt")
	assert.Len(t, h.events(events.GroundhogBaseline), 1, "the base is not checked again")

	// The checkpoint is there to fix check.sh: worked on as usual.
	plan := baselinePlan(true)
	_, err = h.log.Append(h.ctx, events.Event{Type: events.TaskPlanChanged, TaskID: h.task},
		events.TaskPlanChangedData{Plan: plan, PlanVersion: 2, PlanDigest: assets.PlanDigest([]byte(plan))})
	require.NoError(t, err)
	res, err = h.run("R3", spec("fs.write"), replay(t, turns))
	require.NoError(t, err)
	assert.Equal(t, events.GroundhogDone, res.State, res.Message)
	assert.Equal(t, "exit 0", h.git("show", "main:check.sh"))
	assert.Len(t, h.events(events.GroundhogBaseline), 1, "a fixes_baseline criterion is not run on the base")
	var spent []string
	for _, ev := range h.events(events.GroundhogAttemptFailed) {
		var d events.GroundhogAttemptFailedData
		require.NoError(t, ev.Decode(&d))
		spent = append(spent, d.Report.Source)
	}
	assert.Equal(t, []string{"baseline_red", "verifier"}, spent, "the first attempt of v2 failed as the agent's own")
	rep := h.verify()
	assert.True(t, rep.OK, "%+v", rep)
}

// TestACommandOfTheCheckpointsOwnFileIsNotRunOnTheBase: sh test.sh names a
// file the base lacks, so its failure is the attempt's, spent as usual.
func TestACommandOfTheCheckpointsOwnFileIsNotRunOnTheBase(t *testing.T) {
	t.Parallel()
	plan := `
checkpoints:
  - id: test
    spec: Add test.sh that passes.
    attempt_budget: 1
    success_criteria:
      - {kind: command, command: "sh test.sh"}
`
	h := newHarness(t, map[string]string{"README.md": "# demo\n"}, plan)
	res, err := h.run("R1", spec("fs.write"), replay(t, fixture(writeTurn("test.sh", "exit 3\n", "Add test.sh"))))
	require.NoError(t, err)
	assert.Equal(t, events.GroundhogBlocked, res.State, res.Message)
	b := onlyEvent[events.GroundhogBaselineData](t, h, events.GroundhogBaseline)
	assert.Empty(t, b.Red)
	assert.Equal(t, "skipped", b.Checks[0].Result.Outcome)
	assert.Contains(t, b.Checks[0].Result.Detail, "test.sh")
}
