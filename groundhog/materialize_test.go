package groundhog_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/groundhog"
)

// TestDirectIsRefusedWhileCommitsAreHeld switches a task's activity from
// materialize on_approval to direct with checkpoint 1's commit held and
// not approved: the run is refused before any attempt, naming the held
// commit and the ways out, and verify still passes. Once the commit is
// approved, the direct run lands checkpoint 2 on top of it.
func TestDirectIsRefusedWhileCommitsAreHeld(t *testing.T) {
	// The replay script goes on where the first run left it.
	t.Parallel()
	h := newHarness(t, map[string]string{"README.md": "# demo\n"}, onePlan)
	initial := h.git("rev-parse", "main")
	_, err := h.run("R1", heldSpec(), replay(t, fixture(writeTurn("greet.txt", "hello\n", "Add greet.txt"))))
	require.Error(t, err, "the fixture has no turn for farewell")
	held := h.git("rev-parse", heldRef)
	require.NotEqual(t, initial, held)

	_, err = h.run("R2", spec("fs.write"), replay(t, wholePlan))
	require.ErrorIs(t, err, groundhog.ErrHeldUnapproved)
	assert.Contains(t, err.Error(), "greeting "+held[:12])
	assert.Contains(t, err.Error(), "orbit groundhog approve T-1")
	assert.Contains(t, err.Error(), "orbit groundhog rewind T-1 --to greeting")
	assert.Len(t, h.events(events.GroundhogAttempt), 2, "no attempt was started")
	assert.Equal(t, initial, h.git("rev-parse", "main"))
	assert.True(t, h.verify().OK, "%+v", h.verify().Checks)

	ctl, err := h.approve()
	require.NoError(t, err)
	require.Equal(t, groundhog.ApproveDone, ctl.Outcome, ctl.Message)
	res, err := h.run("R3", spec("fs.write"), replay(t, wholePlan))
	require.NoError(t, err)
	assert.Equal(t, events.GroundhogDone, res.State, res.Message)
	assert.Equal(t, "Add bye.txt\nAdd greet.txt\ninitial", h.git("log", "--format=%s", "main"))
	assert.True(t, h.verify().OK, "%+v", h.verify().Checks)
}
