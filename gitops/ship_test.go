package gitops_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/gitops"
	"github.com/orbitrun/orbit/internal/testkit"
)

// shipRig is a repository with a bare origin, opened with gitops; base is
// the commit main was at when the rig was made.
type shipRig struct {
	t                 *testing.T
	dir, origin, base string
	repo              *gitops.Repo
}

func newShipRig(t *testing.T) *shipRig {
	t.Helper()
	dir, origin := testkit.NewGitRepoWithOrigin(t, map[string]string{"a.txt": "alpha\n", "b.txt": "bravo\n"})
	repo, err := gitops.Open(dir, gitops.WithEnv(testkit.GitEnv()...))
	require.NoError(t, err)
	s := &shipRig{t: t, dir: dir, origin: origin, repo: repo}
	s.base = s.main()
	return s
}

func (s *shipRig) git(dir string, args ...string) string { return testkit.Git(s.t, dir, args...) }

// main is the commit the repository's own main branch is at.
func (s *shipRig) main() string { return s.git(s.dir, "rev-parse", "main") }

// commitOnMain writes file in the repository's own checkout, commits it
// there as a person would, and returns the commit main is at after.
func (s *shipRig) commitOnMain(file, content, msg string) string {
	s.t.Helper()
	write(s.t, s.dir, file, content)
	s.git(s.dir, "add", file)
	s.git(s.dir, "commit", "--quiet", "-m", msg)
	return s.main()
}

// commitOnOrigin adds a commit to origin's main from another clone.
func (s *shipRig) commitOnOrigin(file, content string) string {
	other := filepath.Join(s.t.TempDir(), "other")
	s.git(s.dir, "clone", "--quiet", s.origin, other)
	require.NoError(s.t, os.WriteFile(filepath.Join(other, file), []byte(content), 0o644))
	s.git(other, "add", file)
	s.git(other, "commit", "--quiet", "-m", "from elsewhere: "+file)
	s.git(other, "push", "--quiet", "origin", "main")
	return s.git(other, "rev-parse", "HEAD")
}

// fetchMain fetches origin's main and returns the commit it is at.
func (s *shipRig) fetchMain() string {
	s.t.Helper()
	sha, err := s.repo.Fetch(s.t.Context(), "origin", "main")
	require.NoError(s.t, err)
	return sha
}

// worktree adds a worktree on a new branch orbit/T-1/r at the rig's base.
func (s *shipRig) worktree() *gitops.Repo {
	s.t.Helper()
	wt, err := s.repo.AddWorktree(s.t.Context(), filepath.Join(s.t.TempDir(), "wt"), "orbit/T-1/r", s.base)
	require.NoError(s.t, err)
	return wt
}

// taskBranch adds the worktree, writes file in it and commits everything,
// and returns the worktree and the commit.
func (s *shipRig) taskBranch(file, content, msg string) (*gitops.Repo, string) {
	s.t.Helper()
	wt := s.worktree()
	write(s.t, wt.Dir, file, content)
	sha, _, err := wt.CommitAll(s.t.Context(), msg)
	require.NoError(s.t, err)
	return wt, sha
}

func write(t *testing.T, dir, file, content string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, file)), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, file), []byte(content), 0o644))
}

func TestAddWorktreeIsFoundAgainBySecondCall(t *testing.T) {
	t.Parallel()
	s := newShipRig(t)
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "wt", "run-1")

	wt, err := s.repo.AddWorktree(ctx, path, "orbit/T-1/run-1", s.base)
	require.NoError(t, err)
	write(t, wt.Dir, "new.txt", "work in progress\n")

	again, err := s.repo.AddWorktree(ctx, path, "orbit/T-1/run-1", s.base)
	require.NoError(t, err, "a redelivered setup finds the work tree it made")
	assert.Equal(t, wt.Dir, again.Dir)
	assert.FileExists(t, filepath.Join(path, "new.txt"), "and keeps its work")
	assert.Equal(t, "orbit/T-1/run-1", s.git(path, "branch", "--show-current"))
	assert.Equal(t, "main", s.git(s.dir, "branch", "--show-current"), "the main checkout is not touched")
	list, err := s.repo.Worktrees(ctx)
	require.NoError(t, err)
	require.Len(t, list, 2)
	assert.Equal(t, "orbit/T-1/run-1", list[1].Branch)
}

func TestAddWorktreeRecoversFromACutShortAdd(t *testing.T) {
	t.Parallel()
	s := newShipRig(t)
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "run-1")
	// The branch made, then the engine died; and the directory made empty.
	s.git(s.dir, "branch", "orbit/T-1/run-1", s.base)
	require.NoError(t, os.MkdirAll(path, 0o755))

	wt, err := s.repo.AddWorktree(ctx, path, "orbit/T-1/run-1", s.base)
	require.NoError(t, err)
	assert.Equal(t, "orbit/T-1/run-1", s.git(wt.Dir, "branch", "--show-current"))
}

func TestAddWorktreeRefusesWhatItDidNotMake(t *testing.T) {
	t.Parallel()
	s := newShipRig(t)
	ctx := t.Context()

	taken := filepath.Join(t.TempDir(), "taken")
	write(t, taken, "mine.txt", "someone's\n")
	_, err := s.repo.AddWorktree(ctx, taken, "orbit/T-1/x", s.base)
	assert.ErrorIs(t, err, gitops.ErrWorktreeExists)
	assert.ErrorContains(t, err, taken)
	assert.FileExists(t, filepath.Join(taken, "mine.txt"))

	s.git(s.dir, "branch", "elsewhere", s.base)
	_, err = s.repo.AddWorktree(ctx, filepath.Join(t.TempDir(), "p"), "elsewhere", s.commitOnMain("c.txt", "charlie\n", "c"))
	assert.ErrorIs(t, err, gitops.ErrBranchExists, "a branch behind the start point is not the one it would make")
	_, err = s.repo.AddWorktree(ctx, filepath.Join(t.TempDir(), "q"), "main", s.base)
	assert.ErrorIs(t, err, gitops.ErrBranchExists, "main is checked out in the repository itself")
}

func TestFetchUpdatesTheRemoteTrackingRefOnly(t *testing.T) {
	t.Parallel()
	s := newShipRig(t)
	ctx := t.Context()
	before := s.main()
	write(t, s.dir, "a.txt", "a change of mine, not committed\n")
	moved := s.commitOnOrigin("c.txt", "charlie\n")

	sha, err := s.repo.Fetch(ctx, "origin", "main")
	require.NoError(t, err)
	assert.Equal(t, moved, sha)
	assert.Equal(t, moved, s.git(s.dir, "rev-parse", "origin/main"))
	assert.Equal(t, before, s.main(), "the local branch stays")
	assert.Equal(t, "alpha", s.git(s.dir, "show", ":a.txt"), "index untouched")
	data, _ := os.ReadFile(filepath.Join(s.dir, "a.txt"))
	assert.Equal(t, "a change of mine, not committed\n", string(data))

	_, err = s.repo.Fetch(ctx, "origin", "nope")
	assert.Error(t, err)
	_, err = s.repo.Fetch(ctx, "--upload-pack=evil", "main")
	assert.ErrorIs(t, err, gitops.ErrInvalidArgument)
}

func TestCommitAllCommitsOnceAndThenFindsNothing(t *testing.T) {
	t.Parallel()
	s := newShipRig(t)
	ctx := t.Context()
	wt := s.worktree()
	write(t, wt.Dir, "a.txt", "alpha, changed\n")
	write(t, wt.Dir, "sub/new.txt", "new\n")

	sha, committed, err := wt.CommitAll(ctx, "T-1: change a and add new\n\nOrbit-Task: T-1\n")
	require.NoError(t, err)
	assert.True(t, committed)
	assert.Equal(t, sha, s.git(wt.Dir, "rev-parse", "HEAD"))
	assert.Equal(t, "T-1: change a and add new", s.git(wt.Dir, "log", "-1", "--format=%s"))
	files, err := wt.ChangedFiles(ctx, s.base, sha)
	require.NoError(t, err)
	assert.Equal(t, []string{"a.txt", "sub/new.txt"}, files)

	again, committed, err := wt.CommitAll(ctx, "T-1: change a and add new\n")
	require.NoError(t, err)
	assert.False(t, committed, "nothing to commit: the first call's commit is found")
	assert.Equal(t, sha, again)
}

func TestRebaseOntoAMovedBase(t *testing.T) {
	t.Parallel()
	s := newShipRig(t)
	ctx := t.Context()
	wt, _ := s.taskBranch("a.txt", "alpha, mine\n", "T-1: mine")
	moved := s.commitOnOrigin("c.txt", "charlie\n")
	onto := s.fetchMain()

	head, err := wt.Rebase(ctx, onto)
	require.NoError(t, err)
	assert.Equal(t, moved, s.git(wt.Dir, "rev-parse", "HEAD^"))
	again, err := wt.Rebase(ctx, onto)
	require.NoError(t, err)
	assert.Equal(t, head, again, "a branch on its base is left as it is")
}

func TestRebaseConflictIsAbortedAndNamesTheFiles(t *testing.T) {
	t.Parallel()
	s := newShipRig(t)
	ctx := t.Context()
	wt, mine := s.taskBranch("a.txt", "alpha, mine\n", "T-1: mine")
	s.commitOnOrigin("a.txt", "alpha, theirs\n")
	onto := s.fetchMain()

	_, err := wt.Rebase(ctx, onto)
	require.ErrorIs(t, err, gitops.ErrConflict)
	assert.ErrorContains(t, err, "a.txt")
	assert.Equal(t, mine, s.git(wt.Dir, "rev-parse", "HEAD"), "the branch is where it was")
	assert.Empty(t, s.git(wt.Dir, "status", "--porcelain"), "the work tree is clean")
}

func TestMergeFastForwardIntoACheckedOutBase(t *testing.T) {
	t.Parallel()
	s := newShipRig(t)
	ctx := t.Context()
	_, head := s.taskBranch("c.txt", "charlie\n", "T-1: add c")
	write(t, s.dir, "scratch.txt", "a person's untracked notes\n")

	from, err := s.repo.MergeFastForward(ctx, "main", head, s.base)
	require.NoError(t, err)
	assert.Equal(t, s.base, from)
	assert.Equal(t, head, s.main())
	assert.FileExists(t, filepath.Join(s.dir, "c.txt"), "the checkout moved with its branch")
	assert.FileExists(t, filepath.Join(s.dir, "scratch.txt"), "untracked files are kept")

	again, err := s.repo.MergeFastForward(ctx, "main", head, "")
	require.NoError(t, err, "a second merge finds the first")
	assert.Equal(t, head, again)
}

func TestMergeFastForwardRefusesADirtyCheckoutAndAMovedBase(t *testing.T) {
	t.Parallel()
	s := newShipRig(t)
	ctx := t.Context()
	_, head := s.taskBranch("c.txt", "charlie\n", "T-1: add c")

	write(t, s.dir, "a.txt", "a person's uncommitted change\n")
	_, err := s.repo.MergeFastForward(ctx, "main", head, s.base)
	require.ErrorIs(t, err, gitops.ErrDirty)
	assert.ErrorContains(t, err, "a.txt")
	assert.ErrorContains(t, err, s.repo.Dir)
	assert.Equal(t, s.base, s.main())
	data, _ := os.ReadFile(filepath.Join(s.dir, "a.txt"))
	assert.Equal(t, "a person's uncommitted change\n", string(data), "never touched")
	s.git(s.dir, "checkout", "--quiet", "--", "a.txt")

	moved := s.commitOnMain("d.txt", "delta\n", "a person's commit")
	_, err = s.repo.MergeFastForward(ctx, "main", head, s.base)
	require.ErrorIs(t, err, gitops.ErrBranchMoved)
	assert.ErrorContains(t, err, moved[:12])
	assert.ErrorContains(t, err, s.base[:12])
	_, err = s.repo.MergeFastForward(ctx, "main", head, "")
	assert.ErrorIs(t, err, gitops.ErrNotFastForward)
	assert.Equal(t, moved, s.main())
}

func TestMergeFastForwardOfABranchCheckedOutNowhere(t *testing.T) {
	t.Parallel()
	s := newShipRig(t)
	ctx := t.Context()
	s.git(s.dir, "switch", "--quiet", "-c", "elsewhere")
	write(t, s.dir, "a.txt", "uncommitted on another branch\n")
	_, head := s.taskBranch("c.txt", "charlie\n", "T-1: add c")

	_, err := s.repo.MergeFastForward(ctx, "main", head, s.base)
	require.NoError(t, err)
	assert.Equal(t, head, s.main())
	assert.Equal(t, "elsewhere", s.git(s.dir, "branch", "--show-current"))
	data, _ := os.ReadFile(filepath.Join(s.dir, "a.txt"))
	assert.Equal(t, "uncommitted on another branch\n", string(data))
}

func TestPushLeaseIsExact(t *testing.T) {
	t.Parallel()
	s := newShipRig(t)
	ctx := t.Context()
	mine := s.commitOnMain("c.txt", "charlie\n", "c")

	require.NoError(t, s.repo.PushLease(ctx, "origin", mine, "main", s.base))
	assert.Equal(t, mine, s.git(s.origin, "rev-parse", "main"))

	theirs := s.commitOnOrigin("d.txt", "delta\n")
	err := s.repo.PushLease(ctx, "origin", mine, "main", s.base)
	require.ErrorIs(t, err, gitops.ErrBranchMoved)
	assert.ErrorContains(t, err, theirs[:12])
	assert.Equal(t, theirs, s.git(s.origin, "rev-parse", "main"), "nothing overwritten")

	require.NoError(t, s.repo.PushLease(ctx, "origin", s.base, "orbit/new", ""), "a new branch: expected not to exist")
	require.NoError(t, s.repo.PushLease(ctx, "origin", s.base, "orbit/new", ""), "pushing what is there already changes nothing")
	err = s.repo.PushLease(ctx, "origin", mine, "orbit/new", "")
	assert.ErrorIs(t, err, gitops.ErrBranchMoved, "it exists now")
	sha, ok, err := s.repo.RemoteBranch(ctx, "origin", "orbit/new")
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, s.base, sha)
}

func TestRemoveWorktreeKeepsTheBranchAndRefusesChanges(t *testing.T) {
	t.Parallel()
	s := newShipRig(t)
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "wt")
	wt, err := s.repo.AddWorktree(ctx, path, "orbit/T-1/r", s.base)
	require.NoError(t, err)
	write(t, wt.Dir, "new.txt", "unsaved work\n")

	err = s.repo.RemoveWorktree(ctx, path, false)
	require.ErrorIs(t, err, gitops.ErrDirty)
	assert.ErrorContains(t, err, "new.txt")
	require.NoError(t, os.Remove(filepath.Join(path, "new.txt")))
	require.NoError(t, s.repo.RemoveWorktree(ctx, path, false))
	assert.NoDirExists(t, path)
	assert.Equal(t, s.base, s.git(s.dir, "rev-parse", "orbit/T-1/r"), "the branch stays")
	require.NoError(t, s.repo.RemoveWorktree(ctx, path, false), "a removed work tree is removed")
	err = s.repo.RemoveWorktree(ctx, s.repo.Dir, true)
	assert.ErrorIs(t, err, gitops.ErrInvalidArgument)
}
