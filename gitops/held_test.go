package gitops_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/gitops"
)

// heldGreet makes a held commit for task T-1 that adds greet.sh on top of
// main, with HEAD back on main, and returns its id.
func heldGreet(f *fixture) string {
	f.t.Helper()
	f.git("switch", "--quiet", "--create", "work")
	f.write("greet.sh", "echo hello\n")
	f.git("add", "greet.sh")
	f.git("commit", "--quiet", "-m", "greet")
	held := f.sha("HEAD")
	ref, err := gitops.HeldRefName("T-1")
	require.NoError(f.t, err)
	f.git("update-ref", ref, held)
	f.git("switch", "--quiet", "main")
	f.git("branch", "--quiet", "-D", "work")
	return held
}

// TestEnterHoldFinishesASwitchCutShort: a switch to the hold branch cut
// short by a kill has written the held commit's files but not the index,
// so they are untracked on main; entering the hold again takes them for
// its own and switches, and the hold branch is at the held commit with a
// clean work tree. A file of the user's in the way, with other content,
// is kept and the switch refused.
func TestEnterHoldFinishesASwitchCutShort(t *testing.T) {
	f := newFixture(t)
	held := heldGreet(f)
	f.write("greet.sh", "echo hello\n")
	f.write("notes.txt", "the user's\n")

	hold, err := f.repo.EnterHold(f.ctx, "T-1", "main")
	require.NoError(t, err)
	assert.Equal(t, hold, f.branch())
	assert.Equal(t, held, f.sha("HEAD"))
	assert.Equal(t, "?? notes.txt", f.status(), "only the user's untracked file is left, as it was")

	g := newFixture(t)
	heldGreet(g)
	g.write("greet.sh", "echo mine\n")
	_, err = g.repo.EnterHold(g.ctx, "T-1", "main")
	require.Error(t, err)
	assert.Equal(t, "main", g.branch())
	assert.Equal(t, "echo mine\n", g.read("greet.sh"), "a file of the user's is never removed")
}
