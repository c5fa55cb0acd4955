package engine_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/engine"
	"github.com/orbitrun/orbit/projector"
)

// treeRun is a run whose steps have the given keys and activity types, in
// that order; steps are successful unless their key is in failed.
func treeRun(steps [][2]string, failed ...string) *projector.RunView {
	v := &projector.RunView{ID: "R", State: "success"}
	for i, s := range steps {
		state := "success"
		for _, f := range failed {
			if f == s[0] {
				state = "failed"
			}
		}
		v.Steps = append(v.Steps, projector.StepView{Key: s[0], ActivityType: s[1], State: state, Order: uint64(i + 1)})
	}
	return v
}

// rowKeys shows rows as step keys and "<prefix>: <n> <kind>" for groups.
func rowKeys(rows []engine.StepRow) []string {
	var out []string
	for _, r := range rows {
		if r.Step != nil {
			out = append(out, r.Step.Key)
		} else {
			out = append(out, fmt.Sprintf("%s: %d %s, %d steps", r.Group.Prefix, r.Group.Instances, r.Group.Kind, r.Group.Steps))
		}
	}
	return out
}

// TestPageStepsSummarisesBigLoopsAndFanOuts: a loop of 5,000 iterations is
// one summary row at the top level and pages of 50 iterations below it;
// few items are shown inline; a group inside an inline iteration is
// summarised there when it is big; a retried loop's "@2" prefix is a group
// of its own.
func TestPageStepsSummarisesBigLoopsAndFanOuts(t *testing.T) {
	t.Parallel()
	steps := [][2]string{{"build", "shell"}, {"spin", "loop"}}
	for i := 1; i <= 5000; i++ {
		steps = append(steps, [2]string{fmt.Sprintf("spin/%d/tick", i), "deterministic"}, [2]string{fmt.Sprintf("spin/%d/check", i), "shell"})
	}
	steps = append(steps, [2]string{"fan", "fan_out"})
	for _, i := range []int{3, 1, 2} { // items finish in any order
		steps = append(steps, [2]string{fmt.Sprintf("fan/%d", i), "shell"})
	}
	steps = append(steps, [2]string{"outer", "loop"})
	for i := 1; i <= 2; i++ {
		steps = append(steps, [2]string{fmt.Sprintf("outer/%d/inner", i), "fan_out"})
		for j := 1; j <= 20; j++ {
			steps = append(steps, [2]string{fmt.Sprintf("outer/%d/inner/%d", i, j), "shell"})
		}
	}
	steps = append(steps, [2]string{"again", "loop"}, [2]string{"again@2/1/x", "shell"}, [2]string{"checks/lint", "shell"})
	v := treeRun(steps, "spin/4999/check")

	top := engine.PageSteps(v, "", 0, 0)
	assert.Equal(t, []string{
		"build", "spin", "spin: 5000 iterations, 10000 steps",
		"fan", "fan/1", "fan/2", "fan/3",
		"outer", "outer/1/inner", "outer/1/inner: 20 items, 20 steps", "outer/2/inner", "outer/2/inner: 20 items, 20 steps",
		"again", "again@2/1/x", "checks/lint",
	}, rowKeys(top.Rows))
	assert.Equal(t, map[string]int{"success": 9999, "failed": 1}, top.Rows[2].Group.States)
	assert.Equal(t, len(v.Steps), top.Steps)
	assert.Empty(t, top.Run.Steps, "the run comes without its steps")
	require.Len(t, v.Steps, len(steps), "the view itself is left whole")

	first := engine.PageSteps(v, "spin", 0, 0)
	assert.Equal(t, engine.StepsPageMax, first.Limit)
	assert.Equal(t, 5000, first.Instances)
	assert.Equal(t, "iterations", first.Kind)
	require.Len(t, first.Rows, 2*engine.StepsPageMax)
	assert.Equal(t, "spin/1/tick", first.Rows[0].Step.Key)
	assert.Equal(t, "spin/50/check", first.Rows[99].Step.Key)

	last := engine.PageSteps(v, "spin", 4990, 1000)
	assert.Equal(t, engine.StepsPageMax, last.Limit, "a page is never longer than StepsPageMax")
	assert.Len(t, last.Rows, 20)
	assert.Equal(t, "spin/5000/check", last.Rows[19].Step.Key)
	assert.Empty(t, engine.PageSteps(v, "spin", 5000, 10).Rows, "past the end")

	inner := engine.PageSteps(v, "outer/2/inner", 15, 10)
	assert.Equal(t, "items", inner.Kind)
	assert.Equal(t, []string{"outer/2/inner/16", "outer/2/inner/17", "outer/2/inner/18", "outer/2/inner/19", "outer/2/inner/20"}, rowKeys(inner.Rows))

	retried := engine.PageSteps(v, "again@2", 0, 0)
	assert.Equal(t, "iterations", retried.Kind, "the loop of a retry's prefix")
	assert.Equal(t, []string{"again@2/1/x"}, rowKeys(retried.Rows))

	assert.Zero(t, engine.PageSteps(v, "build", 0, 0).Instances, "a step that is no group")
	assert.Zero(t, engine.PageSteps(v, "spi", 0, 0).Instances, "a prefix of a step id is none")
}

// TestPageStepsKeepsAPageSmall: inline groups stop once a page holds
// rowBudget step rows; what does not fit is summarised.
func TestPageStepsKeepsAPageSmall(t *testing.T) {
	t.Parallel()
	var steps [][2]string
	for i := 1; i <= 10; i++ {
		steps = append(steps, [2]string{fmt.Sprintf("l%d", i), "loop"})
		for j := 1; j <= 10; j++ {
			steps = append(steps, [2]string{fmt.Sprintf("l%d/%d/a", i, j), "shell"}, [2]string{fmt.Sprintf("l%d/%d/b", i, j), "shell"})
		}
	}
	page := engine.PageSteps(treeRun(steps), "", 0, 0)
	var stepRows, groups int
	for _, r := range page.Rows {
		if r.Step != nil {
			stepRows++
		} else {
			groups++
		}
	}
	assert.LessOrEqual(t, stepRows, 200)
	assert.Positive(t, groups, "what did not fit is summarised")
	assert.Equal(t, 10+9*20, stepRows, "the loops that fit are inline: nine of them beside the ten loop steps")
}
