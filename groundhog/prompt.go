package groundhog

import (
	"fmt"
	"strings"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/projector"
)

// Memory is what later attempts of a task may know of earlier ones: the
// GroundhogMemory view, and nothing else. It is the view's own type, so
// the prompt reads exactly what the view keeps.
type Memory = projector.GroundhogMemory

// protocol is the part of the system prompt every attempt gets.
const protocol = `

You work through a plan one checkpoint at a time. Each attempt starts from a
clean snapshot of the repository; only the work of completed checkpoints is
kept, and you see what they did in the memory below.

Work only on the current checkpoint. When it is done, call ` + VerbSuccess + `
with a summary (it becomes the commit message) and any side effects. The
runtime then checks the checkpoint's criteria itself: your word is not enough.
If you cannot finish it, call ` + VerbFailure + ` and say what you tried, what
happened and what the next attempt should do differently. Declare side
effects beyond your edits with ` + VerbSideEffect + ` as you cause them.
Calling either of the first two ends the attempt.`

// systemPrompt is the activity's instruction followed by the protocol.
func systemPrompt(instruction string) string {
	return strings.TrimSpace(instruction) + protocol
}

// renderPlan is the plan section: every checkpoint, in order. It depends
// only on the pinned plan, so it is the same for every attempt of a run.
func renderPlan(plan *assets.Plan) string {
	var b strings.Builder
	b.WriteString("# Plan\n\n")
	for i, cp := range plan.Checkpoints {
		fmt.Fprintf(&b, "%d. %s: %s\n", i+1, cp.ID, oneLine(cp.Spec))
	}
	return b.String()
}

// renderMemory is the memory section: one block per committed checkpoint,
// in commit order.
//
// IMPORTANT: it is append-only. The bytes rendered for checkpoints 1..k are
// an exact prefix of those for 1..k+1 (a block depends on its checkpoint
// alone), so a provider's prompt cache stays valid across checkpoints.
func renderMemory(m *Memory) string {
	var b strings.Builder
	b.WriteString("\n# Memory: completed checkpoints\n")
	for _, c := range m.Checkpoints {
		commit := "commit " + shortSHA(c.Commit)
		if c.NoChange {
			commit = "no changes"
		}
		fmt.Fprintf(&b, "\n## %s (%s)\n%s\n", c.ID, commit, strings.TrimSpace(c.Summary))
		for _, se := range c.SideEffects {
			rev := "irreversible"
			if se.Reversible {
				rev = "reversible"
			}
			fmt.Fprintf(&b, "- side effect: %s %s (%s)\n", se.Kind, se.Target, rev)
		}
	}
	return b.String()
}

// renderCurrent is the section about the checkpoint to do now, with the
// latest failure report of an earlier attempt at it.
func renderCurrent(cp *assets.Checkpoint, m *Memory) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n# Current checkpoint: %s\n\n%s\n\nThe runtime will check:\n", cp.ID, strings.TrimSpace(cp.Spec))
	for _, c := range cp.SuccessCriteria {
		fmt.Fprintf(&b, "- %s\n", describeCriterion(&c, false))
	}
	for _, c := range cp.AntiCriteria {
		fmt.Fprintf(&b, "- %s\n", describeCriterion(&c, true))
	}
	if m.Active != nil && m.Active.ID == cp.ID && m.Active.LastFailure != nil {
		f := m.Active.LastFailure
		fmt.Fprintf(&b, "\n# The last attempt at this checkpoint failed (%s)\n\n%s\n", f.Source, strings.TrimSpace(f.WhatHappened))
		if f.WhatTried != "" {
			fmt.Fprintf(&b, "\nWhat was tried: %s\n", strings.TrimSpace(f.WhatTried))
		}
		if len(f.FailedCriteria) > 0 {
			fmt.Fprintf(&b, "\nFailed checks:\n- %s\n", strings.Join(f.FailedCriteria, "\n- "))
		}
		if f.NextAttemptPlan != "" {
			fmt.Fprintf(&b, "\nPlan for this attempt: %s\n", strings.TrimSpace(f.NextAttemptPlan))
		}
	}
	return b.String()
}

// Prompt is the user message of an attempt, built only from the plan, the
// memory and the current checkpoint.
func Prompt(plan *assets.Plan, m *Memory, cp *assets.Checkpoint) string {
	return renderPlan(plan) + renderMemory(m) + renderCurrent(cp, m)
}

func describeCriterion(c *assets.Criterion, anti bool) string {
	var s string
	switch c.Kind {
	case "command":
		want := 0
		if c.ExpectExit != nil {
			want = *c.ExpectExit
		}
		s = fmt.Sprintf("`%s` exits %d", c.Command, want)
	case "file_exists":
		s = c.Path + " exists"
	case "file_contains":
		s = fmt.Sprintf("%s matches /%s/", c.Path, c.Pattern)
	case "semantic":
		s = c.Statement + " (your judgement; not checked mechanically)"
	case "paths_untouched":
		return "these paths stay untouched: " + strings.Join(c.Paths, ", ")
	default:
		s = c.Kind
	}
	if anti {
		return "must NOT hold: " + s
	}
	return s
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func shortSHA(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}
