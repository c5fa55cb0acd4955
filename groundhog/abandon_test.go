package groundhog_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/activity"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/groundhog"
	"github.com/orbitrun/orbit/internal/testkit"
)

// abandon abandons the harness's task under the real workspace
// reservation in orbit_locks.
func (h *harness) abandon(reason string) *groundhog.Abandonment {
	h.t.Helper()
	owner := "abandon-" + events.NewID()
	res, err := groundhog.Abandon(h.ctx, groundhog.ControlConfig{
		Log: h.log, TaskID: h.task, By: "cli:ann@box", Reason: reason, GitEnv: testkit.GitEnv(),
		ReserveWorkspace: func(ctx context.Context, path string) (string, error) {
			return activity.ReserveWorkspace(ctx, h.log, owner, "abandon "+h.task, path, time.Minute)
		},
		ReleaseWorkspace: func(ctx context.Context, path string) error {
			return activity.ReleaseWorkspace(ctx, h.log, owner, path)
		},
	})
	require.NoError(h.t, err)
	return res
}

// setRunning records the task's status as a run's start does.
func (h *harness) setRunning() {
	h.t.Helper()
	_, err := h.log.Append(h.ctx, events.Event{Type: events.TaskStatusChanged, TaskID: h.task, RunID: "R1"},
		events.TaskStatusChangedData{Status: events.TaskRunning, RunID: "R1"})
	require.NoError(h.t, err)
}

// status is the task's status in the tasks view, once the view has every
// event.
func (h *harness) status() string {
	h.t.Helper()
	last, err := h.log.LastSeq(h.ctx)
	require.NoError(h.t, err)
	require.NoError(h.t, h.proj.WaitFor(h.ctx, last))
	tv, err := h.proj.Task(h.ctx, h.task)
	require.NoError(h.t, err)
	return tv.Status
}

// TestAbandonRewindsAnOpenAttempt: an attempt a crashed run left open is
// abandoned: the workspace is back on the task branch as the snapshot had
// it, the work is on the scratch branch, the records say who and why, the
// task is active, and the budget is untouched — with a budget of one, the
// next run still gets its attempt, and commits.
func TestAbandonRewindsAnOpenAttempt(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, onePlan)
	snap := crashedAttempt(t, h, "editing")
	h.setRunning()

	res := h.abandon("the agent went the wrong way")
	assert.Equal(t, groundhog.AbandonRewound, res.Outcome, res.Message)
	require.NotNil(t, res.Attempt)
	assert.Equal(t, events.Attempt{Checkpoint: "greeting", Attempt: 1, Day: 1}, *res.Attempt)
	assert.Equal(t, events.TaskBacklog, res.Status)
	assert.Equal(t, "main", h.git("branch", "--show-current"))
	assert.Empty(t, h.git("status", "--porcelain"))
	assert.Equal(t, "hello", h.git("show", snap.ScratchBranch+":greet.txt"), "the work is kept on the scratch branch")

	failed := onlyEvent[events.GroundhogAttemptFailedData](t, h, events.GroundhogAttemptFailed)
	assert.Equal(t, "abandoned", failed.Report.Source)
	assert.Contains(t, failed.Report.WhatHappened, "the agent went the wrong way")
	require.Len(t, h.events(events.GroundhogRewound), 1)
	in := onlyEvent[events.GroundhogInterruptedData](t, h, events.GroundhogInterrupted)
	assert.Equal(t, "cli:ann@box", in.AbandonedBy)
	assert.Equal(t, "the agent went the wrong way", in.Reason)
	assert.False(t, in.WorkspaceKept)
	assert.Equal(t, events.TaskBacklog, h.status())
	assert.True(t, h.verify().OK, "%+v", h.verify().Checks)

	audit, err := h.proj.GroundhogRun(h.ctx, h.task)
	require.NoError(t, err)
	at := audit.Checkpoints[0].Attempts[0]
	assert.Equal(t, "abandoned", at.Outcome)
	require.NotNil(t, at.Abandon)
	assert.Equal(t, "cli:ann@box", at.Abandon.By)

	again := h.abandon("twice")
	assert.Equal(t, groundhog.AbandonNothingOpen, again.Outcome, "abandoning again finds nothing open")

	s := oneAttemptSpec()
	out, err := h.run("R2", s, replay(t, fixture(writeTurn("greet.txt", "hello again\n", "Add greet.txt"), writeTurn("bye.txt", "goodbye\n", "Add bye.txt"))))
	require.NoError(t, err)
	assert.Equal(t, events.GroundhogDone, out.State, out.Message)
	assert.Empty(t, h.events(events.GroundhogAbandoned), "the abandoned attempt spent no budget")
	var committed events.GroundhogCommittedData
	require.NoError(t, h.events(events.GroundhogCommitted)[0].Decode(&committed))
	assert.Equal(t, events.Attempt{Checkpoint: "greeting", Attempt: 2, Day: 2}, committed.Attempt)
	last, err := h.log.LastSeq(h.ctx)
	require.NoError(t, err)
	mem, err := h.memory(h.ctx, h.task, last)
	require.NoError(t, err)
	assert.Len(t, mem.Checkpoints, 2)
	assert.True(t, h.verify().OK)
}

// TestAbandonRecordsALandedCommit: a run that died after committing a
// verified attempt and before recording it left the commit as the task
// branch's head; abandon records it and resets nothing.
func TestAbandonRecordsALandedCommit(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, onePlan)
	crashedAttempt(t, h, "committed")
	head := h.git("rev-parse", "main")

	res := h.abandon("stuck")
	assert.Equal(t, groundhog.AbandonCommitted, res.Outcome, res.Message)
	assert.Equal(t, head, res.CommitSHA)
	assert.Equal(t, head, h.git("rev-parse", "main"), "nothing was reset")
	assert.Equal(t, "hello", h.git("show", "main:greet.txt"))
	require.Len(t, h.events(events.GroundhogCommitted), 1)
	assert.Len(t, h.events(events.GroundhogGrounding), 1)
	assert.Empty(t, h.events(events.GroundhogRewound))
	assert.Empty(t, h.events(events.GroundhogInterrupted))
	assert.True(t, h.verify().OK, "%+v", h.verify().Checks)
}

// TestAbandonIsRefusedWhileARunHoldsTheWorkspace: while a run holds the
// repository, abandon changes nothing and names the run; once the run has
// let go, it abandons.
func TestAbandonIsRefusedWhileARunHoldsTheWorkspace(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, onePlan)
	snap := crashedAttempt(t, h, "editing")
	dir, err := filepath.EvalSymlinks(h.repo)
	require.NoError(t, err)
	holder, err := activity.ReserveWorkspace(h.ctx, h.log, "R7", "groundhog", dir, 0)
	require.NoError(t, err)
	require.Empty(t, holder)

	res := h.abandon("stuck")
	assert.Equal(t, groundhog.AbandonRefused, res.Outcome)
	assert.Contains(t, res.HeldBy, "run R7")
	assert.Contains(t, res.Message, "run R7")
	assert.Empty(t, h.events(events.GroundhogAttemptFailed))
	assert.Empty(t, h.events(events.GroundhogInterrupted))
	assert.Equal(t, snap.ScratchBranch, h.git("branch", "--show-current"), "the workspace was not touched")
	assert.False(t, h.verify().OK, "the attempt is still open")

	require.NoError(t, activity.ReleaseWorkspace(h.ctx, h.log, "R7", dir))
	res = h.abandon("stuck")
	assert.Equal(t, groundhog.AbandonRewound, res.Outcome, res.Message)
	assert.True(t, h.verify().OK)
}

// TestAbandonLeavesAMovedTaskBranchAsItIs is the stuck case: someone
// committed on the task branch under an open attempt — from a second
// worktree, or in the workspace itself, switched to the task branch with
// the attempt's greet.txt still in it — so a rewind is refused and every
// resumed run fails closed. Abandon records the attempt as abandoned,
// resets nothing, and says so; the attempt's greet.txt is out of the
// workspace, on its scratch branch; the next run builds on the person's
// commit.
func TestAbandonLeavesAMovedTaskBranchAsItIs(t *testing.T) {
	t.Parallel()
	for _, inPlace := range []bool{false, true} {
		for _, resumed := range []bool{true, false} {
			name := map[bool]string{true: "after a resumed run failed", false: "from the scratch branch"}[resumed]
			if inPlace {
				name = map[bool]string{true: "in the workspace, after a resumed run failed", false: "in the workspace"}[resumed]
			}
			t.Run(name, func(t *testing.T) { checkAbandonMoved(t, inPlace, resumed) })
		}
	}
}

// checkAbandonMoved is one case of TestAbandonLeavesAMovedTaskBranchAsItIs:
// the person commits in the workspace (inPlace) or from a second worktree,
// and a run is resumed (and fails closed) before the abandon or not.
func checkAbandonMoved(t *testing.T, inPlace, resumed bool) {
	t.Parallel()
	h := newHarness(t, nil, onePlan)
	snap := crashedAttempt(t, h, "editing")
	if inPlace {
		h.git("switch", "--quiet", "main")
		h.git("commit", "--quiet", "--allow-empty", "-m", "a person's commit")
	} else {
		other := filepath.Join(t.TempDir(), "other")
		h.git("worktree", "add", "--quiet", other, "main")
		testkit.Git(t, other, "commit", "--quiet", "--allow-empty", "-m", "a person's commit")
		h.git("worktree", "remove", other)
	}
	theirs := h.git("rev-parse", "main")

	if resumed {
		_, err := h.run("R2", spec("fs.write"), replay(t, farewellOnly))
		require.Error(t, err, "the resumed run fails closed")
		assert.Equal(t, theirs, h.git("rev-parse", "main"))
	}

	res := h.abandon("a person took over")
	assert.Equal(t, groundhog.AbandonKept, res.Outcome, res.Message)
	assert.Contains(t, res.Message, "was not reset")
	if inPlace && !resumed {
		assert.Equal(t, []string{"greet.txt"}, res.SetAside, res.Message)
		assert.Contains(t, res.Message, "(greet.txt) were taken out of it and are kept with its work on "+snap.ScratchBranch)
	} else {
		assert.Empty(t, res.SetAside, "nothing of the attempt was left in the workspace")
		assert.Contains(t, res.Message, "the workspace holds nothing of the attempt")
	}
	assert.Equal(t, theirs, h.git("rev-parse", "main"), "the person's commit is untouched")
	assert.Equal(t, "main", h.git("branch", "--show-current"))
	assert.Empty(t, h.git("status", "--porcelain"))
	assert.Equal(t, "hello", h.git("show", snap.ScratchBranch+":greet.txt"), "the attempt's work is on its scratch branch")
	in := onlyEvent[events.GroundhogInterruptedData](t, h, events.GroundhogInterrupted)
	assert.True(t, in.WorkspaceKept)
	assert.Contains(t, in.Reason, "a person took over")
	assert.Contains(t, in.Reason, "task branch moved")
	assert.Empty(t, h.events(events.GroundhogRewound))
	assert.True(t, h.verify().OK, "%+v", h.verify().Checks)
	last, err := h.log.LastSeq(h.ctx)
	require.NoError(t, err)
	mem, err := h.memory(h.ctx, h.task, last)
	require.NoError(t, err)
	require.NotNil(t, mem.Active)
	require.NotNil(t, mem.Active.LastFailure)
	assert.Equal(t, "abandoned", mem.Active.LastFailure.Source, "a resumed run's report (interrupted, rewound) is superseded: nothing was rewound")
	assert.Contains(t, mem.Active.LastFailure.WhatHappened, "a person took over")

	out, err := h.run("R3", spec("fs.write"), replay(t, wholePlan))
	require.NoError(t, err)
	assert.Equal(t, events.GroundhogDone, out.State, out.Message)
	assert.Equal(t, "Add bye.txt\nAdd greet.txt\na person's commit\ninitial", h.git("log", "--format=%s", "main"))
	assert.True(t, h.verify().OK)
}

// TestAbandonWithNothingOpen: a task with no open attempt is left alone.
func TestAbandonWithNothingOpen(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, onePlan)
	res := h.abandon("nothing")
	assert.Equal(t, groundhog.AbandonNothingOpen, res.Outcome)
	assert.Contains(t, res.Message, "no open attempt")
	assert.Empty(t, h.events(events.GroundhogInterrupted))
	assert.Empty(t, h.events(events.GroundhogAttemptFailed))
}

// TestAbandonKeepsTheAgentsOwnFailure: an attempt whose failure the agent
// had reported (its run died before the rewind) is rewound and closed; the
// agent's report stays the one the next attempt learns from.
func TestAbandonKeepsTheAgentsOwnFailure(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, onePlan)
	crashedAttempt(t, h, "editing")
	_, err := h.log.Append(h.ctx, events.Event{Type: events.GroundhogAttemptFailed, TaskID: h.task, RunID: "R1", StepKey: "groundhog"},
		events.GroundhogAttemptFailedData{Attempt: events.Attempt{Checkpoint: "greeting", Attempt: 1, Day: 1},
			Report: events.FailureReport{Source: "agent", WhatHappened: "greet.txt needs a name I do not have"}})
	require.NoError(t, err)

	res := h.abandon("stuck")
	assert.Equal(t, groundhog.AbandonRewound, res.Outcome, res.Message)
	require.Len(t, h.events(events.GroundhogAttemptFailed), 1, "no second report")
	last, err := h.log.LastSeq(h.ctx)
	require.NoError(t, err)
	mem, err := h.memory(h.ctx, h.task, last)
	require.NoError(t, err)
	require.NotNil(t, mem.Active)
	assert.Equal(t, "agent", mem.Active.LastFailure.Source)
	assert.Len(t, h.events(events.GroundhogInterrupted), 1)
	assert.True(t, h.verify().OK)
}

// TestAnAbandonCutShortSpendsNoBudget: an abandon that stopped after
// recording its report (the engine died) left the attempt open; the next
// run closes it as interrupted, and with a budget of one still gets its
// attempt.
func TestAnAbandonCutShortSpendsNoBudget(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, onePlan)
	crashedAttempt(t, h, "editing")
	_, err := h.log.Append(h.ctx, events.Event{Type: events.GroundhogAttemptFailed, TaskID: h.task},
		events.GroundhogAttemptFailedData{Attempt: events.Attempt{Checkpoint: "greeting", Attempt: 1, Day: 1},
			Report: events.FailureReport{Source: "abandoned", WhatHappened: "the previous attempt was abandoned by cli:ann@box: stuck"}})
	require.NoError(t, err)

	s := oneAttemptSpec()
	out, err := h.run("R2", s, replay(t, fixture(writeTurn("greet.txt", "hello again\n", "Add greet.txt"), writeTurn("bye.txt", "goodbye\n", "Add bye.txt"))))
	require.NoError(t, err)
	assert.Equal(t, events.GroundhogDone, out.State, out.Message)
	assert.Empty(t, h.events(events.GroundhogAbandoned))
	assert.Len(t, h.events(events.GroundhogInterrupted), 1)
	assert.True(t, h.verify().OK)
}
