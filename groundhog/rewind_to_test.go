package groundhog_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/agent"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/groundhog"
	"github.com/orbitrun/orbit/internal/testkit"
)

var threeCheckpoints = filesPlan("one", "two", "three")

// filesPlan is a plan of one checkpoint per id, each done when the file
// named for its id, <id>.txt, exists.
func filesPlan(ids ...string) string {
	plan := "checkpoints:\n"
	for _, id := range ids {
		plan += "  - id: " + id + "\n    spec: Create " + id + ".txt.\n    success_criteria:\n      - {kind: file_exists, path: " + id + ".txt}\n"
	}
	return plan
}

func (h *harness) rewindTo(checkpoint string) (*groundhog.Control, error) {
	return groundhog.RewindTo(h.ctx, groundhog.ControlConfig{Log: h.log, TaskID: h.task, GitEnv: testkit.GitEnv(), By: "tester", Checkpoint: checkpoint})
}

func writeCall(id, path, content, summary string) testkit.WireReply {
	return claudeTurn(
		toolUse(id+"w", "fs_write", `{"path":`+q(path)+`,"content":`+q(content)+`}`),
		toolUse(id+"s", "orbit_groundhog_checkpoint_success", `{"summary":`+q(summary)+`}`))
}

// TestRewindToCheckpointTwoOfThree: after three committed checkpoints, a
// rewind to before the second moves the task branch back to the first's
// commit, and the next run does the second and third again with a prompt
// that remembers the first only.
func TestRewindToCheckpointTwoOfThree(t *testing.T) {
	t.Parallel()
	h := newHarness(t, map[string]string{"README.md": "# demo\n"}, threeCheckpoints)
	ws := testkit.NewWireServer(t,
		writeCall("a", "one.txt", "1\n", "First checkpoint ONE-SUMMARY"),
		writeCall("b", "two.txt", "2\n", "Second checkpoint FORGOTTEN-TWO"),
		writeCall("c", "three.txt", "3\n", "Third checkpoint FORGOTTEN-THREE"),
		writeCall("d", "two.txt", "two again\n", "Second checkpoint redone"),
		writeCall("e", "three.txt", "three again\n", "Third checkpoint redone"),
	)
	provider := func(int, func(string) int) (agent.Provider, error) {
		return agent.NewProvider(agent.ProviderOptions{Name: "claude", BaseURL: ws.URL(), APIKey: "test-key"})
	}
	res, err := h.run("R1", spec("fs.write"), provider)
	require.NoError(t, err)
	require.Equal(t, events.GroundhogDone, res.State, res.Message)
	first := h.git("rev-parse", "main~2")
	last := h.git("rev-parse", "main")
	require.True(t, h.verify().OK)

	ctl, err := h.rewindTo("two")
	require.NoError(t, err)
	assert.Equal(t, groundhog.RewindDone, ctl.Outcome, ctl.Message)
	assert.Equal(t, first, h.git("rev-parse", "main"), "back to checkpoint one's commit")
	assert.NoFileExists(t, filepath.Join(h.repo, "two.txt"))
	assert.Empty(t, h.git("status", "--porcelain"))
	evs := h.events(events.GroundhogRewoundTo)
	require.Len(t, evs, 1)
	var d events.GroundhogRewoundToData
	require.NoError(t, evs[0].Decode(&d))
	assert.Equal(t, events.GroundhogRewoundToData{Checkpoint: "two", Ref: "refs/heads/main", FromSHA: last, ToSHA: first, FromDay: 2, By: "tester"}, d)
	assert.Equal(t, events.TaskBacklog, h.status())
	mem, err := h.memory(h.ctx, h.task, evs[0].Seq)
	require.NoError(t, err)
	require.Len(t, mem.Checkpoints, 1)
	assert.Equal(t, "one", mem.Checkpoints[0].ID)
	rep := h.verify()
	assert.True(t, rep.OK, "%+v", rep.Checks)
	assert.Equal(t, 1, rep.Commits)

	res, err = h.run("R2", spec("fs.write"), provider)
	require.NoError(t, err)
	require.Equal(t, events.GroundhogDone, res.State, res.Message)
	assert.Equal(t, "Third checkpoint redone\nSecond checkpoint redone\nFirst checkpoint ONE-SUMMARY\ninitial", h.git("log", "--format=%s", "main"))
	reqs := ws.Received()
	require.Len(t, reqs, 5, "the new run did two attempts: checkpoints two and three")
	for _, i := range []int{3, 4} {
		raw := string(reqs[i].Raw)
		assert.Contains(t, raw, "ONE-SUMMARY", "request %d remembers checkpoint one", i)
		assert.NotContains(t, raw, "FORGOTTEN-TWO", "request %d", i)
		assert.NotContains(t, raw, "FORGOTTEN-THREE", "request %d", i)
	}
	assert.Contains(t, string(reqs[3].Raw), "Current checkpoint: two")
	assert.Contains(t, string(reqs[4].Raw), "Second checkpoint redone")
	rep = h.verify()
	assert.True(t, rep.OK, "%+v", rep.Checks)
	assert.Equal(t, 3, rep.Commits)
}

// TestRewindOfHeldCommits: an on_approval task rewinds its held ref, not
// the task branch; the next held checkpoint builds on what is left.
func TestRewindOfHeldCommits(t *testing.T) {
	t.Parallel()
	h := newHarness(t, map[string]string{"README.md": "# demo\n"}, twoCheckpoints)
	initial := h.git("rev-parse", "main")
	_, err := h.run("R1", heldSpec(), replay(t, fixture(
		writeTurn("greet.txt", "hello\n", "Add greet.txt"),
		writeTurn("bye.txt", "goodbye\n", "Add bye.txt"),
		writeTurn("bye.txt", "goodbye again\n", "Add bye.txt again"),
	)))
	require.NoError(t, err)
	greet := h.git("rev-parse", heldRef+"~1")
	ctl, err := h.rewindTo("farewell")
	require.NoError(t, err)
	assert.Equal(t, heldRef, ctl.Ref)
	assert.Equal(t, greet, h.git("rev-parse", heldRef))
	assert.Equal(t, initial, h.git("rev-parse", "main"), "the task branch never moved")
	assert.True(t, h.verify().OK)

	res, err := h.run("R2", heldSpec(), replay(t, fixture(
		writeTurn("greet.txt", "hello\n", "Add greet.txt"),
		writeTurn("bye.txt", "goodbye\n", "Add bye.txt"),
		writeTurn("bye.txt", "goodbye again\n", "Add bye.txt again"),
	)))
	require.NoError(t, err)
	require.Equal(t, events.GroundhogDone, res.State, res.Message)
	assert.Equal(t, greet, h.git("rev-parse", heldRef+"~1"))
	assert.Equal(t, "goodbye again", h.git("show", heldRef+":bye.txt"))
	assert.Equal(t, initial, h.git("rev-parse", "main"))
	rep := h.verify()
	assert.True(t, rep.OK, "%+v", rep.Checks)
}

// TestRewindIsRefused: an unknown or uncommitted checkpoint, a dirty
// workspace and a moved branch are refused with the reason, and nothing
// is written or moved.
func TestRewindIsRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t, map[string]string{"README.md": "# demo\n"}, twoCheckpoints)
	_, err := h.run("R1", spec("fs.write"), replay(t, fixture(
		writeTurn("greet.txt", "hello\n", "Add greet.txt"),
		`{"content": [{"kind": "tool_use", "name": "orbit.groundhog.checkpoint_failure", "input": {"what_tried": "x", "what_happened": "y"}}], "stop_reason": "tool_use"}`,
		`{"content": [{"kind": "tool_use", "name": "orbit.groundhog.checkpoint_failure", "input": {"what_tried": "x", "what_happened": "y"}}], "stop_reason": "tool_use"}`,
	)))
	require.NoError(t, err)
	head := h.git("rev-parse", "main")
	all := func() int {
		evs, err := h.log.Read(h.ctx, events.FollowOptions{Filters: []string{events.TaskFilter(h.task)}})
		require.NoError(t, err)
		return len(evs)
	}
	before := all()
	refused := func(checkpoint, reason string) {
		t.Helper()
		_, err := h.rewindTo(checkpoint)
		require.ErrorIs(t, err, events.ErrInvalidRequest)
		assert.Contains(t, err.Error(), reason)
		assert.Equal(t, head, h.git("rev-parse", "main"))
		assert.Equal(t, before, all(), "nothing written")
	}
	refused("nope", "the plan has no such checkpoint (it has greeting, farewell)")
	refused("farewell", "the checkpoint is not committed (committed: greeting)")
	require.NoError(t, os.WriteFile(filepath.Join(h.repo, "README.md"), []byte("changed\n"), 0o644))
	refused("greeting", "uncommitted changes to 1 tracked file(s): README.md")
	h.git("checkout", "README.md")
	h.git("commit", "--allow-empty", "-m", "someone else")
	head = h.git("rev-parse", "main")
	refused("greeting", "the branch moved")
}

// TestRewindAfterApproval: approved held commits are on the task branch;
// a rewind moves the task branch back, and the held ref with it, so the
// next held checkpoint builds on what is left rather than on the rewound
// commits.
func TestRewindAfterApproval(t *testing.T) {
	t.Parallel()
	h := newHarness(t, map[string]string{"README.md": "# demo\n"}, twoCheckpoints)
	turns := fixture(
		writeTurn("greet.txt", "hello\n", "Add greet.txt"),
		writeTurn("bye.txt", "goodbye\n", "Add bye.txt"),
		writeTurn("bye.txt", "goodbye again\n", "Add bye.txt again"),
	)
	_, err := h.run("R1", heldSpec(), replay(t, turns))
	require.NoError(t, err)
	_, err = h.approve()
	require.NoError(t, err)
	greet := h.git("rev-parse", "main~1")

	ctl, err := h.rewindTo("farewell")
	require.NoError(t, err)
	assert.Equal(t, "refs/heads/main", ctl.Ref)
	assert.Equal(t, greet, h.git("rev-parse", "main"))
	assert.Equal(t, greet, h.git("rev-parse", heldRef), "the held ref no longer holds the rewound commit")
	assert.NoFileExists(t, filepath.Join(h.repo, "bye.txt"))
	assert.True(t, h.verify().OK)

	res, err := h.run("R2", heldSpec(), replay(t, turns))
	require.NoError(t, err)
	require.Equal(t, events.GroundhogDone, res.State, res.Message)
	assert.Equal(t, greet, h.git("rev-parse", "main"), "held again, not on main")
	assert.Equal(t, greet, h.git("rev-parse", heldRef+"~1"))
	assert.Equal(t, "goodbye again", h.git("show", heldRef+":bye.txt"))
	rep := h.verify()
	assert.True(t, rep.OK, "%+v", rep.Checks)
}
