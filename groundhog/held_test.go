package groundhog_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/gitops"
	"github.com/orbitrun/orbit/groundhog"
	"github.com/orbitrun/orbit/internal/testkit"
)

const heldRef = "refs/orbit/groundhog/T-1"

func heldSpec() assets.ActivitySpec {
	s := spec("fs.read", "fs.write")
	s.Materialize = assets.MaterializeOnApproval
	return s
}

func (h *harness) approve() (*groundhog.Control, error) {
	return groundhog.Approve(h.ctx, groundhog.ControlConfig{Log: h.log, TaskID: h.task, GitEnv: testkit.GitEnv(), By: "tester"})
}

// TestHeldCheckpointsWaitForApproval: with materialize on_approval the two
// checkpoint commits are chained on the held ref while the task branch
// and the workspace stay where they were; approve fast-forwards the task
// branch, and verify passes before and after.
func TestHeldCheckpointsWaitForApproval(t *testing.T) {
	t.Parallel()
	h := newHarness(t, map[string]string{"README.md": "# demo\n"}, twoCheckpoints)
	initial := h.git("rev-parse", "main")
	res, err := h.run("R1", heldSpec(), replay(t, fixture(
		writeTurn("greet.txt", "hello\n", "Add greet.txt"),
		writeTurn("bye.txt", "goodbye\n", "Add bye.txt"),
	)))
	require.NoError(t, err)
	require.Equal(t, events.GroundhogDone, res.State, res.Message)

	assert.Equal(t, initial, h.git("rev-parse", "main"), "the task branch did not move")
	assert.Equal(t, "main", h.git("branch", "--show-current"))
	assert.Empty(t, h.git("status", "--porcelain"), "the workspace is clean")
	assert.NoFileExists(t, h.repo+"/greet.txt", "the workspace is the task branch's")
	assert.Empty(t, h.git("branch", "--list", "groundhog/T-1/held"), "no hold branch is left")
	assert.Equal(t, "Add bye.txt\nAdd greet.txt\ninitial", h.git("log", "--format=%s", heldRef))
	assert.Equal(t, "hello", h.git("show", heldRef+":greet.txt"), "checkpoint 2 built on checkpoint 1's held tree")

	var commits []events.GroundhogCommittedData
	for _, ev := range h.events(events.GroundhogCommitted) {
		var c events.GroundhogCommittedData
		require.NoError(t, ev.Decode(&c))
		commits = append(commits, c)
	}
	require.Len(t, commits, 2)
	assert.Equal(t, heldRef, commits[0].HeldRef)
	assert.Equal(t, commits[0].SHA, h.git("rev-parse", commits[1].SHA+"^"), "chained on the held ref")
	assert.Equal(t, commits[1].SHA, h.git("rev-parse", heldRef))

	rep := h.verify()
	assert.True(t, rep.OK, "%+v", rep.Checks)
	assert.Contains(t, rep.Checks[0].Detail, "held on "+heldRef)

	ctl, err := h.approve()
	require.NoError(t, err)
	assert.Equal(t, groundhog.ApproveDone, ctl.Outcome, ctl.Message)
	assert.Equal(t, commits[1].SHA, h.git("rev-parse", "main"))
	assert.Equal(t, "goodbye\n", mustRead(t, h.repo+"/bye.txt"), "the checked-out task branch moved with its work tree")
	assert.Empty(t, h.git("status", "--porcelain"))
	a := onlyEvent[events.GroundhogApprovedData](t, h, events.GroundhogApproved)
	assert.Equal(t, events.GroundhogApprovedData{TaskBranch: "main", HeldRef: heldRef, FromSHA: initial, ToSHA: commits[1].SHA, By: "tester"}, a)
	rep = h.verify()
	assert.True(t, rep.OK, "%+v", rep.Checks)
	assert.NotContains(t, rep.Checks[0].Detail, "held")

	again, err := h.approve()
	require.NoError(t, err)
	assert.Equal(t, groundhog.ApproveNothingHeld, again.Outcome)
	assert.Len(t, h.events(events.GroundhogApproved), 1)
}

// TestApproveAfterTheBranchMovedIsRefused: someone committed on the task
// branch after the held commits were made, so approving would not be a
// fast-forward: refused, nothing moved, nothing recorded.
func TestApproveAfterTheBranchMovedIsRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t, map[string]string{"README.md": "# demo\n"}, `
checkpoints:
  - id: greeting
    spec: Create greet.txt saying hello.
    success_criteria:
      - {kind: file_contains, path: greet.txt, pattern: "hello"}
`)
	res, err := h.run("R1", heldSpec(), replay(t, fixture(writeTurn("greet.txt", "hello\n", "Add greet.txt"))))
	require.NoError(t, err)
	require.Equal(t, events.GroundhogDone, res.State, res.Message)
	h.git("commit", "--allow-empty", "-m", "someone else")
	moved := h.git("rev-parse", "main")

	_, err = h.approve()
	require.ErrorIs(t, err, gitops.ErrNotFastForward)
	assert.Contains(t, err.Error(), "main moved since the held commits were made")
	assert.Equal(t, moved, h.git("rev-parse", "main"))
	assert.Empty(t, h.events(events.GroundhogApproved))
	assert.True(t, h.verify().OK, "the held commit is still on the held ref")
}

// TestAHeldRunKilledAfterItsCommitResumes: a held attempt's squash commit
// landed on the hold branch, and the runner died before recording it. The
// next run records it as held, moves the held ref to it, takes the
// workspace back to the task branch and goes on from there.
func TestAHeldRunKilledAfterItsCommitResumes(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, onePlan)
	initial := h.git("rev-parse", "main")
	repo, err := gitops.Open(h.repo, gitops.WithEnv(testkit.GitEnv()...))
	require.NoError(t, err)
	hold, err := repo.EnterHold(h.ctx, h.task, "main")
	require.NoError(t, err)
	require.Equal(t, "groundhog/T-1/held", hold)
	record := func(typ string, payload any) {
		_, err := h.log.Append(h.ctx, events.Event{Type: typ, TaskID: h.task, RunID: "R1", StepKey: "groundhog"}, payload)
		require.NoError(t, err)
	}
	record(events.GroundhogRunStarted, events.GroundhogRunStartedData{RunID: "R1", StepKey: "groundhog", PlanVersion: 1, Checkpoints: []string{"greeting", "farewell"}, Budgets: []int{2, 2}})
	snap, err := repo.CreateSnapshot(h.ctx, h.task, 1, hold)
	require.NoError(t, err)
	id := events.Attempt{Checkpoint: "greeting", Attempt: 1, Day: 1}
	record(events.GroundhogAttempt, events.GroundhogAttemptData{Attempt: id, RunID: "R1", TaskBranch: hold,
		ScratchBranch: snap.ScratchBranch, SnapshotRef: snap.SnapshotRef, PlanVersion: 1, Untracked: snap.Untracked})
	require.NoError(t, os.WriteFile(filepath.Join(h.repo, "greet.txt"), []byte("hello\n"), 0o644))
	record(events.GroundhogVerb, events.GroundhogVerbData{Attempt: id, Verb: groundhog.VerbSuccess, Summary: "Add greet.txt"})
	record(events.GroundhogVerification, events.GroundhogVerificationData{Attempt: id, Passed: true,
		Results: []events.CriterionResult{{Kind: "file_contains", Outcome: "pass"}}})
	sha, _, err := repo.CommitSuccess(h.ctx, snap, "Add greet.txt", []gitops.Trailer{
		{Key: "Groundhog-Task", Value: h.task}, {Key: "Groundhog-Checkpoint", Value: "greeting"}, {Key: "Groundhog-Day", Value: "1"}})
	require.NoError(t, err)
	require.Equal(t, hold, h.git("branch", "--show-current"))

	res, err := h.run("R1", heldSpec(), replay(t, farewellOnly))
	require.NoError(t, err)
	require.Equal(t, events.GroundhogDone, res.State, res.Message)
	var c events.GroundhogCommittedData
	require.NoError(t, h.events(events.GroundhogCommitted)[0].Decode(&c))
	assert.Equal(t, sha, c.SHA)
	assert.Equal(t, heldRef, c.HeldRef)
	assert.Equal(t, sha, h.git("rev-parse", heldRef+"~1"), "farewell chained on the recovered commit")
	assert.Equal(t, initial, h.git("rev-parse", "main"))
	assert.Equal(t, "main", h.git("branch", "--show-current"))
	assert.Empty(t, h.git("branch", "--list", hold))
	rep := h.verify()
	assert.True(t, rep.OK, "%+v", rep.Checks)
}
